package nodeimage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/internal/e2ekit"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2ENodeImageCluster builds the node image (or finds it cached), creates a one-node kind
// cluster from it with kind's library, offline, and checks the node Ready, CoreDNS running (it
// reaches the API server through kube-proxy's Service rules) and a pod of a locally assembled
// image running on the bridge network; then deletes the cluster.
func TestE2ENodeImageCluster(t *testing.T) {
	testenv.SkipShort(t)
	ctx := context.Background()
	// (cluster/kind imports this package, so its Available cannot be used here.)
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		testenv.Skip(t, testenv.Kind, "no container engine on this machine, kind cannot run: `docker info`: %v: %s", err, strings.TrimSpace(string(out)))
	}
	testenv.NeedRoot(t)
	opts, err := Options{Progress: e2ekit.Writer{T: t}}.withDefaults()
	if err != nil {
		testenv.Skip(t, testenv.Kind, "the node image's build options cannot be resolved (cache folder, inputs): %v", err)
	}
	if _, err := opts.binaries(); err != nil {
		testenv.Skip(t, testenv.Kind, "the node image's inputs are not built (make kind-binaries controlplane coredns): %v", err)
	}
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: built or checked in %s (cached: %v)", res.Image, res.Took.Round(time.Millisecond), res.Cached)

	const name = "gauntlet-nodeimage-e2e"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker())
	_ = kp.Delete(name, "") // a cluster left by a killed run
	start := time.Now()
	err = kp.Create(name,
		kindcluster.CreateWithV1Alpha4Config(ClusterConfig(res.Image, 0)),
		kindcluster.CreateWithKubeconfigPath(kubeconfig),
		kindcluster.CreateWithWaitForReady(4*time.Minute),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
		kindcluster.CreateWithRetain(os.Getenv("GAUNTLET_KIND_RETAIN") != ""),
	)
	if err != nil {
		t.Fatalf("kind create: %v", err)
	}
	t.Logf("cluster created (node Ready) in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if os.Getenv("GAUNTLET_KIND_RETAIN") != "" {
			t.Logf("GAUNTLET_KIND_RETAIN: cluster %s kept", name)
			return
		}
		if err := kp.Delete(name, kubeconfig); err != nil {
			t.Errorf("kind delete: %v", err)
		}
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	e2ekit.WaitFor(t, "node Ready", 2*time.Minute, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 1 {
			return false, "nodes: " + e2ekit.ErrString(err)
		}
		for _, c := range nodes.Items[0].Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, c.Message
			}
		}
		return false, "no Ready condition"
	})
	e2ekit.WaitFor(t, "CoreDNS Ready", 2*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil || len(pods.Items) == 0 {
			return false, "CoreDNS pods: " + e2ekit.ErrString(err)
		}
		return e2ekit.AllReady(pods.Items)
	})
	t.Logf("CoreDNS Ready %s after creation began", time.Since(start).Round(time.Millisecond))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "local-image", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: "registry.k8s.io/pause:3.10.1", ImagePullPolicy: corev1.PullNever,
		}}},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	e2ekit.WaitFor(t, "pod of a local image Running", 2*time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ip = p.Status.PodIP
		ok, why := e2ekit.AllReady([]corev1.Pod{*p})
		return ok, why
	})
	if !strings.HasPrefix(ip, "10.244.") {
		t.Errorf("pod IP %q is not in the bridge network's %s", ip, PodSubnet)
	}
	// The pod answers on the node's bridge: ping is not in the image, so ask the kernel's ARP
	// through a TCP connection attempt from the node (refused = reached).
	node := name + "-control-plane"
	if out, err := exec.Command("docker", "exec", node, "bash", "-c", "timeout 5 bash -c '</dev/tcp/"+ip+"/80' 2>&1; ip neigh show "+ip).CombinedOutput(); err != nil && !strings.Contains(string(out), "refused") {
		t.Logf("reaching the pod from the node: %v: %s", err, out)
	} else {
		t.Logf("node → pod %s: %s", ip, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", node).Output(); err == nil {
		t.Logf("node container memory (docker stats): %s", strings.TrimSpace(string(out)))
	}
}
