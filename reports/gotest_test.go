package reports

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want []any
		err  bool
	}{
		{in: "spec.replicas", want: []any{"spec", "replicas"}},
		{in: ".spec.replicas", want: []any{"spec", "replicas"}},
		{in: "$.spec", want: []any{"spec"}},
		{in: "spec.template.spec.containers[0].image", want: []any{"spec", "template", "spec", "containers", 0, "image"}},
		{in: `metadata.labels["app.kubernetes.io/name"]`, want: []any{"metadata", "labels", "app.kubernetes.io/name"}},
		{in: `metadata.annotations['a]b']`, want: []any{"metadata", "annotations", "a]b"}},
		{in: `data["with \"quote\" and ]"]`, want: []any{"data", `with "quote" and ]`}},
		{in: "metadata.labels[app.kubernetes.io/name]", want: []any{"metadata", "labels", "app.kubernetes.io/name"}},
		{in: "spec.containers[name=valkey].image", want: []any{"spec", "containers", PathSelector{"name", "valkey"}, "image"}},
		{in: "items[1][2]", want: []any{"items", 1, 2}},
		{in: "/spec/containers/0/image", want: []any{"spec", "containers", 0, "image"}},
		{in: "/metadata/labels/app.kubernetes.io~1name", want: []any{"metadata", "labels", "app.kubernetes.io/name"}},
		{in: "/data/a~0b/007", want: []any{"data", "a~b", "007"}},
		{in: "", err: true},
		{in: "spec..replicas", err: true},
		{in: "spec.", err: true},
		{in: "spec[0", err: true},
		{in: "spec[]", err: true},
		{in: `spec["bad`, err: true},
	}
	for _, tc := range tests {
		got, err := ParsePath(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("ParsePath(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePath(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}

// nastyReproducer puts hostile strings everywhere a campaign string reaches
// the generated source.
func nastyReproducer() Reproducer {
	spec := func(replicas int) model.Object {
		return model.Object{
			"apiVersion": vkGroup + "/v1alpha1",
			"kind":       "ValkeyCluster",
			"metadata": map[string]any{
				"name": "vk", "namespace": "gauntlet-w0",
				"resourceVersion": "123", "uid": "u", "managedFields": []any{"x"},
				"annotations": map[string]any{nasty: nasty},
			},
			"spec": map[string]any{
				"replicas": replicas,
				"config":   map[string]any{"maxmemory": "64mb", "notify-keyspace-events": nasty},
				nasty:      []any{nasty, 1.5, true, nil},
			},
			"status": map[string]any{"phase": "Ready"},
		}
	}
	return Reproducer{
		Name:      "consistency-5901e243ab35 " + nasty,
		Package:   "e2e",
		CRD:       CRDRef{Group: vkGroup, Version: "v1alpha1", Kind: "ValkeyCluster", Resource: "valkeyclusters"},
		Namespace: "gauntlet-w0",
		Steps:     []model.Object{spec(3), spec(1), spec(3)},
		Recreate:  []int{1},
		Oracle:    "consistency",
		Signature: "consistency-5901e243ab35",
		Summary:   "spec.config is not applied: " + nasty,
		Check:     "the ConfigMap carries every spec.config key */ " + nasty,
		Evidence: []model.Evidence{
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: `data["valkey.conf"]`, Expected: "maxmemory 64mb\n" + nasty, Actual: "maxmemory 0"},
			{Object: stsKey, Path: "spec.template.spec.containers[name=valkey].env[0].value", Expected: nasty},
			{Path: "spec.replicas", Expected: 3, Actual: 1},
			{Detail: "log line only, nothing to assert: " + nasty},
			{Path: "status.phase", Actual: "Failed"}, // no expected value: not asserted
		},
		ConvergeTimeout: 90 * time.Second,
		Quiet:           1500 * time.Millisecond,
	}
}

func healthReproducer() Reproducer {
	return Reproducer{
		Name:      "health pods crash after config change",
		Package:   "e2e",
		CRD:       CRDRef{Group: vkGroup, Version: "v1alpha1", Kind: "ValkeyCluster"},
		Namespace: "gauntlet-w1",
		Steps: []model.Object{{
			"metadata": map[string]any{"name": "vk"},
			"spec":     map[string]any{"replicas": 3, "config": map[string]any{"io-threads": "4"}},
		}},
		Oracle:    "health",
		Signature: "health-b1db3c0a6609",
		Summary:   "valkey containers restart in a loop",
		Evidence:  []model.Evidence{{Object: "/v1/Pod/gauntlet-w1/vk-0", Detail: "CrashLoopBackOff"}},
	}
}

// nastyPod is a hostile pod name (no "/", which WriteGoTest rejects in a pod name).
var nastyPod = strings.ReplaceAll(nasty, "/", "")

// podKillReproducer kills pods twice: the replica before the second desired
// state is declared, then the primary (and a hostile name) on the converged
// state of a fault step.
func podKillReproducer() Reproducer {
	r := healthReproducer()
	r.Name = "health after pod kill"
	spec := func(replicas int) model.Object {
		return model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": replicas}}
	}
	r.Steps = []model.Object{spec(3), spec(2), spec(2)}
	r.Faults = map[int][]ReproFault{
		1: {{Kind: PodKillFault, Pods: []string{"vk-2"}, Before: true}},
		2: {{Kind: PodKillFault, Pods: []string{"vk-0", nastyPod}}},
	}
	r.ConvergeTimeout = 2 * time.Minute
	return r
}

// partitionReproducer needs a partition held across its second desired state.
func partitionReproducer() Reproducer {
	r := healthReproducer()
	r.Name = "health under partition"
	r.Steps = append(r.Steps, model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": 5}})
	r.Faults = map[int][]ReproFault{
		1: {{Kind: "partition", Pods: []string{"vk-2"}, Before: true}, {Kind: PodKillFault, Pods: []string{"vk-0"}}},
	}
	r.ReplayDir = "results/alarms/3"
	return r
}

func generate(t *testing.T, r Reproducer) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteGoTest(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriteGoTestSafeSource(t *testing.T) {
	r := nastyReproducer()
	src := generate(t, r)
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		t.Fatal("generated source is not valid UTF-8 without NUL bytes")
	}
	if again, err := format.Source(src); err != nil || !bytes.Equal(again, src) {
		t.Fatalf("generated source is not gofmt-clean (err %v)", err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "gen_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("generated source does not parse: %v\n%s", err, src)
	}
	if f.Name.Name != "e2e" {
		t.Errorf("package %s, want e2e", f.Name.Name)
	}
	// Every comment is a line comment that the campaign's text cannot end early.
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if !strings.HasPrefix(c.Text, "//") || strings.ContainsAny(c.Text, "\n\x00") {
				t.Errorf("comment %q could be broken by campaign text", c.Text)
			}
		}
	}
	// The test function and its helper type are named after the reproducer.
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Recv == nil {
			fn = d
		}
	}
	if fn == nil || !strings.HasPrefix(fn.Name.Name, "TestReproduceConsistency5901e243ab35Script") {
		t.Fatalf("test function %v", fn)
	}
	// Decode the desired states back from the source: each is a concatenation
	// of quoted lines; together they must equal the cleaned objects.
	var desired []map[string]any
	var strs []string
	ast.Inspect(fn, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Errorf("literal %s: %v", lit.Value, err)
				}
				strs = append(strs, s)
			}
			return true
		}
		if id, ok := kv.Key.(*ast.Ident); !ok || id.Name != "desired" {
			return true
		}
		var b strings.Builder
		var concat func(e ast.Expr)
		concat = func(e ast.Expr) {
			switch e := e.(type) {
			case *ast.BinaryExpr:
				concat(e.X)
				concat(e.Y)
			case *ast.BasicLit:
				s, err := strconv.Unquote(e.Value)
				if err != nil {
					t.Fatalf("literal %s: %v", e.Value, err)
				}
				b.WriteString(s)
			default:
				t.Fatalf("desired state is not a string literal: %T", e)
			}
		}
		concat(kv.Value)
		var obj map[string]any
		if err := json.Unmarshal([]byte(b.String()), &obj); err != nil {
			t.Fatalf("desired state is not JSON: %v\n%s", err, b.String())
		}
		desired = append(desired, obj)
		return true
	})
	if len(desired) != len(r.Steps) {
		t.Fatalf("found %d desired states, want %d", len(desired), len(r.Steps))
	}
	for i, got := range desired {
		want := map[string]any{}
		b, _ := json.Marshal(r.Steps[i])
		_ = json.Unmarshal(b, &want)
		delete(want, "status")
		want["metadata"] = map[string]any{"name": "vk", "annotations": map[string]any{nasty: nasty}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("step %d desired state came back as\n%v\nwant\n%v", i, got, want)
		}
	}
	// The expected values and names are literals too.
	for _, want := range []string{
		mustJSON(t, "maxmemory 64mb\n"+nasty), mustJSON(t, nasty), "3",
		"vk-config", "vk", "valkey.conf", "valkeyclusters", "gauntlet-w0",
		"consistency alarm consistency-5901e243ab35: spec.config is not applied: " + nasty,
	} {
		if !contains(strs, want) {
			t.Errorf("no string literal %q in the generated test", want)
		}
	}
	// Three field checks (the detail-only and expected-less evidence assert nothing),
	// no health check, one recreate.
	for _, c := range []struct {
		sub  string
		want int
	}{
		{"r.expectField(ctx, t,", 3},
		{"r.expectHealthy(ctx, t)\n", 0},
		{"recreate: true", 1},
		{"[2]string{\"name\", \"valkey\"}", 1},
		{"convergeTimeout: 90 * time.Second", 1},
		{"quiet:           1500 * time.Millisecond", 1},
	} {
		if n := strings.Count(string(src), c.sub); n != c.want {
			t.Errorf("generated test has %d × %q, want %d", n, c.sub, c.want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestWriteGoTestHealth(t *testing.T) {
	src := string(generate(t, healthReproducer()))
	if !strings.Contains(src, "func TestReproduceHealthPodsCrashAfterConfigChange(t *testing.T)") {
		t.Error("test name not derived from the reproducer's name")
	}
	if strings.Count(src, "r.expectHealthy(ctx, t)\n") != 1 || strings.Contains(src, "r.expectField(ctx, t,") {
		t.Error("health reproducer must assert pod health and nothing else")
	}
	if !strings.Contains(src, `resource:        "",`) || !strings.Contains(src, "5 * time.Minute") || !strings.Contains(src, "5 * time.Second") {
		t.Error("defaults (discovered resource, 5m timeout, 5s quiet window) not applied")
	}
	if !strings.Contains(src, `"apiVersion": \"valkey.gauntlet.dev/v1alpha1\"`) && !strings.Contains(src, `\"apiVersion\": \"valkey.gauntlet.dev/v1alpha1\"`) {
		t.Error("apiVersion not filled in from the CRD")
	}
}

const goTestGolden = "testdata/reproduce_health_test.go.golden"

// TestWriteGoTestGolden pins the generated file for review; -update rewrites it.
func TestWriteGoTestGolden(t *testing.T) {
	got := generate(t, healthReproducer())
	if *update {
		if err := os.WriteFile(goTestGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goTestGolden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generated test differs from %s (run with -update if intended):\n%s", goTestGolden, firstDiff(string(want), string(got)))
	}
}

func TestWriteGoTestErrors(t *testing.T) {
	base := healthReproducer
	tests := []struct {
		name   string
		modify func(*Reproducer)
		want   string
		is     error
	}{
		{"package keyword", func(r *Reproducer) { r.Package = "func" }, "not a Go identifier", nil},
		{"package with dash", func(r *Reproducer) { r.Package = "my-tests" }, "not a Go identifier", nil},
		{"no steps", func(r *Reproducer) { r.Steps = nil }, "at least one step", nil},
		{"no namespace", func(r *Reproducer) { r.Namespace = "" }, "namespace", nil},
		{"no kind", func(r *Reproducer) { r.CRD.Kind = "" }, "kind", nil},
		{"nameless CR", func(r *Reproducer) { r.Steps = []model.Object{{"spec": map[string]any{}}} }, "metadata.name", nil},
		{"recreate out of range", func(r *Reproducer) { r.Recreate = []int{3} }, "outside", nil},
		{"nothing to assert", func(r *Reproducer) { r.Oracle = "stability" }, "nothing to assert", ErrNoInvariant},
		{"bad object key", func(r *Reproducer) {
			r.Oracle = "consistency"
			r.Evidence = []model.Evidence{{Object: "StatefulSet/vk", Path: "spec.replicas", Expected: 3}}
		}, "not a group/version/Kind/namespace/name key", nil},
		{"bad path", func(r *Reproducer) {
			r.Oracle = "consistency"
			r.Evidence = []model.Evidence{{Path: "spec..replicas", Expected: 3}}
		}, "empty segment", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.modify(&r)
			var buf bytes.Buffer
			err := WriteGoTest(&buf, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteGoTest = %v, want an error containing %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v is not %v", err, tc.is)
			}
			if buf.Len() != 0 {
				t.Fatal("wrote output despite the error")
			}
		})
	}
}

func TestGoTestFileName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"consistency-5901e243ab35", "reproduce_consistency_5901e243ab35_test.go"},
		{"Health Pods/Crash", "reproduce_health_pods_crash_test.go"},
		{nasty, "reproduce_script_alert_x_script_quoted_back_newline_nul_n_c_d_amp_test.go"},
		{"", "reproduce_alarm_test.go"},
	}
	for _, tc := range tests {
		if got := GoTestFileName(Reproducer{Name: tc.name}); got != tc.want {
			t.Errorf("GoTestFileName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestGeneratedTestCompiles writes four generated tests (one with pod kills,
// one that needs a partition) into one temporary
// package inside this module (so client-go resolves through the module's own
// go.mod) and runs go vet on it: the files compile, type-check and share a
// package without clashing. The folder starts with "_" so that concurrent
// "./..." patterns never pick it up; it is removed afterwards.
func TestGeneratedTestCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping go vet of generated tests (compiles client-go)")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to compile the generated test with")
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("internal", "_gentest_tmp_"+hex.EncodeToString(rnd[:]))
	if err := os.MkdirAll(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(rel); err != nil {
			t.Errorf("remove %s: %v", rel, err)
		}
		_ = os.Remove("internal") // only when empty
	})
	for _, r := range []Reproducer{nastyReproducer(), healthReproducer(), podKillReproducer(), partitionReproducer()} {
		if err := os.WriteFile(filepath.Join(rel, GoTestFileName(r)), generate(t, r), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, "vet", "./"+rel)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go vet on the generated tests: %v\n%s", err, out)
	}
	// Without a cluster the generated tests skip, saying why.
	cmd = exec.Command(goBin, "test", "-count=1", "-v", "./"+rel)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off", "KUBECONFIG=")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test on the generated tests without KUBECONFIG: %v\n%s", err, out)
	}
	// The one that needs a partition skips for that, even with a KUBECONFIG.
	if n := strings.Count(string(out), "--- SKIP: TestReproduce"); n != 4 || strings.Count(string(out), "KUBECONFIG is not set") != 3 ||
		strings.Count(string(out), "needs the fault partition, which plain client-go cannot inject") != 1 {
		t.Fatalf("want four generated tests skipped (three for lack of KUBECONFIG, one for its partition), got:\n%s", out)
	}
	cmd = exec.Command(goBin, "test", "-count=1", "-v", "-run", "TestReproduceHealthUnderPartition", "./"+rel)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off", "KUBECONFIG=/nonexistent/kubeconfig")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- SKIP: TestReproduceHealthUnderPartition") || !strings.Contains(string(out), "gauntlet reproduce results/alarms/3") {
		t.Fatalf("the partition reproducer did not skip with a KUBECONFIG set: %v\n%s", err, out)
	}
}

// testFunc parses generated source and returns its TestReproduce function.
func testFunc(t *testing.T, src []byte) *ast.FuncDecl {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "gen_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("generated source does not parse: %v\n%s", err, src)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "TestReproduce") {
			return fn
		}
	}
	t.Fatal("no TestReproduce function")
	return nil
}

// skipMessage is the message of the t.Skip call that opens fn, if it does.
func skipMessage(t *testing.T, fn *ast.FuncDecl) (string, bool) {
	t.Helper()
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return "", false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Skip" || len(call.Args) != 1 {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok {
		t.Fatalf("t.Skip's argument is not a literal")
	}
	msg, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return msg, true
}

func TestWriteGoTestFaults(t *testing.T) {
	const cannot = ", which plain client-go cannot inject: replay it with `gauntlet reproduce "
	tests := []struct {
		name     string
		r        Reproducer
		skip     string // "" when the test must not skip
		kills    bool
		contains []string
	}{
		{
			name:  "pod kills run with client-go",
			r:     podKillReproducer(),
			kills: true,
			contains: []string{
				"killBefore: []string{\"vk-2\"},",
				"killAfter: []string{\"vk-0\", " + strconv.Quote(nastyPod) + "},",
				"before := r.killPods(ctx, t, i, s.killBefore)",
				"GracePeriodSeconds: &zero",
				`"k8s.io/apimachinery/pkg/types"`,
				"time.Duration(len(steps)+2+" + strconv.Itoa(1+3+2+3) + ")*r.convergeTimeout",
				"// Fault \"pod-kill\" on pods [\"vk-2\"], before its desired state is declared.",
			},
		},
		{
			name:     "a partition skips, honestly",
			r:        partitionReproducer(),
			skip:     "this reproducer needs the fault partition" + cannot + "results/alarms/3`",
			kills:    true,
			contains: []string{"// Fault \"partition\" on pods [\"vk-2\"], before its desired state is declared."},
		},
		{
			name: "several kinds, no replay folder",
			r: func() Reproducer {
				r := partitionReproducer()
				r.ReplayDir = ""
				r.Faults[0] = []ReproFault{{Kind: "operator-crash", Before: true}, {Kind: "partition"}}
				r.Faults[1] = []ReproFault{{Kind: nasty}}
				return r
			}(),
			skip:     "this reproducer needs the faults operator-crash, partition and " + nasty + cannot + "<dir>`",
			contains: []string{"// Fault \"operator-crash\", before its desired state is declared."},
		},
		{
			name: "no fault",
			r:    healthReproducer(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := generate(t, tc.r)
			fn := testFunc(t, src)
			msg, skipped := skipMessage(t, fn)
			if skipped != (tc.skip != "") || msg != tc.skip {
				t.Errorf("test opens with t.Skip(%q) (%v), want %q", msg, skipped, tc.skip)
			}
			if got := strings.Contains(string(src), "func (r *reproduce"+camel(tc.r.Name)+") killPods("); got != tc.kills {
				t.Errorf("pod-kill helpers generated: %v, want %v", got, tc.kills)
			}
			for _, want := range tc.contains {
				if !strings.Contains(string(src), want) {
					t.Errorf("generated test lacks %q", want)
				}
			}
			wantSkips := 1 // KUBECONFIG unset
			if tc.skip != "" {
				wantSkips++
			}
			if n := strings.Count(string(src), "t.Skip("); n != wantSkips {
				t.Errorf("%d t.Skip calls, want %d (the KUBECONFIG one, and the fault's as the first statement)", n, wantSkips)
			}
		})
	}
	// The hostile pod name comes back intact from its literal.
	src := generate(t, podKillReproducer())
	var found bool
	ast.Inspect(testFunc(t, src), func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && v == nastyPod {
				found = true
			}
		}
		return true
	})
	if !found {
		t.Error("the hostile pod name is not a literal of the generated test")
	}
}

func TestWriteGoTestFaultErrors(t *testing.T) {
	tests := []struct {
		name   string
		faults map[int][]ReproFault
		want   string
	}{
		{"step out of range", map[int][]ReproFault{5: {{Kind: PodKillFault, Pods: []string{"vk-0"}}}}, "outside the 2 step(s)"},
		{"negative step", map[int][]ReproFault{-1: {{Kind: "partition"}}}, "outside"},
		{"no kind", map[int][]ReproFault{1: {{Pods: []string{"vk-0"}}}}, "kind is empty"},
		{"kill without pods", map[int][]ReproFault{1: {{Kind: PodKillFault}}}, "names no pod"},
		{"namespaced pod", map[int][]ReproFault{1: {{Kind: PodKillFault, Pods: []string{"gauntlet-w0/vk-0"}}}}, "not a pod name"},
		{"empty pod", map[int][]ReproFault{1: {{Kind: "partition", Pods: []string{""}}}}, "not a pod name"},
		{"kill before anything exists", map[int][]ReproFault{0: {{Kind: PodKillFault, Pods: []string{"vk-0"}, Before: true}}}, "before the first desired state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := partitionReproducer()
			r.Faults = tc.faults
			var buf bytes.Buffer
			err := WriteGoTest(&buf, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteGoTest = %v, want an error containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Fatal("wrote output despite the error")
			}
		})
	}
}

func TestReproFaultFrom(t *testing.T) {
	tests := []struct {
		in     model.Fault
		before bool
		want   ReproFault
		ok     bool
	}{
		{model.Fault{Kind: "pod-kill", Targets: []string{"primary gauntlet-w0/vk-0"}}, false, ReproFault{Kind: "pod-kill", Pods: []string{"vk-0"}}, true},
		{model.Fault{Kind: "partition", Targets: []string{"gauntlet-w0/vk-1", "vk-2", " "}, Persistent: true}, true, ReproFault{Kind: "partition", Pods: []string{"vk-1", "vk-2"}, Before: true}, true},
		{model.Fault{Kind: "operator-crash", Targets: []string{"operator gauntlet-system/op-7d9"}}, true, ReproFault{Kind: "operator-crash", Pods: []string{"op-7d9"}, Before: true}, true},
		{model.Fault{Kind: "pod-failure", Targets: []string{"replica ns/vk-1"}, Unsupported: "no"}, false, ReproFault{}, false},
	}
	for _, tc := range tests {
		got, ok := ReproFaultFrom(tc.in, tc.before)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ReproFaultFrom(%+v) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

const podKillGolden = "testdata/reproduce_podkill_test.go.golden"

// TestWriteGoTestPodKillGolden pins a generated test with pod kills for review.
func TestWriteGoTestPodKillGolden(t *testing.T) {
	r := podKillReproducer()
	r.Faults[2][0].Pods = []string{"vk-0"} // keep the golden file readable
	got := generate(t, r)
	if *update {
		if err := os.WriteFile(podKillGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(podKillGolden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generated test differs from %s (run with -update if intended):\n%s", podKillGolden, firstDiff(string(want), string(got)))
	}
}
