package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/controlplane"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/coredns"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/incluster"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeykit"
)

// Environment variables that turn the test binary into a helper process.
const (
	envInCluster = "GAUNTLET_E2E_INCLUSTER" // run as a pod: list pods with in-cluster config
	envOwner     = "GAUNTLET_E2E_OWNER"     // own a cluster of this name until killed
	envRoot      = "GAUNTLET_E2E_ROOT"
)

var shared struct {
	c    *Cluster
	root string
	err  error
}

func TestMain(m *testing.M) {
	if Init() {
		return
	}
	if os.Getenv(envResolve) != "" { // before envInCluster: the image's rule sets both
		os.Exit(resolveMain())
	}
	if os.Getenv(envInCluster) != "" {
		os.Exit(incluster.ListPods(os.Stdout))
	}
	if name := os.Getenv(envOwner); name != "" {
		os.Exit(ownerMain(name, os.Getenv(envRoot)))
	}
	RouteKlog(testLogger().Handler())
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Delete(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "delete shared cluster:", err)
			code = 1
		}
	}
	if shared.root != "" {
		// Collect whatever a failed test left (its owner is this process, about to exit:
		// GC only takes clusters whose owner is gone, so delete leftovers explicitly).
		if infos, _ := List(shared.root); len(infos) > 0 {
			for _, i := range infos {
				if err := purge(context.Background(), i); err != nil {
					fmt.Fprintln(os.Stderr, "purge leftover cluster:", i.Name, err)
					code = 1
				}
			}
		}
		if infos, _ := List(shared.root); len(infos) == 0 {
			os.RemoveAll(shared.root)
		} else {
			fmt.Fprintln(os.Stderr, "clusters left under", shared.root, "- run: gauntlet cluster gc --state-dir", shared.root)
		}
	}
	os.Exit(code)
}

// ownerMain creates a cluster and blocks: the test SIGKILLs it to exercise GC.
func ownerMain(name, root string) int {
	c, err := Create(context.Background(), Options{Name: name, StateRoot: root, Nodes: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 1
	}
	fmt.Println("READY", c.Kubeconfig())
	select {}
}

func skipUnlessE2E(t *testing.T) {
	t.Helper()
	testenv.SkipShort(t)
	testenv.NeedRoot(t)
	if _, err := controlplane.FindBinaries(context.Background()); errors.Is(err, controlplane.ErrBinaryMissing) {
		testenv.Unavailable(t, "control plane not built (run `make controlplane`): %v", err)
	}
	if _, err := coredns.FindBinary(context.Background()); errors.Is(err, coredns.ErrBinaryMissing) {
		testenv.Unavailable(t, "CoreDNS not built (run `make coredns`): %v", err)
	}
}

// cluster returns the cluster shared by the tests in this file, creating it once.
func cluster(t *testing.T) *Cluster {
	t.Helper()
	skipUnlessE2E(t)
	if shared.c == nil && shared.err == nil {
		root, err := os.MkdirTemp("", "gauntlet-e2e-")
		if err != nil {
			t.Fatal(err)
		}
		shared.root = root
		exe, _ := os.Executable()
		mapping := filepath.Join(root, "mapping.yaml")
		m := fmt.Sprintf("rules:\n- name: in-cluster-test\n  images: [\"gauntlet-test/incluster:*\"]\n  entrypoint: [%q]\n  env: {%s: \"1\"}\n", exe, envInCluster)
		if err := os.WriteFile(mapping, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.c, shared.err = Create(ctx, Options{Name: "e2e-a", StateRoot: root, MappingFile: mapping, Log: testLogger()})
		if shared.err == nil {
			t.Logf("shared cluster up: %v", shared.c.Timings())
		}
	}
	if shared.err != nil {
		t.Fatalf("create shared cluster: %v", shared.err)
	}
	return shared.c
}

func testLogger() *slog.Logger {
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func namespace(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Pods are admitted only once the controller-manager has made the default ServiceAccount.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Client().CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s: default ServiceAccount never appeared", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitPod(t *testing.T, c *Cluster, ns, name string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		p, err := c.Client().CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("pod %s/%s: condition not met after %v; phase %s, status %+v", ns, name, timeout, last.Status.Phase, last.Status)
	}
	t.Fatalf("pod %s/%s never appeared", ns, name)
	return nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Test 1: a StatefulSet of 3 Valkey pods with volumes; data survives deleting pod-0.
func TestE2EStatefulSetPersistence(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	ns := namespace(t, c, "persist")
	if err := valkeykit.CreateValkey(ctx, c.Client(), ns, "valkey", 3); err != nil {
		t.Fatal(err)
	}
	pods, err := valkeykit.WaitReady(ctx, c.Client(), ns, "valkey", 3, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ip0 := pods[0].Status.PodIP
	if err := valkeykit.Do(ctx, ip0, "SET", "durable", "yes"); err != nil {
		t.Fatal(err)
	}
	pvc, err := c.Client().CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-valkey-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldUID := pods[0].UID
	if err := c.DeletePod(ctx, PodRef{Namespace: ns, Name: "valkey-0"}, nil); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, ns, "valkey-0", 2*time.Minute, func(p *corev1.Pod) bool { return p.UID != oldUID && ready(p) })
	got, err := valkeykit.Get(ctx, p.Status.PodIP, "GET", "durable")
	if err != nil || got != "yes" {
		t.Fatalf("after re-creating valkey-0: GET durable = %q, %v; want \"yes\"", got, err)
	}
	pvc2, err := c.Client().CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-valkey-0", metav1.GetOptions{})
	if err != nil || pvc2.UID != pvc.UID {
		t.Fatalf("PVC changed: %v", err)
	}
}

// Test 2: REPLICAOF between pods replicates over pod IPs.
func TestE2EReplicationAcrossPods(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	ns := namespace(t, c, "repl")
	if err := valkeykit.CreateValkey(ctx, c.Client(), ns, "valkey", 2); err != nil {
		t.Fatal(err)
	}
	pods, err := valkeykit.WaitReady(ctx, c.Client(), ns, "valkey", 2, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if pods[0].Status.PodIP == pods[1].Status.PodIP {
		t.Fatalf("two pods share IP %s", pods[0].Status.PodIP)
	}
	if err := valkeykit.Do(ctx, pods[1].Status.PodIP, "REPLICAOF", pods[0].Status.PodIP, "6379"); err != nil {
		t.Fatal(err)
	}
	if err := valkeykit.Do(ctx, pods[0].Status.PodIP, "SET", "replicated", "across-pods"); err != nil {
		t.Fatal(err)
	}
	got, err := valkeykit.WaitValue(ctx, pods[1].Status.PodIP, "replicated", 30*time.Second)
	if err != nil || got != "across-pods" {
		t.Fatalf("replica GET = %q, %v", got, err)
	}
	role, err := valkeykit.Get(ctx, pods[1].Status.PodIP, "ROLE")
	if err != nil || (role != "slave" && role != "replica") {
		t.Fatalf("ROLE on pod-1 = %q, %v; want slave/replica", role, err)
	}
}

func shellPod(ns, name, script string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr[int64](1),
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", script},
			}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func createPod(t *testing.T, c *Cluster, p *corev1.Pod) {
	t.Helper()
	if _, err := c.Client().CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func execPod(c *Cluster, ns, pod, container string, cmd ...string) (string, string, error) {
	req := c.Client().CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.RESTConfig(), "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}

func podLogs(t *testing.T, c *Cluster, ns, pod string) string {
	t.Helper()
	b, err := c.Client().CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs %s/%s: %v", ns, pod, err)
	}
	return string(b)
}

// Test 3: logs and exec (through the API server, as kubectl does; and with kubectl
// itself when installed); a pod with an unmapped image is simulated.
func TestE2ELogsExecSimulated(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	ns := namespace(t, c, "logs")
	createPod(t, c, shellPod(ns, "talker", "echo hello-from-log; echo to-stderr >&2; exec sleep 3600", nil))
	waitPod(t, c, ns, "talker", time.Minute, ready)
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs := podLogs(t, c, ns, "talker")
		if strings.Contains(logs, "hello-from-log") && strings.Contains(logs, "to-stderr") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs = %q, want both lines", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _, err := execPod(c, ns, "talker", "main", "sh", "-c", "echo exec-works; hostname")
	if err != nil || !strings.Contains(out, "exec-works") || !strings.Contains(out, "talker") {
		t.Fatalf("exec: out=%q err=%v; want exec-works and the pod's hostname", out, err)
	}
	_, _, err = execPod(c, ns, "talker", "main", "sh", "-c", "exit 3")
	var exitErr interface{ ExitStatus() int }
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Fatalf("exec exit code: err=%v, want exit status 3", err)
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig(), "-n", ns, "logs", "talker").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "hello-from-log") {
			t.Errorf("kubectl logs: %v: %s", err, out)
		}
		out, err = exec.Command(kubectl, "--kubeconfig", c.Kubeconfig(), "-n", ns, "exec", "talker", "--", "echo", "kubectl-exec").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "kubectl-exec") {
			t.Errorf("kubectl exec: %v: %s", err, out)
		}
	}
	sim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "oliver006/redis_exporter:v1.67.0"}}},
	}
	if _, err := c.Client().CoreV1().Pods(ns).Create(ctx, sim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, ns, "ghost", time.Minute, ready)
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("simulated pod phase %s", p.Status.Phase)
	}
	if !strings.Contains(strings.ToLower(fmt.Sprint(p.Status)), "simulated") {
		t.Errorf("simulated pod's status does not say so: %+v", p.Status)
	}
}

// Test 4: a pod lists pods through in-cluster config (its service-account token,
// the CA, and the kubernetes Service's ClusterIP).
func TestE2EInClusterConfig(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	ns := namespace(t, c, "incluster")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}}
	if _, err := c.Client().RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client().RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "lister", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "app", Image: "gauntlet-test/incluster:1"}},
		},
	}
	createPod(t, c, pod)
	p := waitPod(t, c, ns, "lister", 2*time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs := podLogs(t, c, ns, "lister")
	if p.Status.Phase != corev1.PodSucceeded || !strings.Contains(logs, "in-cluster: listed 1 pods") {
		t.Fatalf("in-cluster pod %s; logs:\n%s", p.Status.Phase, logs)
	}
}

// Test 5: a failing liveness probe restarts the container and counts the restart.
func TestE2ELivenessRestart(t *testing.T) {
	c := cluster(t)
	ns := namespace(t, c, "probes")
	createPod(t, c, shellPod(ns, "sickly", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
			InitialDelaySeconds: 1,
			PeriodSeconds:       1,
			FailureThreshold:    1,
		}
	}))
	p := waitPod(t, c, ns, "sickly", 90*time.Second, func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	cs := p.Status.ContainerStatuses[0]
	if cs.LastTerminationState.Terminated == nil {
		t.Errorf("restarted container has no last termination state: %+v", cs)
	}
	// A healthy pod next to it is not restarted.
	createPod(t, c, shellPod(ns, "healthy", "touch /tmp/healthy; exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
			InitialDelaySeconds: 1,
			PeriodSeconds:       1,
			FailureThreshold:    1,
		}
	}))
	waitPod(t, c, ns, "healthy", time.Minute, ready)
	time.Sleep(4 * time.Second)
	h, err := c.Client().CoreV1().Pods(ns).Get(context.Background(), "healthy", metav1.GetOptions{})
	if err != nil || h.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("healthy pod restarted: %v %+v", err, h.Status.ContainerStatuses)
	}
}

// tcpOpen reports whether pod `from` can open a TCP connection to addr (via exec).
func tcpOpen(c *Cluster, ns, from, addr string) bool {
	host, port, _ := net.SplitHostPort(addr)
	script := fmt.Sprintf("timeout 2 sh -c 'exec 3<>/dev/tcp/%s/%s' 2>/dev/null || timeout 2 bash -c 'exec 3<>/dev/tcp/%s/%s'", host, port, host, port)
	_, _, err := execPod(c, ns, from, "valkey", "bash", "-c", script)
	return err == nil
}

// Test 6: partition blocks pod-to-pod traffic and heal restores it; crash and pause work.
func TestE2EFaults(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	ns := namespace(t, c, "faults")
	if err := valkeykit.CreateValkey(ctx, c.Client(), ns, "valkey", 2); err != nil {
		t.Fatal(err)
	}
	pods, err := valkeykit.WaitReady(ctx, c.Client(), ns, "valkey", 2, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, b := PodRef{Namespace: ns, Name: "valkey-0"}, PodRef{Namespace: ns, Name: "valkey-1"}
	target := net.JoinHostPort(pods[1].Status.PodIP, "6379")
	if !tcpOpen(c, ns, "valkey-0", target) {
		t.Fatal("valkey-0 cannot reach valkey-1 before any fault")
	}
	if err := c.Partition(ctx, "p1", []PodRef{a}, []PodRef{b}); err != nil {
		t.Fatal(err)
	}
	if tcpOpen(c, ns, "valkey-0", target) {
		t.Fatal("valkey-0 reaches valkey-1 through a partition")
	}
	if err := c.Heal(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if !tcpOpen(c, ns, "valkey-0", target) {
		t.Fatal("valkey-0 cannot reach valkey-1 after heal")
	}

	// Cut valkey-0 off from the API server: direct and ClusterIP access fail, the
	// kubelet's tcp readiness probe (from the host) keeps passing.
	api := net.JoinHostPort(c.net.Gateway().String(), strconv.Itoa(c.apiPort))
	if !tcpOpen(c, ns, "valkey-0", api) || !tcpOpen(c, ns, "valkey-0", "10.96.0.1:443") {
		t.Fatal("valkey-0 cannot reach the API server before any fault")
	}
	if err := c.PartitionFromAPIServer(ctx, "api", []PodRef{a}); err != nil {
		t.Fatal(err)
	}
	if tcpOpen(c, ns, "valkey-0", api) || tcpOpen(c, ns, "valkey-0", "10.96.0.1:443") {
		t.Fatal("valkey-0 reaches the API server through a partition")
	}
	time.Sleep(3 * time.Second) // three readiness periods
	if p, err := c.Client().CoreV1().Pods(ns).Get(ctx, "valkey-0", metav1.GetOptions{}); err != nil || !ready(p) {
		t.Fatalf("valkey-0 lost readiness while only the API server was cut off: %v", err)
	}
	if err := c.Heal(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if !tcpOpen(c, ns, "valkey-0", api) {
		t.Fatal("valkey-0 cannot reach the API server after heal")
	}

	// Pause: the server stops answering; resume: it answers again.
	if err := c.PauseContainer(ctx, b, "valkey"); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	err = valkeykit.Do(pctx, pods[1].Status.PodIP, "PING")
	cancel()
	if err == nil {
		t.Fatal("paused server answered PING")
	}
	if err := c.ResumeContainer(ctx, b, "valkey"); err != nil {
		t.Fatal(err)
	}
	if err := valkeykit.Do(ctx, pods[1].Status.PodIP, "PING"); err != nil {
		t.Fatalf("PING after resume: %v", err)
	}

	// Crash: the container restarts (restartPolicy Always) and serves again.
	before := pods[1].Status.ContainerStatuses[0].RestartCount
	if err := c.CrashContainer(ctx, b, "valkey"); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, ns, "valkey-1", time.Minute, func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount > before && ready(p)
	})
	if err := valkeykit.Do(ctx, p.Status.PodIP, "PING"); err != nil {
		t.Fatalf("PING after crash restart: %v", err)
	}
	if err := c.Delay(ctx, []PodRef{a}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Delay: err = %v, want ErrUnsupported", err)
	}
}

// leftovers lists what a cluster left on the host: processes from its records,
// its bridge, mounts under its folder, and the folder itself.
func leftovers(t *testing.T, info Info, records string) []string {
	t.Helper()
	var out []string
	entries, _ := os.ReadDir(records)
	for _, e := range entries {
		if pid, alive, _ := pidfile.Alive(filepath.Join(records, e.Name())); alive && pid != os.Getpid() {
			out = append(out, fmt.Sprintf("process %d (%s)", pid, e.Name()))
		}
	}
	if info.Bridge != "" {
		if _, err := net.InterfaceByName(info.Bridge); err == nil {
			out = append(out, "bridge "+info.Bridge)
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], info.Dir) {
			out = append(out, "mount "+f[4])
		}
	}
	if _, err := os.Stat(info.Dir); err == nil {
		out = append(out, "folder "+info.Dir)
	}
	return out
}

// snapshotRecords copies a cluster's PID records so they can be checked after it is gone.
func snapshotRecords(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, pidfile.Suffix) || strings.HasSuffix(p, ".record")) {
			b, _ := os.ReadFile(p)
			n++
			_ = os.WriteFile(filepath.Join(dst, fmt.Sprintf("%03d-%s", n, filepath.Base(p))), b, 0o644)
		}
		return nil
	})
	if n == 0 {
		t.Fatalf("no process records under %s", dir)
	}
	return dst
}

// Test 7: two clusters at once; both come down clean; gc cleans a cluster whose owner was SIGKILLed.
func TestE2ETwoClustersAndGC(t *testing.T) {
	a := cluster(t)
	ctx := context.Background()
	b, err := Create(ctx, Options{Name: "e2e-b", StateRoot: shared.root, Nodes: 2, Log: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Delete(context.Background()) })
	ia, ib := a.Info(), b.Info()
	if ia.PodCIDR == ib.PodCIDR || ia.Bridge == ib.Bridge || ia.Server == ib.Server {
		t.Fatalf("clusters share resources: %+v vs %+v", ia, ib)
	}
	infos, err := List(shared.root)
	if err != nil || len(infos) < 2 {
		t.Fatalf("List = %v, %v; want both clusters", infos, err)
	}
	// Both serve at once: a pod on b while a keeps running.
	nsb := namespace(t, b, "b")
	createPod(t, b, shellPod(nsb, "alive", "exec sleep 3600", nil))
	waitPod(t, b, nsb, "alive", time.Minute, ready)
	recs := snapshotRecords(t, ib.Dir)
	requireDNSRecord(t, recs)
	if err := b.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, ib, recs); len(l) > 0 {
		t.Fatalf("cluster b left behind: %v", l)
	}

	// A cluster whose owner is SIGKILLed is collected by GC.
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envOwner+"=e2e-gc", envRoot+"="+shared.root)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = GC(context.Background(), shared.root)
	})
	buf := make([]byte, 4096)
	n, _ := io.ReadAtLeast(stdout, buf, 5)
	if !strings.HasPrefix(string(buf[:n]), "READY") {
		_ = cmd.Process.Kill()
		t.Fatalf("owner process did not come up: %q", buf[:n])
	}
	gcDir := filepath.Join(clustersDir(shared.root), "e2e-gc")
	info, err := readInfo(gcDir)
	if err != nil {
		t.Fatal(err)
	}
	// A pod with a real process, so GC has a container to kill.
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	gcClient := kubernetes.NewForConfigOrDie(cfg)
	if _, err := gcClient.CoreV1().Pods("default").Create(ctx, shellPod("default", "orphan", "exec sleep 3600", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := gcClient.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
		if err == nil && ready(p) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("orphan pod never became ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	recs = snapshotRecords(t, gcDir)
	requireDNSRecord(t, recs)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// Before any GC: no control-plane, DNS or container process outlives its
	// SIGKILLed owner (parent-death signals). Mounts and links are kernel
	// state, left for GC below.
	var alive []string
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		alive = alive[:0]
		for _, l := range leftovers(t, info, recs) {
			if strings.HasPrefix(l, "process ") {
				alive = append(alive, l)
			}
		}
		if len(alive) == 0 || time.Now().After(wait) {
			break
		}
	}
	if len(alive) > 0 {
		t.Errorf("processes outlived their SIGKILLed owner (no GC yet): %v", alive)
	}
	// A new cluster of the same name, under another state root (a later test
	// run's temporary one), finds the dead owner's bridge and collects the
	// abandoned cluster first: GC of the home root reaches shared.root through
	// the registry Create keeps there.
	again, err := Create(ctx, Options{Name: "e2e-gc", StateRoot: t.TempDir(), Nodes: 1, Log: testLogger()})
	if err != nil {
		t.Fatalf("Create over a killed owner's cluster of the same name: %v", err)
	}
	if _, err := os.Stat(gcDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the abandoned cluster's folder %s is still there (stat: %v)", gcDir, err)
	}
	if err := again.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, info, recs); len(l) > 0 {
		t.Fatalf("GC left behind: %v", l)
	}
	if removed, err := GC(ctx, shared.root); err != nil || len(removed) != 0 {
		t.Fatalf("GC after the collection removed %v (%v), want nothing (the running shared cluster must stay)", removed, err)
	}
	// The shared cluster is untouched.
	if _, err := a.Client().CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("shared cluster broken by GC: %v", err)
	}

	// A bridge no recorded cluster owns (its state folder was removed) does not
	// block a new cluster of that name.
	sum := sha256.Sum256([]byte("e2e-orphan"))
	orphan := "gt" + hex.EncodeToString(sum[:])[:7]
	if out, err := exec.Command("ip", "link", "add", "name", orphan, "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("ip link add %s: %v: %s", orphan, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", orphan).Run() })
	fresh, err := Create(ctx, Options{Name: "e2e-orphan", StateRoot: t.TempDir(), Nodes: 1, Log: testLogger()})
	if err != nil {
		t.Fatalf("Create over an orphaned bridge: %v", err)
	}
	if err := fresh.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// Bad input gets one clear error naming the cause and the fix.
func TestE2EBadInput(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()

	t.Run("port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		_, err = Create(ctx, Options{Name: "e2e-port", StateRoot: shared.root, APIServerPort: port})
		if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
			t.Fatalf("err = %v, want a port-in-use error naming %d", err, port)
		}
		if _, statErr := os.Stat(filepath.Join(clustersDir(shared.root), "e2e-port")); statErr == nil {
			t.Fatal("a failed Create left its folder behind")
		}
	})
	t.Run("malformed mapping file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(bad, []byte("rules:\n- images: [\"x:*\"]\n  entrypiont: [/bin/true]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Create(ctx, Options{Name: "e2e-map", StateRoot: shared.root, MappingFile: bad})
		if err == nil || !strings.Contains(err.Error(), "entrypiont") || !strings.Contains(err.Error(), bad) {
			t.Fatalf("err = %v, want an error naming the unknown field and the file", err)
		}
	})
	t.Run("bad name", func(t *testing.T) {
		_, err := Create(ctx, Options{Name: "Not_A_Name", StateRoot: shared.root})
		if !errors.Is(err, ErrBadName) {
			t.Fatalf("err = %v, want ErrBadName", err)
		}
	})
	t.Run("same name twice", func(t *testing.T) {
		_, err := Create(ctx, Options{Name: c.Name(), StateRoot: shared.root})
		if !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
	})
	t.Run("not root", func(t *testing.T) {
		// The test binary sits in Go's private build folder: copy it where nobody can run it.
		self, _ := os.Executable()
		b, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := os.MkdirTemp("", "gauntlet-notroot-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		exe := filepath.Join(dir, "e2e.test")
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A process forked elsewhere in this test binary between the write and
		// its close-on-exec can hold the new file open for writing: exec then
		// fails with ETXTBSY (golang/go#22315). Try again briefly.
		var out []byte
		for try := 0; ; try++ {
			cmd := exec.Command(exe, "-test.run=^TestNotRootHelper$")
			cmd.Env = append(os.Environ(), "GAUNTLET_E2E_NOTROOT=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err = cmd.CombinedOutput()
			if !errors.Is(err, syscall.ETXTBSY) || try == 20 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(string(out), ErrNotRoot.Error()) {
			t.Fatalf("as uid 65534: %s (%v); want %q", out, err, ErrNotRoot)
		}
	})
	t.Run("image the mapping cannot satisfy", func(t *testing.T) {
		ns := namespace(t, c, "badimage")
		// The in-cluster test rule exists; an image mapped to a missing program must say so.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "busybox:1.36", Command: []string{"/opt/definitely-not-installed/server"},
			}}},
		}
		createPod(t, c, pod)
		p := waitPod(t, c, ns, "missing", time.Minute, func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && ((cs[0].State.Waiting != nil && cs[0].State.Waiting.Message != "") ||
				(cs[0].State.Terminated != nil && cs[0].State.Terminated.Message != "") ||
				(cs[0].LastTerminationState.Terminated != nil && cs[0].LastTerminationState.Terminated.Message != ""))
		})
		msg := fmt.Sprint(p.Status.ContainerStatuses[0])
		if !strings.Contains(msg, "/opt/definitely-not-installed/server") {
			t.Fatalf("status does not name the missing program: %s", msg)
		}
	})
}

// TestNotRootHelper runs in a child process as an unprivileged user.
func TestNotRootHelper(t *testing.T) {
	if os.Getenv("GAUNTLET_E2E_NOTROOT") == "" {
		testenv.Skip(t, testenv.Helper, "entry point of TestE2EBadInput's child process")
	}
	_, err := Create(context.Background(), Options{Name: "e2e-nr", StateRoot: "/nonexistent-gauntlet-root"})
	fmt.Println(err)
}
