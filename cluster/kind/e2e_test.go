package kind

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/internal/e2ekit"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestE2EKindCluster creates a kind cluster from the offline node image (built, or found
// up to date) through Provider, with the bundled operator's image (from its built binary)
// and the Valkey image assembled offline and loaded into the node; deploys the bundled
// target's manifests; and requires a ValkeyCluster of 3 replicas Ready, its pods reached
// from this host through the cluster's route. Then it deletes the cluster and checks that
// the route and the record are gone.
func TestE2EKindCluster(t *testing.T) {
	testenv.SkipShort(t)
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		if !errors.Is(err, ErrNoEngine) {
			t.Fatalf("Available returned %v, which is not ErrNoEngine", err)
		}
		testenv.Skip(t, testenv.Kind, "no container engine on this machine, kind cannot run: %v", err)
	}
	testenv.NeedRoot(t)
	res, err := nodeimage.Build(ctx, nodeimage.Options{Progress: e2ekit.Writer{T: t}})
	if err != nil {
		if strings.Contains(err.Error(), "is missing: run `make") || strings.Contains(err.Error(), "no CoreDNS build") {
			testenv.Skip(t, testenv.Kind, "the offline node image cannot be built, its inputs are not (make kind-binaries controlplane kind-coredns): %v", err)
		}
		t.Fatalf("node image: %v", err)
	}
	t.Logf("node image %s (cached: %v, %s)", res.Image, res.Cached, res.Took.Round(time.Millisecond))

	repo, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	target, err := targets.Valkey(repo)
	if err != nil {
		t.Fatal(err)
	}
	bin := operatorBinary(t, repo)
	images, err := BundledValkeyImages(target.Operator.Image, bin)
	if err != nil {
		t.Fatal(err)
	}

	const name = "gauntlet-kind-e2e"
	start := time.Now()
	c, err := Provider{Options: Options{Images: images, WaitForReady: 4 * time.Minute, Log: slog.New(slog.NewTextHandler(e2ekit.Writer{T: t}, nil))}}.Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	kc := c.(*Cluster)
	t.Logf("cluster %s created with images loaded and routed in %s (pod subnet %s via %s)", name, created.Round(time.Millisecond), kc.rec.PodSubnet, kc.rec.NodeIP)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = c.Delete(context.Background())
		}
	})
	node := name + "-control-plane"
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())

	// The bundled target's deploy manifests, applied with the node's kubectl (server side).
	for _, step := range target.Deploy {
		objs, err := targets.Render(step)
		if err != nil {
			t.Fatal(err)
		}
		// Namespaces and CRDs first, as the campaign applies them.
		var first, rest bytes.Buffer
		for _, o := range objs {
			b, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			doc := &rest
			if o["kind"] == "Namespace" || o["kind"] == "CustomResourceDefinition" {
				doc = &first
			}
			doc.WriteString("---\n")
			doc.Write(b)
		}
		kubectl(t, node, &first, "apply", "--server-side", "-f", "-")
		kubectl(t, node, &rest, "apply", "--server-side", "-f", "-")
	}
	e2ekit.WaitFor(t, "operator Deployment available", 3*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(target.Operator.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
		if err != nil || len(pods.Items) == 0 {
			return false, "operator pods: " + e2ekit.ErrString(err)
		}
		return e2ekit.AllReady(pods.Items)
	})
	t.Logf("operator Ready %s after creation began", time.Since(start).Round(time.Millisecond))
	// Create waits for the Service rules (CoreDNS Ready): the operator must not have restarted
	// for want of the API server's Service address (the health oracle counts restarts).
	if pods, err := cs.CoreV1().Pods(target.Operator.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"}); err == nil {
		for _, p := range pods.Items {
			for _, st := range p.Status.ContainerStatuses {
				if st.RestartCount > 0 {
					t.Errorf("operator pod %s restarted %d times (last: %+v)", p.Name, st.RestartCount, st.LastTerminationState.Terminated)
				}
			}
		}
	}

	seed := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(target.Seed)}
	seed.SetNamespace("default")
	if _, err := dyn.Resource(vcGVR).Namespace("default").Create(ctx, seed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(seed.Object, "spec", "replicas")
	t0 := time.Now()
	e2ekit.WaitFor(t, "ValkeyCluster Ready", 4*time.Minute, func() (bool, string) {
		u, err := dyn.Resource(vcGVR).Namespace("default").Get(ctx, seed.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		why := fmt.Sprintf("phase %q, readyReplicas %d/%d", phase, ready, replicas)
		if pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
			_, w := e2ekit.AllReady(pods.Items)
			why += "; " + w
		}
		return phase == "Ready" && ready == replicas, why
	})
	t.Logf("ValkeyCluster of %d replicas Ready %s after its creation (%s after cluster creation began)", replicas, time.Since(t0).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Every Valkey pod answers from this host through the route (what the monitors need).
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey"})
	if err != nil {
		t.Fatal(err)
	}
	_, podNet, err := net.ParseCIDR(kc.rec.PodSubnet)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !podNet.Contains(net.ParseIP(p.Status.PodIP)) {
			t.Errorf("pod %s IP %s outside %s", p.Name, p.Status.PodIP, kc.rec.PodSubnet)
		}
		role, err := valkeyRole(p.Status.PodIP)
		if err != nil {
			t.Errorf("pod %s (%s) from the host: %v", p.Name, p.Status.PodIP, err)
			continue
		}
		t.Logf("pod %s %s from the host: ROLE %s", p.Name, p.Status.PodIP, role)
	}
	if out, err := exec.Command("docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", node).Output(); err == nil {
		t.Logf("node container memory (docker stats) with the operator and %d Valkey pods: %s", replicas, strings.TrimSpace(string(out)))
	}

	if os.Getenv("GAUNTLET_KIND_RETAIN") != "" {
		deleted = true
		t.Logf("GAUNTLET_KIND_RETAIN: cluster %s kept (kubeconfig %s)", name, c.Kubeconfig())
		return
	}
	t1 := time.Now()
	if err := c.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	deleted = true
	t.Logf("deleted in %s", time.Since(t1).Round(time.Millisecond))
	if out, _ := exec.Command("ip", "route", "show", kc.rec.PodSubnet).Output(); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("route left after Delete: %s", out)
	}
	if _, err := os.Stat(kc.reg.clusterDir(name)); err == nil {
		t.Errorf("record folder %s left after Delete", kc.reg.clusterDir(name))
	}
}

var vcGVR = schema.GroupVersionResource{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Resource: "valkeyclusters"}

// operatorBinary is $GAUNTLET_OPERATOR_BINARY, else REPO/bin/valkey-operator, else one built here.
func operatorBinary(t *testing.T, repo string) string {
	if p, err := operatorbin.Find(repo); err == nil {
		return p
	}
	p, err := operatorbin.Build(t.Context(), repo, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func kubectl(t *testing.T, node string, stdin *bytes.Buffer, args ...string) {
	t.Helper()
	cmd := exec.Command("docker", append([]string{"exec", "-i", node, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"}, args...)...)
	cmd.Stdin = stdin
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// valkeyRole dials addr:6379 and returns the first line of ROLE's answer.
func valkeyRole(ip string) (string, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "6379"), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nROLE\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	var lines []string
	for i := 0; i < 3; i++ {
		l, err := r.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	if len(lines) < 3 {
		return "", fmt.Errorf("short ROLE answer %q", lines)
	}
	return lines[2], nil
}
