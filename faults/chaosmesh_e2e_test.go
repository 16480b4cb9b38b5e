package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/kindtest"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2EChaosMesh injects and removes every fault kind through Chaos Mesh in a real
// kind cluster of the offline node image, Chaos Mesh installed offline by the kind back end
// (make chaosmesh), and checks each one's effect on real pods: Valkey servers and clients
// from the image assembled from this machine's programs. Delay and loss need netem; where
// the kernel lacks it, they must be refused, naming why.
func TestE2EChaosMesh(t *testing.T) {
	testenv.SkipShort(t)
	ctx := context.Background()
	kindtest.NeedLane(t, true)
	img, err := kind.ValkeyImage(testImage)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := kind.Provider{Options: kind.Options{Images: []kind.Image{img}, ChaosMesh: true, Log: log}}.Create(ctx, "gauntlet-faults-e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background()); err != nil {
			t.Errorf("delete kind cluster: %v", err)
		}
	})

	inj, err := For(ctx, c, WithChaosMeshLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := inj.(*ChaosMesh)
	if !ok {
		t.Fatalf("For(kind cluster) = %T, want *ChaosMesh", inj)
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "faults-e2e"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.RemoveAll(context.Background(), ns); err != nil {
			t.Errorf("RemoveAll: %v", err)
		}
	})
	for name, cmd := range map[string][]string{
		"server": {"valkey-server", "--port", "8080", "--protected-mode", "no", "--save", ""},
		"client": {"sleep", "1000000"},
		"peer":   {"sleep", "1000000"},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr(int64(1)),
				Containers:                    []corev1.Container{{Name: "main", Image: testImage, ImagePullPolicy: corev1.PullNever, Command: cmd}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"server", "client", "peer"} {
		waitPod(t, cs, ns, name, "Ready", func(p *corev1.Pod) bool { return podReady(p) })
	}
	server, err := cs.CoreV1().Pods(ns).Get(ctx, "server", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	serverAddr := "-h " + server.Status.PodIP + " -p 8080"
	// valkey-cli connects within 3 s or says it could not (to the API server it connects,
	// then gets no Valkey answer: connected all the same).
	reach := func(addr string) bool {
		out, errOut, _ := execIn(c.RESTConfig(), cs, ns, "client", "valkey-cli -t 3 "+addr+" ping 2>&1")
		return !strings.Contains(out+errOut, "Could not connect")
	}
	apiAddr := "-h $KUBERNETES_SERVICE_HOST -p $KUBERNETES_SERVICE_PORT"
	if !reach(serverAddr) || !reach(apiAddr) {
		t.Fatal("client cannot reach the server or the API server before any fault")
	}

	run := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow() // later faults assume the earlier ones were removed
		}
	}
	// cutOff checks that s, a partition or a loss, keeps the client from the
	// server while it holds, and no longer once removed.
	cutOff := func(t *testing.T, s Spec) {
		inject(t, m, s)
		if reach(serverAddr) {
			t.Errorf("client reaches the server through the %s", s.Kind)
		}
		remove(t, m, s)
		if !reach(serverAddr) {
			t.Errorf("client cannot reach the server after the %s is removed", s.Kind)
		}
	}
	run("partition", func(t *testing.T) {
		cutOff(t, Spec{Kind: Partition, Name: "split", Namespace: ns, Pods: []string{"client"}, Peers: []string{"server"}})
	})
	run("apiserver-partition", func(t *testing.T) {
		s := Spec{Kind: APIServerPartition, Name: "cut", Namespace: ns, Pods: []string{"client"}}
		inject(t, m, s)
		if reach(apiAddr) {
			t.Error("client reaches the API server through an apiserver-partition")
		}
		if !reach(serverAddr) {
			t.Error("an apiserver-partition cut the client off from the server too")
		}
		remove(t, m, s)
		if !reach(apiAddr) {
			t.Error("client cannot reach the API server after the partition is removed")
		}
	})
	if !Supports(m, Loss) {
		// This kernel has no netem (kind's nodes share it): both are refused, naming why.
		for _, s := range []Spec{
			{Kind: Loss, Name: "lossy", Namespace: ns, Pods: []string{"client"}, Peers: []string{"server"}, LossPercent: 100},
			{Kind: Delay, Name: "slow", Namespace: ns, Pods: []string{"client"}, Latency: time.Second},
		} {
			if err := m.Inject(ctx, s); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "netem") {
				t.Errorf("Inject %s without netem = %v, want ErrUnsupported naming netem", s.Kind, err)
			}
		}
	}
	if Supports(m, Loss) { // else refused above
		run("loss", func(t *testing.T) {
			cutOff(t, Spec{Kind: Loss, Name: "lossy", Namespace: ns, Pods: []string{"client"}, Peers: []string{"server"}, LossPercent: 100})
		})
		run("delay", func(t *testing.T) {
			timed := func() time.Duration {
				start := time.Now()
				if !reach(serverAddr) {
					t.Fatal("client cannot reach the server")
				}
				return time.Since(start)
			}
			base := timed()
			s := Spec{Kind: Delay, Name: "slow", Namespace: ns, Pods: []string{"client"}, Latency: time.Second}
			inject(t, m, s)
			if d := timed(); d < base+900*time.Millisecond {
				t.Errorf("connecting took %v with a 1s delay, %v without", d, base)
			}
			remove(t, m, s)
		})
	}
	run("container-crash", func(t *testing.T) {
		before := restarts(t, cs, ns, "server")
		inject(t, m, Spec{Kind: ContainerCrash, Name: "crash", Namespace: ns, Pods: []string{"server"}})
		waitPod(t, cs, ns, "server", "restarted", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount > before
		})
		waitPod(t, cs, ns, "server", "Ready again", podReady)
	})
	run("pod-failure", func(t *testing.T) {
		s := Spec{Kind: PodFailure, Name: "fail", Namespace: ns, Pods: []string{"peer"}, Container: "main"}
		inject(t, m, s)
		waitPod(t, cs, ns, "peer", "running Chaos Mesh's pause image", func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image != testImage })
		remove(t, m, s)
		waitPod(t, cs, ns, "peer", "back on its image and Ready", func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Image == testImage && podReady(p)
		})
	})
	run("pod-kill", func(t *testing.T) {
		old, err := cs.CoreV1().Pods(ns).Get(ctx, "peer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inject(t, m, Spec{Kind: PodKill, Name: "kill", Namespace: ns, Pods: []string{"peer"}, Grace: ptr(int64(0))})
		err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "peer", metav1.GetOptions{})
			return apierrors.IsNotFound(err) || (err == nil && p.UID != old.UID), nil
		})
		if err != nil {
			t.Errorf("pod peer still there after pod-kill: %v", err)
		}
		if err := m.Remove(ctx, Spec{Kind: PodKill, Name: "kill", Namespace: ns}); err != nil {
			t.Errorf("Remove of a one-shot fault: %v", err)
		}
	})
}

// testImage is the image of the test's pods, assembled offline (kind.ValkeyImage).
const testImage = "gauntlet.dev/faults-e2e:valkey"

func inject(t *testing.T, m *ChaosMesh, s Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := m.Inject(ctx, s); err != nil {
		t.Fatalf("Inject %s: %v", Describe(s), err)
	}
}

func remove(t *testing.T, m *ChaosMesh, s Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := m.Remove(ctx, s); err != nil {
		t.Fatalf("Remove %s: %v", Describe(s), err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(t *testing.T, cs kubernetes.Interface, ns, name string) int32 {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s/%s has no container status", ns, name)
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

func waitPod(t *testing.T, cs kubernetes.Interface, ns, name, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return ok(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never %s: %v (last status %+v)", ns, name, what, err, last)
	}
}

// execIn runs a shell command in the pod's first container.
func execIn(cfg *rest.Config, cs kubernetes.Interface, ns, pod, script string) (string, string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"sh", "-c", script}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}
