package view_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/targets"
	"github.com/gauntlet-dev/gauntlet/view"
)

// The end-to-end tests share one embedded cluster with the bundled Valkey
// operator deployed behind the view proxy, as a campaign with OperatorView does.
var env struct {
	once   sync.Once
	root   string
	c      *local.Cluster
	d      *campaign.Deployment
	k      *replay.Kube
	target *targets.Target
	proxy  *kubernetes.Clientset // a client that goes through the proxy
	// proxyCfg and directCfg are one service account's client configuration
	// through the proxy and straight to the API server.
	proxyCfg, directCfg *rest.Config
	skip                string
	err                 error
}

func TestMain(m *testing.M) {
	if local.Init() {
		return
	}
	code := m.Run()
	if env.d != nil {
		env.d.Stop()
	}
	if env.c != nil {
		if err := env.c.Delete(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "delete the view e2e cluster:", err)
			code = 1
		}
	}
	if env.root != "" {
		os.RemoveAll(env.root)
	}
	os.Exit(code)
}

func logger() *slog.Logger {
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func setup(t testing.TB) {
	t.Helper()
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	repo, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bin := operatorbin.Path(repo)
	testenv.NeedFile(t, bin, "build it with `make build`, or set "+operatorbin.Env)
	env.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		env.target, env.err = targets.Resolve("valkey", repo)
		if env.err != nil {
			return
		}
		if env.root, env.err = os.MkdirTemp("", "gauntlet-view-e2e-"); env.err != nil {
			return
		}
		c, err := local.Create(ctx, local.Options{Name: "view-e2e", StateRoot: env.root, OperatorBinary: bin, MappingRules: env.target.ImageMapping, Log: logger()})
		if err != nil {
			env.skip = fmt.Sprintf("the embedded cluster did not come up: %v", err)
			return
		}
		env.c = c
		if env.d, env.err = campaign.Deploy(ctx, c, env.target, logger(), campaign.WithOperatorView()); env.err != nil {
			return
		}
		if env.k, env.err = replay.NewKube(c.RESTConfig(), c.Name(), logger()); env.err != nil {
			return
		}
		env.proxyCfg, env.directCfg, env.err = tokenConfigs(ctx, env.k.Clientset(), env.d.View(), c.RESTConfig())
		if env.err == nil {
			env.proxy, env.err = kubernetes.NewForConfig(env.proxyCfg)
		}
	})
	if env.skip != "" {
		testenv.Unavailable(t, "%s", env.skip)
	}
	if env.err != nil {
		t.Fatal(env.err)
	}
	env.d.View().SetRules(view.Rules{})
}

// tokenConfigs are a cluster-admin service account's client configurations
// through the proxy and straight to the API server (the proxy passes the
// caller's credentials: a client certificate would end at its TLS).
func tokenConfigs(ctx context.Context, cs kubernetes.Interface, p *view.Proxy, admin *rest.Config) (proxied, direct *rest.Config, err error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "view-e2e", Namespace: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-e2e"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "view-e2e", Namespace: "default"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "view-e2e", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, err
	}
	tls := rest.TLSClientConfig{CAData: admin.CAData}
	return &rest.Config{Host: p.URL(), BearerToken: tr.Status.Token, TLSClientConfig: tls, QPS: -1},
		&rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: tls, QPS: -1}, nil
}

// records is a JSON-lines sink the proxy writes while the test reads it.
type records struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *records) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *records) list(t *testing.T) []view.Record {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []view.Record
	sc := bufio.NewScanner(bytes.NewReader(r.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec view.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a record that is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

func (r *records) find(t *testing.T, ok func(view.Record) bool) (view.Record, bool) {
	for _, rec := range r.list(t) {
		if ok(rec) {
			return rec, true
		}
	}
	return view.Record{}, false
}

func recordTo(t *testing.T) *records {
	r := &records{}
	if err := env.d.View().SetRecord(r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.d.View().SetRecord(nil) })
	return r
}

// declare creates namespace ns and the target's seed with replicas 1 in it.
func declare(ctx context.Context, t *testing.T, ns string) map[string]any {
	t.Helper()
	if err := env.k.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cr := jsonv.CopyMap(env.target.Seed)
	if err := unstructured.SetNestedField(cr, int64(1), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := env.k.Declare(ctx, cr, ns, false); err != nil {
		t.Fatalf("declare the custom resource: %v", err)
	}
	return cr
}

// waitReady waits until the custom resource's Ready condition is True for its
// current generation.
func waitReady(ctx context.Context, t *testing.T, cr map[string]any, ns string) {
	t.Helper()
	u := unstructured.Unstructured{Object: cr}
	var last string
	err := replay.Poll(ctx, 5*time.Minute, func() (bool, error) {
		obj, err := env.k.Lookup(ctx, u.GetAPIVersion(), u.GetKind(), ns, u.GetName())
		if err != nil || obj == nil {
			last = fmt.Sprint("not found: ", err)
			return false, nil
		}
		gen, _, _ := unstructured.NestedInt64(obj, "metadata", "generation")
		og, ok := replay.ObservedGeneration(obj)
		status, reason := replay.Condition(obj, "Ready")
		last = fmt.Sprintf("generation %d, observed %d (%v), Ready %s %s", gen, og, ok, status, reason)
		return ok && og == gen && status == "True", nil
	})
	if err != nil {
		t.Fatalf("the custom resource in %s did not become Ready (%s): %v\noperator log:\n%s", ns, last, err, tail(env.d.OperatorLog(ctx, time.Now().Add(-10*time.Minute)), 40))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// operatorPod is the operator's running pod.
func operatorPod(ctx context.Context, t *testing.T) corev1.Pod {
	t.Helper()
	pods, err := env.k.Clientset().CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p
		}
	}
	t.Fatalf("no running operator pod among %d", len(pods.Items))
	return corev1.Pod{}
}

func restarts(p corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// TestE2EViewPassThrough runs the bundled operator through the proxy with no
// perturbation: its pods are pointed at the proxy, a custom resource converges,
// and the proxy saw the operator's watch events and writes, and changed nothing.
func TestE2EViewPassThrough(t *testing.T) {
	setup(t)
	ctx := context.Background()
	rec := recordTo(t)
	pod := operatorPod(ctx, t)
	host, port, _ := net.SplitHostPort(env.d.View().Addr())
	var gotHost, gotPort string
	for _, e := range pod.Spec.Containers[0].Env {
		switch e.Name {
		case "KUBERNETES_SERVICE_HOST":
			gotHost = e.Value
		case "KUBERNETES_SERVICE_PORT":
			gotPort = e.Value
		}
	}
	if gotHost != host || gotPort != port {
		t.Fatalf("the operator's pod is pointed at %s:%s, want the proxy %s", gotHost, gotPort, env.d.View().Addr())
	}
	cr := declare(ctx, t, "view-pass")
	waitReady(ctx, t, cr, "view-pass")

	if _, ok := rec.find(t, func(r view.Record) bool {
		return r.What == "watch-event" && r.Resource == "valkeyclusters" && r.Namespace == "view-pass" && r.Action == "passed"
	}); !ok {
		t.Errorf("the proxy recorded no watch event of the custom resource: the operator does not watch through it")
	}
	if _, ok := rec.find(t, func(r view.Record) bool {
		return r.What == "request" && r.Verb == "create" && r.Resource == "statefulsets" && r.Namespace == "view-pass" && r.Status == 201
	}); !ok {
		t.Errorf("the proxy recorded no StatefulSet creation in view-pass: the operator's writes do not go through it")
	}
	for _, r := range rec.list(t) {
		if r.Action != "passed" {
			t.Errorf("pass-through mode changed something: %+v", r)
		}
	}
}

// TestE2EViewWithholdsDelete shows that a withheld DELETED event never reaches a
// watch through the proxy while a direct watch sees it, and that later events
// still do.
func TestE2EViewWithholdsDelete(t *testing.T) {
	setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := "view-withhold"
	if err := env.k.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	rec := recordTo(t)
	env.d.View().SetRules(view.Rules{Withhold: []view.EventMatch{{Resource: "configmaps", Namespace: ns, Type: "DELETED"}}})
	direct, err := env.k.Clientset().CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Stop()
	proxied, err := env.proxy.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Stop()
	cms := env.k.Clientset().CoreV1().ConfigMaps(ns)
	for _, step := range []func() error{
		func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{})
			return err
		},
		func() error { return cms.Delete(ctx, "gone", metav1.DeleteOptions{}) },
		func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"ADDED gone", "DELETED gone", "ADDED marker"}
	if got := events(ctx, t, direct, 3); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("direct watch saw %v, want %v", got, want)
	}
	// The proxy keeps the order of what it passes: once the marker's ADDED came
	// through, a delete it had passed would have come before it.
	want = []string{"ADDED gone", "ADDED marker"}
	if got := events(ctx, t, proxied, 2); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("watch through the proxy saw %v, want %v (the delete withheld)", got, want)
	}
	if r, ok := rec.find(t, func(r view.Record) bool { return r.What == "watch-event" && r.Action == "withheld" }); !ok || r.Type != "DELETED" || r.Name != "gone" {
		t.Errorf("withheld record = %+v (found %v), want the DELETED of gone", r, ok)
	}
}

// events reads n events of a watch as "TYPE name".
func events(ctx context.Context, t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %v", out)
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Name != "kube-root-ca.crt" {
				out = append(out, string(ev.Type)+" "+cm.Name)
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %d events, saw %v: %v", n, out, ctx.Err())
		}
	}
	return out
}

// TestE2EViewLaggedReads shows reads through a lagging proxy answered as the
// cluster was before an object was created, and watch events held back until
// the lag is lifted.
func TestE2EViewLaggedReads(t *testing.T) {
	setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := "view-lag"
	if err := env.k.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	rec := recordTo(t)
	pcms := env.proxy.CoreV1().ConfigMaps(ns)
	cms := env.k.Clientset().CoreV1().ConfigMaps(ns)
	// The proxy sees the cluster's revision now (a list answer's version).
	if _, err := pcms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := time.Now()
	// The view's point moves with the clock: reads made within `slack` of
	// setting the lag below still name a revision from before the creation.
	const slack = 15 * time.Second
	time.Sleep(slack)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.d.View().SetRules(view.Rules{Lag: time.Since(seen)})
	if _, err := pcms.Get(ctx, "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lagged get of a config map created after the view's point: err = %v, want NotFound", err)
	}
	list, err := pcms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if cm.Name == "new" {
			t.Errorf("lagged list holds a config map created after the view's point")
		}
	}
	if _, err := cms.Get(ctx, "new", metav1.GetOptions{}); err != nil {
		t.Fatalf("direct get: %v", err)
	}
	if _, ok := rec.find(t, func(r view.Record) bool {
		return r.Verb == "get" && r.Name == "new" && r.Action == "lagged" && r.Status == 404
	}); !ok {
		t.Errorf("no record of the lagged get answered 404")
	}
	// An informer (client-go's reflector, streaming lists on) started through
	// the lagging proxy — as a restarted operator's — syncs the old view.
	inf := informers.NewSharedInformerFactoryWithOptions(env.proxy, 0, informers.WithNamespace(ns)).Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	go inf.Run(stop)
	synced := cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	_, exists, _ := inf.GetStore().GetByKey(ns + "/new")
	close(stop)
	if !synced || exists {
		t.Errorf("an informer through the lagging proxy: synced %v, holds the config map created after the view's point %v; want synced without it", synced, exists)
	}
	if _, ok := rec.find(t, func(r view.Record) bool { return r.Verb == "watch" && r.Status == 400 && r.Action == "lagged" }); !ok {
		t.Errorf("no record of the streaming list refused while the lag holds")
	}

	// Watch events are held while the lag lasts.
	env.d.View().SetRules(view.Rules{Lag: 10 * time.Minute})
	cur, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Stop()
	proxied, err := pcms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := events(ctx, t, direct, 1); got[0] != "ADDED later" {
		t.Fatalf("direct watch saw %v, want ADDED later", got)
	}
	select {
	case ev := <-proxied.ResultChan():
		t.Fatalf("the lagging proxy delivered %s at once", ev.Type)
	case <-time.After(2 * time.Second):
	}
	env.d.View().SetRules(view.Rules{})
	if got := events(ctx, t, proxied, 1); got[0] != "ADDED later" {
		t.Errorf("after the lag was lifted the proxied watch saw %v, want ADDED later", got)
	}
	if r, ok := rec.find(t, func(r view.Record) bool { return r.What == "watch-event" && r.Name == "later" }); !ok || r.Action != "delayed" {
		t.Errorf("record of the held event = %+v (found %v), want action delayed", r, ok)
	}
}

// TestE2EViewCrashAfterWrite cuts the operator right after it created its
// first StatefulSet: the write landed, the operator is restarted, and the
// custom resource still converges.
func TestE2EViewCrashAfterWrite(t *testing.T) {
	setup(t)
	ctx := context.Background()
	rec := recordTo(t)
	before := restarts(operatorPod(ctx, t))
	env.d.View().SetRules(view.Rules{CrashAfter: &view.WriteMatch{Verb: "create", Resource: "statefulsets", Namespace: "view-crash"}})
	cr := declare(ctx, t, "view-crash")
	err := replay.Poll(ctx, 3*time.Minute, func() (bool, error) {
		_, ok := rec.find(t, func(r view.Record) bool { return r.What == "restart" })
		return ok, nil
	})
	if err != nil {
		t.Fatalf("no restart recorded after the StatefulSet's creation: %v", err)
	}
	cut, ok := rec.find(t, func(r view.Record) bool { return r.What == "request" && r.Action == "cut" })
	if !ok || cut.Verb != "create" || cut.Resource != "statefulsets" || cut.Status != 201 {
		t.Errorf("the cut request = %+v (found %v), want the StatefulSet's creation, accepted (201)", cut, ok)
	}
	if r, _ := rec.find(t, func(r view.Record) bool { return r.What == "restart" }); r.Action != "restarted" {
		t.Errorf("restart record = %+v", r)
	}
	sts, err := env.k.Clientset().AppsV1().StatefulSets("view-crash").List(ctx, metav1.ListOptions{})
	if err != nil || len(sts.Items) == 0 {
		t.Fatalf("the StatefulSet whose creation preceded the cut is not there (%v)", err)
	}
	waitReady(ctx, t, cr, "view-crash")
	if after := restarts(operatorPod(ctx, t)); after <= before {
		t.Errorf("operator restarts went from %d to %d, want at least one more", before, after)
	}
}
