package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// FieldManager is the server-side apply field manager of every desired state.
const FieldManager = "gauntlet"

// kube is a worker's connection to its cluster, with the operator deployed.
type kube struct {
	cluster cluster.Cluster
	dyn     dynamic.Interface
	cs      kubernetes.Interface
	disc    discovery.CachedDiscoveryInterface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	log     *slog.Logger

	opNS     string
	opLabels map[string]string

	opCmd     *exec.Cmd
	opLogPath string
	// stateDir holds the out-of-cluster operator's files; stop removes it.
	stateDir string
	opLogOff int64
	opDone   chan struct{}
}

func newKube(c cluster.Cluster, log *slog.Logger) (*kube, error) {
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", c.Name(), err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", c.Name(), err)
	}
	disc := memory.NewMemCacheClient(cs.Discovery())
	return &kube{cluster: c, dyn: dyn, cs: cs, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc), log: log}, nil
}

// mapping resolves an object's kind to its resource, refreshing discovery once on a miss.
func (k *kube) mapping(obj map[string]any) (*meta.RESTMapping, error) {
	u := unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	return m, nil
}

// resource returns the dynamic client for obj in namespace ns (or defaultNS).
func (k *kube) resource(obj map[string]any, defaultNS string) (dynamic.ResourceInterface, string, error) {
	m, err := k.mapping(obj)
	if err != nil {
		return nil, "", err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return k.dyn.Resource(m.Resource), "", nil
	}
	u := unstructured.Unstructured{Object: obj}
	ns := u.GetNamespace()
	if ns == "" {
		ns = defaultNS
	}
	if ns == "" {
		ns = "default"
	}
	return k.dyn.Resource(m.Resource).Namespace(ns), ns, nil
}

// apply server-side applies obj (forcing conflicts: the harness owns the desired state).
//
// An empty object in obj ({}) inside which the harness's earlier applies set
// fields is emptied first, with a JSON merge patch that removes those fields:
// server-side apply alone would remove them and leave the object null
// (structured-merge-diff turns a map it empties into null), which a CRD field
// of type object refuses ("must be of type object: null"), where the desired
// state says {}.
func (k *kube) apply(ctx context.Context, obj map[string]any, defaultNS string) error {
	ri, ns, err := k.resource(obj, defaultNS)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: jsonv.CopyMap(obj)}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if empty := emptyObjectPaths(u.Object, nil); len(empty) > 0 {
		if err := k.emptyOwnedFields(ctx, ri, u.GetName(), empty); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), ns, u.GetName(), err)
		}
	}
	if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), ns, u.GetName(), err)
	}
	return nil
}

// emptyObjectPaths lists the paths (through maps only, never into lists or
// metadata) at which obj holds an empty object.
func emptyObjectPaths(obj map[string]any, at []string) [][]string {
	var out [][]string
	for key, v := range obj {
		m, ok := v.(map[string]any)
		if !ok || (len(at) == 0 && key == "metadata") {
			continue
		}
		p := append(append([]string(nil), at...), key)
		if len(m) == 0 {
			out = append(out, p)
			continue
		}
		out = append(out, emptyObjectPaths(m, p)...)
	}
	return out
}

// emptyOwnedFields removes, with one JSON merge patch, the fields that the
// harness's server-side applies own (and no other manager does) inside each of
// the live object's maps at paths. Nothing is sent when there are none, or the
// object does not exist yet.
func (k *kube) emptyOwnedFields(ctx context.Context, ri dynamic.ResourceInterface, name string, paths [][]string) error {
	live, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the live object to empty {} fields: %w", err)
	}
	patch := removalPatch(live.Object, live.GetManagedFields(), paths)
	if patch == nil {
		return nil
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("empty the objects the desired state declares as {} (merge patch %s): %w", body, err)
	}
	return nil
}

// removalPatch is the JSON merge patch that sets to null every field of live
// inside the maps at paths that FieldManager's apply owns and no other manager
// does; nil when there is none.
func removalPatch(live map[string]any, managed []metav1.ManagedFieldsEntry, paths [][]string) map[string]any {
	var mine map[string]any
	others := []map[string]any{}
	for _, e := range managed {
		if e.FieldsV1 == nil {
			continue
		}
		var fs map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &fs) != nil {
			continue
		}
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			mine = fs
		} else {
			others = append(others, fs)
		}
	}
	if mine == nil {
		return nil
	}
	var patch map[string]any
	for _, p := range paths {
		lv, ok := nestedMap(live, p)
		if !ok || len(lv) == 0 {
			continue
		}
		owned := fieldsAt(mine, p)
		for key := range lv {
			if _, ok := owned["f:"+key]; !ok {
				continue
			}
			shared := false
			for _, o := range others {
				if _, ok := fieldsAt(o, p)["f:"+key]; ok {
					shared = true
				}
			}
			if shared {
				continue
			}
			if patch == nil {
				patch = map[string]any{}
			}
			cur := patch
			for _, seg := range p {
				next, _ := cur[seg].(map[string]any)
				if next == nil {
					next = map[string]any{}
					cur[seg] = next
				}
				cur = next
			}
			cur[key] = nil
		}
	}
	return patch
}

// nestedMap returns the map at path in obj.
func nestedMap(obj map[string]any, path []string) (map[string]any, bool) {
	cur := obj
	for _, seg := range path {
		next, ok := cur[seg].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// fieldsAt walks a managedFields fieldsV1 set ({"f:spec":{"f:auth":{...}}}) to path.
func fieldsAt(fs map[string]any, path []string) map[string]any {
	cur := fs
	for _, seg := range path {
		next, _ := cur["f:"+seg].(map[string]any)
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

// exists reports whether the object apiVersion/kind name exists in namespace ns.
func (k *kube) exists(ctx context.Context, apiVersion, kind, ns, name string) (bool, error) {
	obj, err := k.lookup(ctx, apiVersion, kind, ns, name)
	return obj != nil, err
}

// lookup returns the object, or nil when it does not exist.
func (k *kube) lookup(ctx context.Context, apiVersion, kind, ns, name string) (map[string]any, error) {
	ri, _, err := k.resource(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}, ns)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return u.Object, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, fmt.Errorf("look up %s %s/%s: %w", kind, ns, name, err)
}

// applyFixtures creates the target's fixtures in namespace ns and waits, for
// up to fixtureSettle, until those that report a Ready condition report it
// True: a CR declared against a fixture that is not ready yet (a CA Issuer
// whose CA Certificate is still being issued) is judged against a state the
// fixture had not reached (cert-manager seed 3: differential re-runs whose
// Certificate waited on its Issuer were compared with a Ready main run).
func (k *kube) applyFixtures(ctx context.Context, files []string, ns string) error {
	var applied []map[string]any
	for _, f := range files {
		objs, err := targets.Render(targets.DeployStep{Manifests: f, Namespace: ns})
		if err != nil {
			return fmt.Errorf("fixture %s: %w", f, err)
		}
		for _, o := range objs {
			md, _ := o["metadata"].(map[string]any)
			if md != nil {
				md["namespace"] = ns
			}
			if err := k.applyThroughWebhook(ctx, fixtureSettle, o, ns); err != nil {
				return fmt.Errorf("fixture %s: %w", f, err)
			}
			applied = append(applied, o)
		}
	}
	start := time.Now()
	var waiting []string
	err := poll(ctx, fixtureSettle, func() (bool, error) {
		waiting = waiting[:0]
		for _, o := range applied {
			u := &unstructured.Unstructured{Object: o}
			live, err := k.lookup(ctx, u.GetAPIVersion(), u.GetKind(), ns, u.GetName())
			if err != nil || live == nil {
				continue
			}
			if pending, why := fixturePending(live, time.Since(start)); pending {
				waiting = append(waiting, fmt.Sprintf("%s %s: %s", u.GetKind(), u.GetName(), why))
			}
		}
		return len(waiting) == 0, nil
	})
	if err != nil && ctx.Err() == nil {
		k.log.Warn("fixtures not ready; the campaign goes on", "namespace", ns, "waiting", strings.Join(waiting, "; "))
		return nil
	}
	return ctx.Err()
}

// fixtureConditionGrace is how long a fixture of a custom kind may go without
// any status condition before it counts as one that publishes none.
const fixtureConditionGrace = 15 * time.Second

// fixturePending says whether a fixture is not ready yet: it reports a Ready
// condition that is not True, or it is a custom resource that has reported no
// condition yet, for less than fixtureConditionGrace since it was applied.
func fixturePending(live map[string]any, age time.Duration) (bool, string) {
	conds, _ := jsonv.At(live, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		if m["status"] == "True" {
			return false, ""
		}
		reason, _ := m["reason"].(string)
		return true, fmt.Sprintf("Ready=%v (%s)", m["status"], reason)
	}
	av, _ := live["apiVersion"].(string)
	custom := strings.Contains(av, ".") && !strings.HasSuffix(strings.SplitN(av, "/", 2)[0], ".k8s.io")
	if custom && len(conds) == 0 && age < fixtureConditionGrace {
		return true, "no status condition yet"
	}
	return false, ""
}

// remove deletes obj and waits until it is gone.
func (k *kube) remove(ctx context.Context, obj map[string]any, defaultNS string, timeout time.Duration) error {
	ri, _, err := k.resource(obj, defaultNS)
	if err != nil {
		return err
	}
	name := (&unstructured.Unstructured{Object: obj}).GetName()
	fg := metav1.DeletePropagationForeground
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return poll(ctx, timeout, func() (bool, error) {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
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
			if err := retry(ctx, 30*time.Second, func() error { return k.apply(ctx, o, step.Namespace) }); err != nil {
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
	k.mapper.Reset()
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
	probe := map[string]any{"apiVersion": w.APIVersion, "kind": w.Kind, "metadata": map[string]any{"name": w.Name, "namespace": w.Namespace}}
	var last string
	err := poll(ctx, timeout, func() (bool, error) {
		ri, _, err := k.resource(probe, w.Namespace)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		u, err := ri.Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if w.Condition != "" {
			if condTrue(u.Object, w.Condition) {
				return true, nil
			}
			last = "condition " + w.Condition + " not True"
			return false, nil
		}
		if w.Kind == "CustomResourceDefinition" {
			return condTrue(u.Object, "Established"), nil
		}
		key := objectKey(u.Object, u.GroupVersionKind().Group, u.GroupVersionKind().Version, w.Kind)
		nr, _ := readinessOf(map[string]model.Object{key: u.Object}, "", false)
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

// watchedResource is one namespaced resource type a namespace watch follows.
type watchedResource struct {
	gvr  schema.GroupVersionResource
	kind string
}

// skippedResources change on their own or are not state: events (recorded
// separately), leases (heartbeats), and access reviews.
var skippedResources = map[string]bool{
	"events": true, "leases": true, "localsubjectaccessreviews": true, "bindings": true,
	"tokenreviews": true, "selfsubjectreviews": true,
}

// skippedGroups are API groups whose objects are the harness's own doing, not the
// operator's state: Chaos Mesh's (the faults on kind: the NetworkChaos and PodChaos the
// fault back end creates, the PodNetworkChaos Chaos Mesh keeps per target pod). In a
// snapshot they made a rollback look incomplete ("PodNetworkChaos cache-2 is missing from
// the state reached"), and their updates kept resetting quiet windows.
var skippedGroups = map[string]bool{"chaos-mesh.org": true}

// watched reports whether resource r of gv belongs in snapshots and quiet windows.
func watched(gv schema.GroupVersion, r metav1.APIResource) bool {
	return !strings.Contains(r.Name, "/") && !skippedResources[r.Name] && !skippedGroups[gv.Group] && hasVerbs(r.Verbs, "list", "watch")
}

// namespacedResources lists every namespaced resource type that can be listed and watched.
func (k *kube) namespacedResources() ([]watchedResource, error) {
	k.disc.Invalidate()
	lists, err := k.disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover namespaced resources: %w", err)
	}
	var out []watchedResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !watched(gv, r) {
				continue
			}
			out = append(out, watchedResource{gvr: gv.WithResource(r.Name), kind: r.Kind})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out, nil
}

func hasVerbs(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// nsWatch follows every object of a namespace with informers: each change
// touches the quiet tracker, and the caches serve snapshots.
type nsWatch struct {
	ns     string
	q      *quietTracker
	cancel context.CancelFunc
	mu     sync.Mutex
	infs   map[watchedResource]cache.SharedIndexInformer
	// certs adds the decoded view of certificates and keys to Secrets and
	// ConfigMaps (x509view.Field), remembering what it decoded.
	certs x509view.Decoder
}

func (k *kube) watchNamespace(ctx context.Context, ns string) (*nsWatch, error) {
	res, err := k.namespacedResources()
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &nsWatch{ns: ns, q: newQuietTracker(time.Now()), cancel: cancel, infs: map[watchedResource]cache.SharedIndexInformer{}}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(k.dyn, 0, ns, nil)
	touch := func(any) { w.q.Touch(time.Now()) }
	for _, r := range res {
		inf := f.ForResource(r.gvr).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    touch,
			UpdateFunc: func(_, _ any) { w.q.Touch(time.Now()) },
			DeleteFunc: touch,
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("watch %s: %w", r.gvr, err)
		}
		w.infs[r] = inf
	}
	f.Start(wctx.Done())
	syncCtx, syncCancel := context.WithTimeout(wctx, time.Minute)
	defer syncCancel()
	for r, inf := range w.infs {
		if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			cancel()
			return nil, fmt.Errorf("watch namespace %s: %s did not sync within a minute", ns, r.gvr)
		}
	}
	return w, nil
}

// objects returns a copy of every cached object (managedFields dropped), keyed
// by ObjectKey. Secrets and ConfigMaps holding PEM certificates or keys carry
// their decoded view in the synthetic field x509view.Field, derived here from
// the raw data before any mask applies.
func (w *nsWatch) objects() map[string]model.Object {
	out := map[string]model.Object{}
	for r, inf := range w.infs {
		for _, it := range inf.GetStore().List() {
			u, ok := it.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			o := u.DeepCopy().Object
			if md, ok := o["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
			if r.gvr.Group == "" {
				w.certs.AddView(r.kind, o)
			}
			out[objectKey(o, r.gvr.Group, r.gvr.Version, r.kind)] = o
		}
	}
	return out
}

func (w *nsWatch) close() { w.cancel() }

func objectKey(o map[string]any, group, version, kind string) string {
	u := unstructured.Unstructured{Object: o}
	return model.ObjectKey{Group: group, Version: version, Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}.String()
}

// events returns the namespace's events last seen at or after since.
func (k *kube) events(ctx context.Context, ns string, since time.Time) []model.Event {
	list, err := k.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []model.Event
	for _, e := range list.Items {
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		if t.IsZero() {
			t = e.CreationTimestamp.Time
		}
		if t.Before(since.Add(-time.Second)) {
			continue
		}
		io := e.InvolvedObject
		gv, _ := schema.ParseGroupVersion(io.APIVersion)
		out = append(out, model.Event{
			Time: t, Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count,
			Object: model.ObjectKey{Group: gv.Group, Version: gv.Version, Kind: io.Kind, Namespace: io.Namespace, Name: io.Name}.String(),
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func (k *kube) createNamespace(ctx context.Context, ns string) error {
	_, err := k.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"gauntlet.dev/campaign": "true"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// deleteNamespace deletes ns without waiting for it to be gone.
func (k *kube) deleteNamespace(ctx context.Context, ns string) {
	if err := k.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		k.log.Warn("delete namespace", "namespace", ns, "err", err)
	}
}

func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf("not met within %s", timeout), err)
	}
	return err
}

// retry retries fn until it succeeds or timeout (the API may still be learning new CRDs).
func retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	var last error
	err := poll(ctx, timeout, func() (bool, error) {
		last = fn()
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

var errNoCR = errors.New("the custom resource under test is missing from the snapshot")

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
