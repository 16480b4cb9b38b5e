package campaign

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/targets"
	"github.com/gauntlet-dev/gauntlet/view"
)

// FieldManager is the server-side apply field manager of every desired state.
const FieldManager = replay.FieldManager

// kube is a worker's connection to its cluster (replay.Kube: declaring,
// observing, faults), with the operator deployed.
type kube struct {
	*replay.Kube
	cluster cluster.Cluster
	cs      kubernetes.Interface
	log     *slog.Logger

	opNS     string
	opLabels map[string]string

	opCmd     *exec.Cmd
	opLogPath string
	// stateDir holds the out-of-cluster operator's files; stop removes it.
	stateDir string
	opLogOff int64
	opDone   chan struct{}

	// viewOn puts the view proxy in front of the operator (view.go).
	viewOn  bool
	view    *view.Proxy
	viewBuf *bytes.Buffer
	// lastView is the view record of the last step written; viewPending
	// what was taken from the proxy since (view.go).
	lastView, viewPending []byte
}

func newKube(c cluster.Cluster, log *slog.Logger) (*kube, error) {
	rk, err := replay.NewKube(c.RESTConfig(), c.Name(), log)
	if err != nil {
		return nil, err
	}
	return &kube{Kube: rk, cluster: c, cs: rk.Clientset(), log: log}, nil
}

// The campaign's names for what replay.Kube does.

func (k *kube) mapping(obj map[string]any) (*meta.RESTMapping, error) { return k.Mapping(obj) }

func (k *kube) lookup(ctx context.Context, apiVersion, kind, ns, name string) (map[string]any, error) {
	return k.Lookup(ctx, apiVersion, kind, ns, name)
}

func (k *kube) applyFixtures(ctx context.Context, files []string, ns string) error {
	return k.ApplyFixtures(ctx, files, ns)
}

func (k *kube) createNamespace(ctx context.Context, ns string) error {
	return k.CreateNamespace(ctx, ns)
}

func (k *kube) deleteNamespace(ctx context.Context, ns string) { k.DeleteNamespace(ctx, ns) }

func (k *kube) events(ctx context.Context, ns string, since time.Time) []model.Event {
	return k.Events(ctx, ns, since)
}

// nsWatch is a namespace's replay.Watch and its quiet tracker.
type nsWatch struct {
	*replay.Watch
	q *quietTracker
}

func (k *kube) watchNamespace(ctx context.Context, ns string) (*nsWatch, error) {
	w, err := k.WatchNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	return &nsWatch{Watch: w, q: w.Quiet()}, nil
}

// objects are the watched objects (none before the watch started).
func (w *nsWatch) objects() map[string]model.Object {
	if w.Watch == nil {
		return map[string]model.Object{}
	}
	return w.Objects()
}

func (w *nsWatch) close() {
	if w.Watch != nil {
		w.Close()
	}
}

func objectKey(o map[string]any, group, version, kind string) string {
	return replay.KeyOf(o, group, version, kind)
}

// deploy installs the target's operator: each step's objects (cluster-scoped
// and Namespaces first), its waits and sleeps; then an out-of-cluster command.
func (k *kube) deploy(ctx context.Context, t *targets.Target, stateDir string) error {
	k.opNS, k.opLabels = t.Operator.Namespace, t.Operator.Labels
	var preloaded map[string]bool
	if pl, ok := k.cluster.(cluster.Preloaded); ok {
		preloaded = map[string]bool{}
		for _, r := range pl.PreloadedImages() {
			preloaded[r] = true
		}
	}
	for i, step := range t.Deploy {
		objs, err := targets.Render(step)
		if err != nil {
			return fmt.Errorf("deploy step %d: %w", i+1, err)
		}
		sort.SliceStable(objs, func(a, b int) bool { return applyRank(objs[a]) < applyRank(objs[b]) })
		for _, o := range objs {
			for _, img := range usePreloaded(o, preloaded) {
				k.log.Info("the cluster pulls no image: a container that would pull its loaded image Always uses it as it is (imagePullPolicy IfNotPresent)", "image", img, "kind", o["kind"])
			}
			if k.viewOn && step.Operator && o["kind"] == "Deployment" {
				if err := k.pointAtView(ctx, o); err != nil {
					return fmt.Errorf("deploy step %d: %w", i+1, err)
				}
			}
			if err := replay.Retry(ctx, 30*time.Second, func() error { return k.Apply(ctx, o, step.Namespace) }); err != nil {
				return fmt.Errorf("deploy step %d (%s): %w", i+1, step.Manifests, err)
			}
			if step.Operator && len(k.opLabels) == 0 && o["kind"] == "Deployment" {
				// Operator pods: the Deployment's selector.
				u := unstructured.Unstructured{Object: o}
				sel, _, _ := unstructured.NestedStringMap(o, "spec", "selector", "matchLabels")
				k.opLabels = sel
				k.opNS = u.GetNamespace()
				if k.opNS == "" {
					k.opNS = step.Namespace
				}
			}
		}
		for _, w := range step.Wait {
			if err := k.waitFor(ctx, w); err != nil {
				return fmt.Errorf("deploy step %d: %w", i+1, err)
			}
		}
		if step.Sleep > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(step.Sleep):
			}
		}
	}
	k.ResetMapper()
	k.SetOperator(k.opNS, k.opLabels)
	if len(t.Operator.Command) > 0 {
		return k.startOperator(t.Operator.Command, stateDir)
	}
	return nil
}

// applyRank orders CRDs and Namespaces before everything else.
func applyRank(o map[string]any) int {
	switch o["kind"] {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	case "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding":
		return 2
	}
	return 3
}

// waitFor waits for one deploy wait condition.
func (k *kube) waitFor(ctx context.Context, w targets.WaitCondition) error {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	var last string
	err := replay.Poll(ctx, timeout, func() (bool, error) {
		obj, err := k.Lookup(ctx, w.APIVersion, w.Kind, w.Namespace, w.Name)
		if err != nil || obj == nil {
			last = "not found"
			if err != nil {
				last = err.Error()
			}
			return false, nil
		}
		u := unstructured.Unstructured{Object: obj}
		if w.Condition != "" {
			if replay.CondTrue(u.Object, w.Condition) {
				return true, nil
			}
			last = "condition " + w.Condition + " not True"
			return false, nil
		}
		if w.Kind == "CustomResourceDefinition" {
			return replay.CondTrue(u.Object, "Established"), nil
		}
		key := objectKey(u.Object, u.GroupVersionKind().Group, u.GroupVersionKind().Version, w.Kind)
		nr, _ := replay.Readiness(map[string]model.Object{key: u.Object}, "", false)
		last = strings.Join(nr, "; ")
		return len(nr) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s %s/%s (%s): %w", w.Kind, w.Namespace, w.Name, last, err)
	}
	return nil
}

// startOperator runs the operator out of cluster with KUBECONFIG set; its output goes to a file
// that operatorLog reads.
func (k *kube) startOperator(command []string, stateDir string) error {
	k.opLogPath = filepath.Join(stateDir, "operator.log")
	f, err := os.Create(k.opLogPath)
	if err != nil {
		return fmt.Errorf("operator log: %w", err)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.cluster.Kubeconfig())
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start the operator %q: %w", command[0], err)
	}
	k.opCmd = cmd
	k.opDone = make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(k.opDone) }()
	return nil
}

// stop ends an out-of-cluster operator.
func (k *kube) stop() {
	k.stopView()
	if k.opCmd != nil && k.opCmd.Process != nil {
		_ = k.opCmd.Process.Signal(os.Interrupt)
		select {
		case <-k.opDone:
		case <-time.After(10 * time.Second):
			_ = k.opCmd.Process.Kill()
			<-k.opDone
		}
	}
	if k.stateDir != "" {
		_ = os.RemoveAll(k.stateDir)
	}
}

// operatorLog returns the operator's log since `since` (pod log API), or the
// out-of-cluster operator's new output.
func (k *kube) operatorLog(ctx context.Context, since time.Time) string {
	if k.opLogPath != "" {
		f, err := os.Open(k.opLogPath)
		if err != nil {
			return ""
		}
		defer f.Close()
		if _, err := f.Seek(k.opLogOff, io.SeekStart); err != nil {
			return ""
		}
		b, _ := io.ReadAll(io.LimitReader(f, 4<<20))
		k.opLogOff += int64(len(b))
		return string(b)
	}
	if k.opNS == "" || len(k.opLabels) == 0 {
		return ""
	}
	pods, err := k.cs.CoreV1().Pods(k.opNS).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(k.opLabels).String()})
	if err != nil {
		return fmt.Sprintf("(operator pods: %v)\n", err)
	}
	var b strings.Builder
	st := metav1.NewTime(since.Add(-time.Second))
	limit := int64(2 << 20)
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			raw, err := k.cs.CoreV1().Pods(k.opNS).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, SinceTime: &st, LimitBytes: &limit}).DoRaw(ctx)
			if err != nil {
				fmt.Fprintf(&b, "==> %s/%s: %v\n", p.Name, c.Name, err)
				continue
			}
			if len(pods.Items) > 1 || len(p.Spec.Containers) > 1 {
				fmt.Fprintf(&b, "==> %s/%s\n", p.Name, c.Name)
			}
			b.Write(raw)
		}
	}
	return b.String()
}

// operatorRestarts sums the operator pods' restart counts (-1 when unknown).
func (k *kube) operatorRestarts(ctx context.Context) int {
	if k.opNS == "" || len(k.opLabels) == 0 {
		return -1
	}
	pods, err := k.cs.CoreV1().Pods(k.opNS).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(k.opLabels).String()})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			n += int(s.RestartCount)
		}
	}
	return n
}

// usePreloaded sets imagePullPolicy IfNotPresent on every container of o (anywhere in it:
// workloads' pod templates, pods) that would pull a preloaded image Always, on a cluster
// that pulls nothing (cluster.Preloaded); it returns those images. The default policy of an
// image tagged latest or untagged is Always too.
func usePreloaded(o map[string]any, preloaded map[string]bool) []string {
	if len(preloaded) == 0 {
		return nil
	}
	var changed []string
	targets.EachContainer(o, func(c map[string]any) {
		img, _ := c["image"].(string)
		if !preloaded[img] {
			return
		}
		policy, _ := c["imagePullPolicy"].(string)
		if policy == "Always" || (policy == "" && pullsAlwaysByDefault(img)) {
			c["imagePullPolicy"] = "IfNotPresent"
			changed = append(changed, img)
		}
	})
	return changed
}

// pullsAlwaysByDefault reports whether Kubernetes defaults img's pull policy to Always:
// tagged latest, or neither tagged nor pinned by digest.
func pullsAlwaysByDefault(img string) bool {
	ref, err := reference.ParseNormalizedNamed(img)
	if err != nil {
		return false
	}
	if _, ok := ref.(reference.Digested); ok {
		return false
	}
	t, ok := ref.(reference.Tagged)
	return !ok || t.Tag() == "latest"
}
