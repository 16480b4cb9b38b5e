// Package e2e tests the bundled Valkey operator end to end on the embedded
// cluster (cluster/local): the operator runs as a pod from its manifests and
// image mapping, the Valkey pods are real servers, and the tests talk to them
// over pod IPs. The tests need root and a built control plane; they skip
// otherwise, and in -short mode.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

var env struct {
	once    sync.Once
	cluster *local.Cluster
	client  client.Client
	root    string
	binDir  string
	skip    string
	err     error
}

func TestMain(m *testing.M) {
	if local.Init() {
		return
	}
	code := m.Run()
	if env.cluster != nil {
		if err := env.cluster.Delete(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "delete the e2e cluster:", err)
			code = 1
		}
	}
	for _, d := range []string{env.root, env.binDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

func testLogger() *slog.Logger {
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// setup creates, once, a cluster with the operator deployed from its manifests.
func setup(t testing.TB) client.Client {
	t.Helper()
	testenv.SkipShort(t)
	testenv.NeedRoot(t)
	env.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		bin, err := operatorBinary(ctx)
		if err != nil {
			env.err = err
			return
		}
		root, err := os.MkdirTemp("", "gauntlet-operator-e2e-")
		if err != nil {
			env.err = err
			return
		}
		env.root = root
		c, err := local.Create(ctx, local.Options{Name: "vk-e2e", StateRoot: root, OperatorBinary: bin, Log: testLogger()})
		if err != nil {
			env.skip = fmt.Sprintf("the embedded cluster is not available (%v): build the control plane with `make controlplane`", err)
			return
		}
		env.cluster = c
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = apiextv1.AddToScheme(scheme)
		_ = v1alpha1.AddToScheme(scheme)
		cl, err := client.New(c.RESTConfig(), client.Options{Scheme: scheme})
		if err != nil {
			env.err = err
			return
		}
		env.client = cl
		env.err = deployOperator(ctx, cl, scheme)
	})
	if env.skip != "" {
		testenv.Unavailable(t, "%s", env.skip)
	}
	if env.err != nil {
		t.Fatal(env.err)
	}
	return env.client
}

// operatorBinary is GAUNTLET_OPERATOR_BINARY, bin/valkey-operator when built by
// make, or a fresh build (in a folder every user can read: the operator's pod
// runs as 65532).
func operatorBinary(ctx context.Context) (string, error) {
	if p := os.Getenv(operatorbin.Env); p != "" {
		return p, nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	rootDir := filepath.Dir(strings.TrimSpace(string(out)))
	dir, err := os.MkdirTemp("", "valkey-operator-bin-")
	if err != nil {
		return "", err
	}
	env.binDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return operatorbin.Build(ctx, rootDir, dir)
}

func manifestDir() string { return filepath.Join("..", "config") }

// decodeFile reads every object of a YAML file.
func decodeFile(scheme *runtime.Scheme, path string) ([]client.Object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []client.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, obj.(client.Object))
	}
}

// deployOperator applies the CRDs, RBAC and Deployment of operator/config.
func deployOperator(ctx context.Context, cl client.Client, scheme *runtime.Scheme) error {
	files := []string{
		"crd/bases/valkey.gauntlet.dev_valkeyclusters.yaml",
		"crd/bases/valkey.gauntlet.dev_valkeybackups.yaml",
		"manager/manager.yaml", // the Namespace first
		"rbac/service_account.yaml", "rbac/role.yaml", "rbac/role_binding.yaml",
		"rbac/leader_election_role.yaml", "rbac/leader_election_role_binding.yaml",
	}
	var deploy *appsv1.Deployment
	for _, f := range files {
		objs, err := decodeFile(scheme, filepath.Join(manifestDir(), f))
		if err != nil {
			return err
		}
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				deploy = d // after RBAC
				continue
			}
			if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
	}
	for _, crd := range []string{"valkeyclusters.valkey.gauntlet.dev", "valkeybackups.valkey.gauntlet.dev"} {
		if err := poll(ctx, time.Minute, func() (bool, error) {
			c := &apiextv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKey{Name: crd}, c); err != nil {
				return false, nil
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd, err)
		}
	}
	if deploy == nil {
		return errors.New("no Deployment in manager.yaml")
	}
	// Debug logs make failures readable.
	deploy.Spec.Template.Spec.Containers[0].Args = append(deploy.Spec.Template.Spec.Containers[0].Args, "--log-level=debug", "--log-format=text")
	if err := cl.Create(ctx, deploy); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the operator Deployment: %w", err)
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(deploy), d); err != nil {
			return false, nil
		}
		return d.Status.ReadyReplicas == 1, nil
	})
}

func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf("condition not met within %s", timeout), err)
	}
	return err
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t testing.TB, cl client.Client, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cl.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, cl, name)
		}
		_ = cl.Delete(context.Background(), ns)
	})
	return name
}

// dumpState logs what a failed test leaves: the cluster's status and events, pods, operator logs.
func dumpState(t testing.TB, cl client.Client, ns string) {
	ctx := context.Background()
	list := &v1alpha1.ValkeyClusterList{}
	if cl.List(ctx, list, client.InNamespace(ns)) == nil {
		for _, c := range list.Items {
			t.Logf("ValkeyCluster %s: phase %s primary %s ready %d conditions %+v", c.Name, c.Status.Phase, c.Status.Primary, c.Status.ReadyReplicas, c.Status.Conditions)
		}
	}
	pods := &corev1.PodList{}
	if cl.List(ctx, pods, client.InNamespace(ns)) == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s: %s ip %s labels %v ready %v", p.Name, p.Status.Phase, p.Status.PodIP, p.Labels, podReady(&p))
		}
	}
	evs := &corev1.EventList{}
	if cl.List(ctx, evs, client.InNamespace(ns)) == nil {
		sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
		for _, e := range evs.Items {
			t.Logf("event %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
	if env.cluster != nil {
		op := &corev1.PodList{}
		if cl.List(ctx, op, client.InNamespace("valkey-operator-system")) == nil {
			for _, p := range op.Items {
				req := env.cluster.Client().CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr(int64(80))})
				if b, err := req.DoRaw(ctx); err == nil {
					t.Logf("operator log tail (%s):\n%s", p.Name, b)
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func newCluster(ns, name string, replicas int32, mutate func(*v1alpha1.ValkeyClusterSpec)) *v1alpha1.ValkeyCluster {
	c := &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ValkeyClusterSpec{
			Replicas: replicas,
			Failover: v1alpha1.FailoverSpec{
				HealthCheckInterval: metav1.Duration{Duration: time.Second},
				Timeout:             metav1.Duration{Duration: 500 * time.Millisecond},
				DownAfter:           metav1.Duration{Duration: 3 * time.Second},
			},
		},
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

func getCluster(t testing.TB, cl client.Client, ns, name string) *v1alpha1.ValkeyCluster {
	t.Helper()
	c := &v1alpha1.ValkeyCluster{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// readyCache sets the test up (setup), creates the namespace name and a
// ValkeyCluster "cache" of three in it, and waits until the cluster is ready.
func readyCache(t testing.TB, name string) (client.Client, string, *v1alpha1.ValkeyCluster) {
	t.Helper()
	cl := setup(t)
	ns := namespace(t, cl, name)
	create(t, cl, newCluster(ns, "cache", 3, nil))
	return cl, ns, waitReady(t, cl, ns, "cache", 3*time.Minute)
}

// waitReady waits until the cluster is Ready for its current generation.
func waitReady(t testing.TB, cl client.Client, ns, name string, timeout time.Duration) *v1alpha1.ValkeyCluster {
	t.Helper()
	var last *v1alpha1.ValkeyCluster
	err := poll(context.Background(), timeout, func() (bool, error) {
		c := &v1alpha1.ValkeyCluster{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, nil
		}
		last = c
		return c.Status.Phase == v1alpha1.PhaseReady && c.Status.ObservedGeneration == c.Generation &&
			meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady), nil
	})
	if err != nil {
		if last != nil {
			t.Fatalf("%s/%s not Ready within %s: phase %s, conditions %+v", ns, name, timeout, last.Status.Phase, last.Status.Conditions)
		}
		t.Fatalf("%s/%s not Ready within %s", ns, name, timeout)
	}
	return last
}

func pods(t testing.TB, cl client.Client, ns, name string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	if err := cl.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels(v1alpha1.SelectorLabels(name))); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

func addr(p corev1.Pod) string { return net.JoinHostPort(p.Status.PodIP, "6379") }

var pool = valkey.NewPool()

func vdo(ctx context.Context, address string, args ...string) (valkey.Reply, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return pool.Do(cctx, valkey.Endpoint{Addr: address}, args...)
}

func vinfo(t testing.TB, address string) valkey.Info {
	t.Helper()
	r, err := vdo(context.Background(), address, "INFO")
	if err != nil {
		t.Fatalf("INFO %s: %v", address, err)
	}
	in, err := valkey.ParseInfo(r.String())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// checkTopology: exactly one pod labelled primary, it reports role master and
// is status.primary; every other pod is a linked replica of it.
func checkTopology(t testing.TB, cl client.Client, ns, name string) corev1.Pod {
	t.Helper()
	c := getCluster(t, cl, ns, name)
	var prim []corev1.Pod
	ps := pods(t, cl, ns, name)
	for _, p := range ps {
		if p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			prim = append(prim, p)
		}
	}
	if len(prim) != 1 {
		t.Fatalf("%d pods labelled primary", len(prim))
	}
	if prim[0].Name != c.Status.Primary {
		t.Fatalf("labelled %s, status.primary %s", prim[0].Name, c.Status.Primary)
	}
	if in := vinfo(t, addr(prim[0])); in.Role != valkey.RoleMaster {
		t.Fatalf("%s is labelled primary and reports %s", prim[0].Name, in.Role)
	}
	for _, p := range ps {
		if p.Name == prim[0].Name {
			continue
		}
		in := vinfo(t, addr(p))
		if !in.ReplicatingFrom(prim[0].Status.PodIP, 6379) || !in.MasterLinkUp {
			t.Fatalf("%s is not a linked replica of %s: %+v", p.Name, prim[0].Name, in)
		}
	}
	if len(ps) != int(c.Spec.Replicas) {
		t.Fatalf("%d pods, spec.replicas %d", len(ps), c.Spec.Replicas)
	}
	return prim[0]
}

// writeKeys writes n keys to the primary, each acknowledged by WAIT 1.
func writeKeys(t testing.TB, primary corev1.Pod, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s:%d", prefix, i)
		if _, err := vdo(context.Background(), addr(primary), "SET", k, "v"); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if r, err := vdo(context.Background(), addr(primary), "WAIT", "1", "5000"); err != nil || r.Int < 1 {
		t.Fatalf("WAIT 1: %v %v", r, err)
	}
	return keys
}

func checkKeys(t testing.TB, p corev1.Pod, keys []string) {
	t.Helper()
	for _, k := range keys {
		r, err := vdo(context.Background(), addr(p), "EXISTS", k)
		if err != nil || r.Int != 1 {
			t.Fatalf("%s: key %s missing (%v)", p.Name, k, err)
		}
	}
}

func create(t testing.TB, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func update(t testing.TB, cl client.Client, ns, name string, f func(*v1alpha1.ValkeyClusterSpec)) {
	t.Helper()
	for i := 0; i < 10; i++ {
		c := getCluster(t, cl, ns, name)
		f(&c.Spec)
		err := cl.Update(context.Background(), c)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	t.Fatal("update: too many conflicts")
}

func TestE2EDeployOwnership(t *testing.T) {
	cl, ns, c := readyCache(t, "vk-deploy")
	prim := checkTopology(t, cl, ns, "cache")
	if c.Status.ReadyReplicas != 3 || prim.Name != "cache-0" {
		t.Fatalf("status %+v, primary %s", c.Status, prim.Name)
	}
	ctx := context.Background()
	owned := []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.Service{}, &corev1.ConfigMap{}, &policyv1.PodDisruptionBudget{}}
	names := []string{"cache", "cache", "cache-headless", "cache-config", "cache"}
	for i, o := range owned {
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, o); err != nil {
			t.Fatalf("%T %s: %v", o, names[i], err)
		}
		if !metav1.IsControlledBy(o, c) {
			t.Fatalf("%T %s is not controlled by the cluster", o, names[i])
		}
	}
	svc := &corev1.Service{}
	_ = cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, svc)
	if svc.Spec.Selector[v1alpha1.LabelRole] != v1alpha1.RolePrimary {
		t.Fatalf("client Service selector %v", svc.Spec.Selector)
	}
}

func TestE2EScale(t *testing.T) {
	cl, ns, _ := readyCache(t, "vk-scale")
	keys := writeKeys(t, checkTopology(t, cl, ns, "cache"), "scale", 200)

	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) { s.Replicas = 5 })
	waitReady(t, cl, ns, "cache", 3*time.Minute)
	checkTopology(t, cl, ns, "cache")
	for _, p := range pods(t, cl, ns, "cache") {
		checkKeys(t, p, keys)
	}

	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) { s.Replicas = 3 })
	waitReady(t, cl, ns, "cache", 3*time.Minute)
	prim := checkTopology(t, cl, ns, "cache")
	ps := pods(t, cl, ns, "cache")
	if len(ps) != 3 {
		t.Fatalf("%d pods after scaling in", len(ps))
	}
	for _, p := range ps {
		checkKeys(t, p, keys)
	}
	checkKeys(t, prim, keys)
}

func TestE2EConfig(t *testing.T) {
	cl, ns, _ := readyCache(t, "vk-config")
	keys := writeKeys(t, checkTopology(t, cl, ns, "cache"), "cfg", 50)

	// Live: visible in CONFIG GET on every pod, no restart.
	before := map[string]string{}
	for _, p := range pods(t, cl, ns, "cache") {
		before[p.Name] = string(p.UID)
	}
	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"maxmemory": "64mb"} })
	waitReady(t, cl, ns, "cache", 2*time.Minute)
	for _, p := range pods(t, cl, ns, "cache") {
		r, err := vdo(context.Background(), addr(p), "CONFIG", "GET", "maxmemory")
		m, _ := r.StringMap()
		if err != nil || m["maxmemory"] != strconv.Itoa(64<<20) {
			t.Fatalf("%s: maxmemory %v (%v)", p.Name, m, err)
		}
		if string(p.UID) != before[p.Name] {
			t.Fatalf("%s restarted for a live change", p.Name)
		}
	}

	// Restart-only: every pod rolled, the primary switched over first.
	oldPrimary := getCluster(t, cl, ns, "cache").Status.Primary
	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"maxmemory": "64mb", "databases": "32"}
	})
	waitReady(t, cl, ns, "cache", 5*time.Minute)
	prim := checkTopology(t, cl, ns, "cache")
	for _, p := range pods(t, cl, ns, "cache") {
		if string(p.UID) == before[p.Name] {
			t.Fatalf("%s was not restarted for a restart-only change", p.Name)
		}
		r, _ := vdo(context.Background(), addr(p), "CONFIG", "GET", "databases")
		if m, _ := r.StringMap(); m["databases"] != "32" {
			t.Fatalf("%s: databases %v", p.Name, m)
		}
		checkKeys(t, p, keys)
	}
	if prim.Name == oldPrimary {
		t.Fatalf("the primary %s was not switched over before its restart", oldPrimary)
	}
}

func TestE2EFailover(t *testing.T) {
	cl, ns, _ := readyCache(t, "vk-failover")
	prim := checkTopology(t, cl, ns, "cache")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Sampler: never two pods labelled primary.
	var mu sync.Mutex
	var violations []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			list := &corev1.PodList{}
			if cl.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(map[string]string{v1alpha1.LabelRole: v1alpha1.RolePrimary})) == nil && len(list.Items) > 1 {
				mu.Lock()
				violations = append(violations, fmt.Sprintf("%d pods labelled primary at %s", len(list.Items), time.Now().Format(time.RFC3339Nano)))
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	// Writer: writes to whichever pod is labelled primary; a write counts only when WAIT 1 acknowledged it.
	var acked []string
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			list := &corev1.PodList{}
			if cl.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(map[string]string{v1alpha1.LabelRole: v1alpha1.RolePrimary})) != nil || len(list.Items) != 1 {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			a := addr(list.Items[0])
			k := fmt.Sprintf("fo:%d", i)
			if _, err := vdo(ctx, a, "SET", k, "v"); err != nil {
				continue
			}
			if r, err := vdo(ctx, a, "WAIT", "1", "1000"); err == nil && r.Int >= 1 {
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(2 * time.Second)
	start := time.Now()
	if err := cl.Delete(context.Background(), &prim); err != nil {
		t.Fatal(err)
	}
	// A new primary within downAfter plus a margin.
	err := poll(context.Background(), 30*time.Second, func() (bool, error) {
		c := &v1alpha1.ValkeyCluster{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache"}, c); err != nil {
			return false, nil
		}
		return c.Status.Primary != "" && c.Status.Primary != prim.Name && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionPrimaryAvailable), nil
	})
	if err != nil {
		t.Fatalf("no new primary: %v", err)
	}
	t.Logf("new primary after %s", time.Since(start).Round(10*time.Millisecond))
	time.Sleep(3 * time.Second) // keep writing to the new primary
	cancel()
	wg.Wait()
	waitReady(t, cl, ns, "cache", 3*time.Minute)
	newPrim := checkTopology(t, cl, ns, "cache")
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("invariant violated: %v", violations)
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	checkKeys(t, newPrim, acked)
	t.Logf("%d acknowledged writes, none lost", len(acked))
}

// crashOperator kills the operator's process; its pod restarts it, and the new
// process takes the lease over once the old one expired.
func crashOperator(t testing.TB, cl client.Client) {
	t.Helper()
	ops := &corev1.PodList{}
	if err := cl.List(context.Background(), ops, client.InNamespace("valkey-operator-system"), client.MatchingLabels{"app.kubernetes.io/name": "valkey-operator"}); err != nil || len(ops.Items) == 0 {
		t.Fatalf("operator pod: %v", err)
	}
	for _, p := range ops.Items {
		if err := env.cluster.CrashContainer(context.Background(), local.PodRef{Namespace: p.Namespace, Name: p.Name}, "manager"); err != nil {
			t.Fatalf("crash the operator: %v", err)
		}
	}
}

// TestE2EOperatorRestart kills the operator in the middle of a bootstrap and in
// the middle of a rolling restart; the cluster still converges.
func TestE2EOperatorRestart(t *testing.T) {
	cl := setup(t)
	ns := namespace(t, cl, "vk-crash")
	create(t, cl, newCluster(ns, "cache", 3, nil))
	if err := poll(context.Background(), time.Minute, func() (bool, error) {
		return cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache"}, &appsv1.StatefulSet{}) == nil, nil
	}); err != nil {
		t.Fatal("the operator did not start reconciling")
	}
	crashOperator(t, cl) // mid-bootstrap
	waitReady(t, cl, ns, "cache", 4*time.Minute)
	keys := writeKeys(t, checkTopology(t, cl, ns, "cache"), "crash", 50)

	before := map[string]string{}
	for _, p := range pods(t, cl, ns, "cache") {
		before[p.Name] = string(p.UID)
	}
	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"databases": "20"} })
	if err := poll(context.Background(), 2*time.Minute, func() (bool, error) {
		for _, p := range pods(t, cl, ns, "cache") {
			if string(p.UID) != before[p.Name] {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatal("the rolling restart did not start")
	}
	crashOperator(t, cl) // mid-roll
	waitReady(t, cl, ns, "cache", 5*time.Minute)
	checkTopology(t, cl, ns, "cache")
	for _, p := range pods(t, cl, ns, "cache") {
		r, _ := vdo(context.Background(), addr(p), "CONFIG", "GET", "databases")
		if m, _ := r.StringMap(); m["databases"] != "20" {
			t.Fatalf("%s: databases %v", p.Name, m)
		}
		checkKeys(t, p, keys)
	}
}

func TestE2EBackupRestore(t *testing.T) {
	cl := setup(t)
	ns := namespace(t, cl, "vk-backup")
	create(t, cl, newCluster(ns, "src", 2, nil))
	waitReady(t, cl, ns, "src", 3*time.Minute)
	keys := writeKeys(t, checkTopology(t, cl, ns, "src"), "bk", 300)
	create(t, cl, &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: ns}, Spec: v1alpha1.ValkeyBackupSpec{ClusterName: "src"}})
	var b v1alpha1.ValkeyBackup
	if err := poll(context.Background(), 3*time.Minute, func() (bool, error) {
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "snap"}, &b); err != nil {
			return false, nil
		}
		if b.Status.Phase == v1alpha1.BackupFailed {
			return false, fmt.Errorf("backup failed: %s", b.Status.Message)
		}
		return b.Status.Phase == v1alpha1.BackupCompleted, nil
	}); err != nil {
		t.Fatalf("backup: %v (status %+v)", err, b.Status)
	}
	if b.Status.Size == 0 || !strings.HasPrefix(b.Status.Checksum, "sha256:") {
		t.Fatalf("backup status %+v", b.Status)
	}
	create(t, cl, newCluster(ns, "dst", 2, func(s *v1alpha1.ValkeyClusterSpec) {
		s.RestoreFrom = &v1alpha1.RestoreSource{BackupName: "snap"}
	}))
	c := waitReady(t, cl, ns, "dst", 4*time.Minute)
	if !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionRestored) {
		t.Fatalf("Restored: %+v", c.Status.Conditions)
	}
	checkTopology(t, cl, ns, "dst")
	for _, p := range pods(t, cl, ns, "dst") {
		checkKeys(t, p, keys)
	}
}

func TestE2EDeletionGC(t *testing.T) {
	cl := setup(t)
	ns := namespace(t, cl, "vk-gc")
	c := newCluster(ns, "cache", 2, nil)
	create(t, cl, c)
	waitReady(t, cl, ns, "cache", 3*time.Minute)
	if err := cl.Delete(context.Background(), c, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	err := poll(context.Background(), 2*time.Minute, func() (bool, error) {
		ctx := context.Background()
		for _, l := range []client.ObjectList{&appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}, &policyv1.PodDisruptionBudgetList{}, &corev1.PodList{}} {
			if err := cl.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstance: "cache"}); err != nil {
				return false, nil
			}
			if meta.LenList(l) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("sub-resources not garbage-collected: %v", err)
	}
}

// TestE2EPrimaryHang freezes the primary (SIGSTOP): it stops answering without
// its pod changing, so only the health checks can tell. A new primary must serve
// within downAfter plus a margin; when the old one thaws it still believes it is
// a master, and must be demoted, never labelled.
func TestE2EPrimaryHang(t *testing.T) {
	cl, ns, _ := readyCache(t, "vk-hang")
	prim := checkTopology(t, cl, ns, "cache")
	keys := writeKeys(t, prim, "hang", 100)
	ref := local.PodRef{Namespace: ns, Name: prim.Name}
	start := time.Now()
	if err := env.cluster.PauseContainer(context.Background(), ref, "valkey"); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = env.cluster.ResumeContainer(context.Background(), ref, "valkey")
		}
	}()
	downAfter := 3 * time.Second
	if err := poll(context.Background(), 30*time.Second, func() (bool, error) {
		c := &v1alpha1.ValkeyCluster{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache"}, c); err != nil {
			return false, nil
		}
		return c.Status.Primary != prim.Name && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionPrimaryAvailable), nil
	}); err != nil {
		t.Fatalf("no failover from a frozen primary: %v", err)
	}
	took := time.Since(start)
	t.Logf("failover from a frozen primary took %s (downAfter %s)", took.Round(10*time.Millisecond), downAfter)
	if took > downAfter+5*time.Second {
		t.Errorf("failover took %s, more than downAfter + 5s", took)
	}
	// Thaw the old primary: it reports master until the operator demotes it.
	if err := env.cluster.ResumeContainer(context.Background(), ref, "valkey"); err != nil {
		t.Fatal(err)
	}
	resumed = true
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		p := &corev1.Pod{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: prim.Name}, p); err == nil && p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			t.Fatalf("the thawed old primary %s is labelled primary", prim.Name)
		}
		if in, err := vdo(context.Background(), addr(prim), "INFO", "replication"); err == nil && strings.Contains(in.String(), "role:slave") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitReady(t, cl, ns, "cache", 2*time.Minute)
	newPrim := checkTopology(t, cl, ns, "cache")
	for _, p := range pods(t, cl, ns, "cache") {
		checkKeys(t, p, keys)
	}
	if newPrim.Name == prim.Name {
		t.Fatal("the frozen primary is primary again")
	}
}

// BenchmarkE2ECreateToReady measures the time from creating a 3-replica
// ValkeyCluster to Ready.
func BenchmarkE2ECreateToReady(b *testing.B) {
	cl := setup(b)
	ns := namespace(b, cl, "vk-bench-ready")
	var total time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("c%d", i)
		start := time.Now()
		create(b, cl, newCluster(ns, name, 3, nil))
		waitReady(b, cl, ns, name, 3*time.Minute)
		total += time.Since(start)
		_ = cl.Delete(context.Background(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-ready")
}

// BenchmarkE2EFailover measures the time from freezing the primary to a new
// primary serving (goal: downAfter + 2s; downAfter is 3s here).
func BenchmarkE2EFailover(b *testing.B) {
	cl := setup(b)
	ns := namespace(b, cl, "vk-bench-failover")
	create(b, cl, newCluster(ns, "cache", 3, nil))
	var total time.Duration
	for i := 0; i < b.N; i++ {
		waitReady(b, cl, ns, "cache", 3*time.Minute)
		prim := checkTopology(b, cl, ns, "cache")
		ref := local.PodRef{Namespace: ns, Name: prim.Name}
		start := time.Now()
		if err := env.cluster.PauseContainer(context.Background(), ref, "valkey"); err != nil {
			b.Fatal(err)
		}
		err := poll(context.Background(), time.Minute, func() (bool, error) {
			c := &v1alpha1.ValkeyCluster{}
			if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache"}, c); err != nil {
				return false, nil
			}
			return c.Status.Primary != prim.Name && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionPrimaryAvailable), nil
		})
		total += time.Since(start)
		_ = env.cluster.ResumeContainer(context.Background(), ref, "valkey")
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-new-primary")
}

// BenchmarkE2EOperatorMemory10Clusters reports the operator's resident memory
// (its own metrics endpoint) with ten 3-replica clusters Ready.
func BenchmarkE2EOperatorMemory10Clusters(b *testing.B) {
	cl := setup(b)
	ns := namespace(b, cl, "vk-bench-mem")
	for i := 0; i < 10; i++ {
		create(b, cl, newCluster(ns, fmt.Sprintf("m%d", i), 3, nil))
	}
	for i := 0; i < 10; i++ {
		waitReady(b, cl, ns, fmt.Sprintf("m%d", i), 10*time.Minute)
	}
	var rss float64
	for i := 0; i < b.N; i++ {
		rss = operatorRSS(b, cl)
	}
	b.ReportMetric(rss/(1<<20), "MiB-operator-RSS")
}

// operatorRSS reads process_resident_memory_bytes from the operator's metrics.
func operatorRSS(t testing.TB, cl client.Client) float64 {
	t.Helper()
	ops := &corev1.PodList{}
	if err := cl.List(context.Background(), ops, client.InNamespace("valkey-operator-system"), client.MatchingLabels{"app.kubernetes.io/name": "valkey-operator"}); err != nil || len(ops.Items) == 0 {
		t.Fatalf("operator pod: %v", err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + net.JoinHostPort(ops.Items[0].Status.PodIP, "8080") + "/metrics")
	if err != nil {
		t.Fatalf("operator metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatal("no process_resident_memory_bytes in the operator's metrics")
	return 0
}
