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

	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
)

// The reproducer's types, as the tests name them.
type (
	Reproducer = replay.Reproducer
	CRDRef     = replay.CRDRef
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
		{in: "metadata.labels[app.kubernetes.io/name]", err: true}, // a key in brackets is quoted
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
		Target:    "/home/me/targets/" + nasty + ".yaml",
		CRD:       CRDRef{Group: vkGroup, Version: "v1alpha1", Kind: "ValkeyCluster", Resource: "valkeyclusters"},
		Namespace: "gauntlet-w0",
		Seed:      spec(3),
		Steps: []replay.Step{
			{Kind: model.StepRecreate, Desired: spec(1), Recreate: true},
			{Kind: model.StepApply, Desired: spec(3)},
		},
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
		Target:    "builtin:valkey",
		CRD:       CRDRef{Group: vkGroup, Version: "v1alpha1", Kind: "ValkeyCluster"},
		Namespace: "gauntlet-w1",
		Seed: model.Object{
			"metadata": map[string]any{"name": "vk"},
			"spec":     map[string]any{"replicas": 3, "config": map[string]any{"io-threads": "4"}},
		},
		Oracle:    "health",
		Signature: "health-b1db3c0a6609",
		Summary:   "valkey containers restart in a loop",
		Evidence:  []model.Evidence{{Object: "/v1/Pod/gauntlet-w1/vk-0", Detail: "CrashLoopBackOff"}},
	}
}

// podKillReproducer kills pods in two fault steps: a replica of the seed's
// state, then the primary of the next desired state's (with a hostile
// recorded target in its comment).
func podKillReproducer() Reproducer {
	r := healthReproducer()
	r.Name = "health after pod kill"
	spec := func(replicas int) model.Object {
		return model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": replicas}}
	}
	r.Seed = spec(3)
	r.Steps = []replay.Step{
		{Kind: model.StepFault, Desired: spec(3), Fault: &replay.FaultPlan{Kind: replay.FaultPodKill, Role: "replica", Pick: 7}},
		{Kind: model.StepApply, Desired: spec(2)},
		{Kind: model.StepFault, Desired: spec(2), Fault: &replay.FaultPlan{Kind: replay.FaultPodKill, Role: "primary", Pick: 40961},
			Faults: []model.Fault{{Kind: replay.FaultPodKill, Targets: []string{"primary gauntlet-w1/vk-0 " + nasty}}}},
	}
	r.ConvergeTimeout = 2 * time.Minute
	return r
}

// partitionReproducer holds a partition across its second desired state,
// with a pod kill of the primary while it holds, then crashes the operator
// mid-reconcile.
func partitionReproducer() Reproducer {
	r := healthReproducer()
	r.Name = "health under partition"
	r.Steps = []replay.Step{
		{Kind: model.StepApply, Desired: model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": 5}},
			Fault: &replay.FaultPlan{Kind: replay.FaultPartition, Role: "replica", Pick: 2, Persistent: true, Hold: 8 * time.Second,
				Then: &replay.FaultPlan{Kind: replay.FaultPodKill, Role: "primary"}, After: 1500 * time.Millisecond}},
		{Kind: model.StepApply, Desired: model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": 3}},
			Fault: &replay.FaultPlan{Kind: replay.FaultOperatorCrash, Role: replay.RoleOperator, Pick: 1, Persistent: true, Delay: 734 * time.Millisecond}},
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

// decoded is a generated test read back: its function's name and the
// Reproducer literal it hands to testkit.Run, evaluated.
type decoded struct {
	Func  string
	Repro Reproducer
}

// decodeGoTest parses generated source, checks its shape (one TestReproduce
// function whose body is the single call testkit.Run(t, testkit.Reproducer{…}))
// and evaluates the literal: string literals and their concatenations,
// integers, booleans, durations (N * time.Unit), testkit.MustObject and
// testkit.MustJSON calls, and composite literals of the testkit types.
func decodeGoTest(t *testing.T, src []byte) decoded {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "gen_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("generated source does not parse: %v\n%s", err, src)
	}
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok {
			if fn != nil || d.Recv != nil || !strings.HasPrefix(d.Name.Name, "TestReproduce") {
				t.Fatalf("want a single TestReproduce function, found %s too", d.Name.Name)
			}
			fn = d
		}
	}
	if fn == nil || len(fn.Body.List) != 1 {
		t.Fatalf("want a TestReproduce function with one statement")
	}
	call, ok := fn.Body.List[0].(*ast.ExprStmt).X.(*ast.CallExpr)
	if !ok || selector(call.Fun) != "testkit.Run" || len(call.Args) != 2 {
		t.Fatalf("the test's statement is not testkit.Run(t, …)")
	}
	lit, ok := call.Args[1].(*ast.CompositeLit)
	if !ok || selector(lit.Type) != "testkit.Reproducer" {
		t.Fatalf("testkit.Run's argument is not a testkit.Reproducer literal")
	}
	var r Reproducer
	evalInto(t, lit, reflect.ValueOf(&r).Elem())
	return decoded{Func: fn.Name.Name, Repro: r}
}

func selector(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := s.X.(*ast.Ident); ok {
			return x.Name + "." + s.Sel.Name
		}
	}
	return ""
}

var durationType = reflect.TypeOf(time.Duration(0))

// evalInto evaluates e into v (of v's type).
func evalInto(t *testing.T, e ast.Expr, v reflect.Value) {
	t.Helper()
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND && v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		evalInto(t, u.X, p.Elem())
		v.Set(p)
		return
	}
	if lit, ok := e.(*ast.CompositeLit); ok {
		switch v.Kind() {
		case reflect.Struct:
			for _, el := range lit.Elts {
				kv := el.(*ast.KeyValueExpr)
				name := kv.Key.(*ast.Ident).Name
				fv := v.FieldByName(name)
				if !fv.IsValid() {
					t.Fatalf("%s has no field %s", v.Type(), name)
				}
				evalInto(t, kv.Value, fv)
			}
		case reflect.Slice:
			s := reflect.MakeSlice(v.Type(), len(lit.Elts), len(lit.Elts))
			for i, el := range lit.Elts {
				evalInto(t, el, s.Index(i))
			}
			v.Set(s)
		case reflect.Map:
			m := reflect.MakeMap(v.Type())
			for _, el := range lit.Elts {
				kv := el.(*ast.KeyValueExpr)
				k, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				evalInto(t, kv.Key, k)
				evalInto(t, kv.Value, val)
				m.SetMapIndex(k, val)
			}
			v.Set(m)
		default:
			t.Fatalf("composite literal for a %s", v.Type())
		}
		return
	}
	x := evalValue(t, e)
	switch {
	case v.Type() == durationType:
		v.SetInt(int64(x.(time.Duration)))
	case v.Kind() == reflect.Interface:
		v.Set(reflect.ValueOf(x))
	default:
		v.Set(reflect.ValueOf(x).Convert(v.Type()))
	}
}

// evalValue evaluates a scalar expression of the generated source.
func evalValue(t *testing.T, e ast.Expr) any {
	t.Helper()
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.STRING:
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				t.Fatalf("literal %s: %v", e.Value, err)
			}
			return s
		case token.INT:
			n, err := strconv.Atoi(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	case *ast.Ident:
		switch e.Name {
		case "true", "false":
			return e.Name == "true"
		}
	case *ast.BinaryExpr:
		x, y := evalValue(t, e.X), evalValue(t, e.Y)
		switch e.Op {
		case token.ADD:
			return x.(string) + y.(string)
		case token.MUL:
			return time.Duration(x.(int)) * y.(time.Duration)
		}
	case *ast.SelectorExpr:
		switch selector(e) {
		case "time.Minute":
			return time.Minute
		case "time.Second":
			return time.Second
		case "time.Millisecond":
			return time.Millisecond
		}
	case *ast.CallExpr:
		if len(e.Args) == 1 {
			arg, _ := evalValue(t, e.Args[0]).(string)
			var v any
			if err := json.Unmarshal([]byte(arg), &v); err != nil {
				t.Fatalf("%s argument is not JSON: %v", selector(e.Fun), err)
			}
			switch selector(e.Fun) {
			case "testkit.MustObject":
				return model.Object(v.(map[string]any))
			case "testkit.MustJSON":
				return v
			}
		}
	}
	t.Fatalf("unexpected expression %T in the generated test", e)
	return nil
}

// jsonEqual compares two values as JSON.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	var x, y any
	ab, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(ab, &x)
	_ = json.Unmarshal(bb, &y)
	return reflect.DeepEqual(x, y)
}

// TestWriteGoTestRoundTrip generates tests from hostile, health and pod-kill
// reproducers, evaluates the literal each hands to testkit.Run, and requires
// the reproducer back: every campaign string intact, the desired states as
// CleanDesired makes them, the timing defaults filled in and the package
// name gone (it is the file's).
func TestWriteGoTestRoundTrip(t *testing.T) {
	for _, r := range []Reproducer{nastyReproducer(), healthReproducer(), podKillReproducer(), partitionReproducer()} {
		t.Run(r.Name, func(t *testing.T) {
			src := generate(t, r)
			if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
				t.Fatal("generated source is not valid UTF-8 without NUL bytes")
			}
			if again, err := format.Source(src); err != nil || !bytes.Equal(again, src) {
				t.Fatalf("generated source is not gofmt-clean (err %v)", err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), "gen_test.go", src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			// Every comment is a line comment that the campaign's text cannot end early.
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					if !strings.HasPrefix(c.Text, "//") || strings.ContainsAny(c.Text, "\n\x00") {
						t.Errorf("comment %q could be broken by campaign text", c.Text)
					}
				}
			}
			if want := []string{`"testing"`, `"time"`, `"github.com/gauntlet-dev/gauntlet/testkit"`}; len(f.Imports) != len(want) {
				t.Errorf("imports %d packages, want %v", len(f.Imports), want)
			}
			if f.Name.Name != r.Package {
				t.Errorf("package %s, want %s", f.Name.Name, r.Package)
			}
			d := decodeGoTest(t, src)
			if d.Func != "TestReproduce"+camel(r.Name) {
				t.Errorf("test function %s", d.Func)
			}
			want := r.WithDefaults()
			want.Package = ""
			seed, err := replay.CleanDesired(r.Seed, r.CRD)
			if err != nil {
				t.Fatal(err)
			}
			want.Seed, want.Steps = seed, nil
			for _, s := range r.Steps {
				c, err := replay.CleanDesired(s.Desired, r.CRD)
				if err != nil {
					t.Fatal(err)
				}
				s.Desired, s.Faults = c, nil // the recorded faults are comments
				want.Steps = append(want.Steps, s)
			}
			got := d.Repro
			for _, x := range []struct {
				what      string
				got, want any
			}{{"seed", got.Seed, want.Seed}, {"steps", got.Steps, want.Steps}, {"evidence", got.Evidence, want.Evidence}} {
				if !jsonEqual(t, x.got, x.want) {
					t.Errorf("%s came back as\n%v\nwant\n%v", x.what, x.got, x.want)
				}
			}
			got.Seed, want.Seed, got.Steps, want.Steps, got.Evidence, want.Evidence = nil, nil, nil, nil, nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reproducer came back as\n%#v\nwant\n%#v", got, want)
			}
			// The test asserts what the reproducer's Assertion says, nothing else.
			ga, err1 := AssertionOf(d.Repro)
			wa, err2 := AssertionOf(r)
			if err1 != nil || err2 != nil || !jsonEqual(t, ga, wa) {
				t.Errorf("assertion of the decoded reproducer %+v (%v), want %+v (%v)", ga, err1, wa, err2)
			}
		})
	}
}

func TestWriteGoTestLiteral(t *testing.T) {
	src := string(generate(t, nastyReproducer()))
	for _, want := range []string{
		"func TestReproduceConsistency5901e243ab35Script",
		`CRD:       testkit.CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster", Resource: "valkeyclusters"},`,
		"Recreate: true,",
		`// Step 1 ("recreate"): the custom resource is deleted and re-created with it.`,
		`Path: "spec.template.spec.containers[name=valkey].env[0].value"`,
		`{Path: "spec.replicas", Expected: testkit.MustJSON("3"), Actual: testkit.MustJSON("1")},`,
		"ConvergeTimeout: 90 * time.Second,",
		"Quiet:           1500 * time.Millisecond,",
		"testkit.Run(t, testkit.Reproducer{",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated test lacks %q", want)
		}
	}
	if strings.Contains(src, "ReplayDir") || strings.Contains(src, "Fault:") {
		t.Error("empty ReplayDir or Fault written")
	}
	if n := strings.Count(src, "testkit.MustObject("); n != 3 {
		t.Errorf("%d desired states, want 3", n)
	}
}

func TestWriteGoTestHealth(t *testing.T) {
	src := string(generate(t, healthReproducer()))
	for _, want := range []string{
		"func TestReproduceHealthPodsCrashAfterConfigChange(t *testing.T)",
		`Target:    "builtin:valkey",`,
		`CRD:       testkit.CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"},`,
		"ConvergeTimeout: 5 * time.Minute,",
		"Quiet:           5 * time.Second,",
		`"  \"apiVersion\": \"valkey.gauntlet.dev/v1alpha1\",\n"`,
		`// Check:     "every pod in the namespace is Running and Ready, and no container restarted"`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated test lacks %q", want)
		}
	}
}

const goTestGolden = "testdata/reproduce_health_test.go.golden"

// TestWriteGoTestGolden pins the generated file for review; -update rewrites it.
func TestWriteGoTestGolden(t *testing.T) {
	got := generate(t, healthReproducer())
	golden.Check(t, goTestGolden, got, *update)
}

func TestAssertion(t *testing.T) {
	health, err := AssertionOf(healthReproducer())
	if err != nil || !health.Health || len(health.Values) != 0 || health.Check != "every pod in the namespace is Running and Ready, and no container restarted" {
		t.Errorf("health assertion %+v, %v", health, err)
	}
	a, err := AssertionOf(nastyReproducer())
	if err != nil {
		t.Fatal(err)
	}
	// The CR's own spec.replicas names no field where 3 should show: nothing to check for it.
	want := []ValueCheck{
		{Expected: json.RawMessage(mustJSON(t, "maxmemory 64mb\n"+nasty)), Fields: []FieldRef{{
			Object: model.ObjectKey{Version: "v1", Kind: "ConfigMap", Namespace: "gauntlet-w0", Name: "vk-config"},
			Path:   `data["valkey.conf"]`, Segments: []any{"data", "valkey.conf"}}}},
		{Expected: json.RawMessage(mustJSON(t, nasty)), Fields: []FieldRef{{
			Object:   model.ObjectKey{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "gauntlet-w0", Name: "vk"},
			Path:     "spec.template.spec.containers[name=valkey].env[0].value",
			Segments: []any{"spec", "template", "spec", "containers", PathSelector{"name", "valkey"}, "env", 0, "value"}}}},
	}
	for i := range a.Values {
		for j := range a.Values[i].Fields {
			if a.Values[i].Fields[j].Evidence == "" {
				t.Errorf("value %d field %d has no evidence line", i, j)
			}
			a.Values[i].Fields[j].Evidence = ""
		}
	}
	if a.Health || a.Check != nastyReproducer().Check || !reflect.DeepEqual(a.Values, want) {
		t.Errorf("consistency assertion\n%+v\nwant\n%+v", a, want)
	}

	// As the consistency oracle writes an overruled config key: the CR's
	// property first, then the fields where it should show, one of which must.
	r := healthReproducer()
	r.Oracle = ConsistencyOracle
	r.Check = ""
	r.Evidence = []model.Evidence{
		{Object: crKey, Path: `spec.config["maxmemory-policy"]`, Expected: "noeviction", Detail: "desired \"noeviction\"; previously \"allkeys-lru\""},
		{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: `data["valkey.conf"]`, Expected: "noeviction", Actual: "allkeys-lru", Detail: "this field sets maxmemory-policy"},
		{Object: stsKey, Path: "spec.template.metadata.annotations.policy", Expected: "noeviction", Actual: "x", Detail: "closest field by name"},
	}
	a, err = AssertionOf(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Values) != 1 || a.Values[0].Property != `spec.config["maxmemory-policy"]` || a.Values[0].Key != "maxmemory-policy" ||
		string(a.Values[0].Expected) != `"noeviction"` || len(a.Values[0].Fields) != 2 || a.Values[0].Fields[1].Object.Kind != "StatefulSet" ||
		a.Check != "the state reflects the desired value in one of the fields the alarm names" {
		t.Errorf("overruled config key: %+v", a)
	}
	// Nothing but the CR's own property, or another oracle: the oracles judge
	// the replay and the signature must not fire.
	r.Evidence = r.Evidence[:1]
	if a, err := AssertionOf(r); err != nil || !a.Judge || a.Signature != r.Signature || a.Oracle != "consistency" || len(a.Values) != 0 || a.Health {
		t.Errorf("CR evidence only: %+v, %v; want the oracles to judge", a, err)
	}
	for _, o := range []string{"differential", "availability", "system-state", "split-brain", "durability"} {
		r := nastyReproducer()
		r.Oracle, r.Check = o, ""
		a, err := AssertionOf(r)
		if err != nil || !a.Judge || a.Oracle != o || a.Signature != r.Signature || !strings.Contains(a.Check, "raise no "+o+" alarm "+r.Signature) {
			t.Errorf("oracle %q: %+v, %v; want the oracles to judge", o, a, err)
		}
	}
	for _, r := range []Reproducer{{Oracle: "split-brain"}, {Signature: "split-brain-1"}} {
		if _, err := AssertionOf(r); !errors.Is(err, ErrNoInvariant) {
			t.Errorf("%+v: %v, want ErrNoInvariant", r, err)
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

func TestCleanDesired(t *testing.T) {
	in := model.Object{
		"metadata": map[string]any{"name": "vk", "namespace": "w0", "uid": "u", "resourceVersion": "7", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"replicas": 1},
		"status":   map[string]any{"phase": "Ready"},
	}
	got, err := replay.CleanDesired(in, CRDRef{Group: vkGroup, Version: "v1alpha1", Kind: "ValkeyCluster"})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Object{
		"apiVersion": vkGroup + "/v1alpha1", "kind": "ValkeyCluster",
		"metadata": map[string]any{"name": "vk", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"replicas": 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CleanDesired = %v, want %v", got, want)
	}
	if _, ok := in["status"]; !ok {
		t.Error("CleanDesired changed its input")
	}
	core, err := replay.CleanDesired(model.Object{"metadata": map[string]any{"name": "x"}}, CRDRef{Version: "v1", Kind: "ConfigMap"})
	if err != nil || core["apiVersion"] != "v1" {
		t.Errorf("core group: %v, %v", core, err)
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
		{"no seed", func(r *Reproducer) { r.Seed = nil }, "no seed", nil},
		{"no namespace", func(r *Reproducer) { r.Namespace = "" }, "namespace", nil},
		{"no kind", func(r *Reproducer) { r.CRD.Kind = "" }, "kind", nil},
		{"nameless CR", func(r *Reproducer) {
			r.Steps = []replay.Step{{Kind: model.StepApply, Desired: model.Object{"spec": map[string]any{}}}}
		}, "step 1: desired state has no metadata.name", nil},
		{"unknown fault", func(r *Reproducer) {
			r.Steps = []replay.Step{{Kind: model.StepFault, Desired: r.Seed, Fault: &replay.FaultPlan{Kind: "meteor", Role: "pod"}}}
		}, `step 1: unknown fault kind "meteor"`, nil},
		{"nothing to assert", func(r *Reproducer) { r.Oracle, r.Signature = "stability", "" }, "nothing to assert", ErrNoInvariant},
		{"bad object key", func(r *Reproducer) {
			r.Oracle = "consistency"
			r.Evidence = []model.Evidence{{Object: "StatefulSet/vk", Path: "spec.replicas", Expected: 3}}
		}, "not a group/version/Kind/namespace/name key", nil},
		{"bad path", func(r *Reproducer) {
			r.Oracle = "consistency"
			r.Evidence = []model.Evidence{{Path: "spec..replicas", Expected: 3}}
		}, "empty field name", nil},
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
			if tc.name != "package keyword" && tc.name != "package with dash" {
				if verr := ValidateGoTest(r); verr == nil || !strings.Contains(verr.Error(), tc.want) {
					t.Errorf("Validate = %v, want the same error", verr)
				}
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
// one that needs a partition) into one temporary package inside this module
// (so the test kit and client-go resolve through the module's own go.mod) and
// runs go vet on it: the files compile, type-check against the testkit
// package and share a package without clashing. It then runs them with
// -short and no KUBECONFIG, where none may start a cluster: all four skip for
// -short, none for its faults. The folder starts with "_" so
// that concurrent "./..." patterns never pick it up; it is removed afterwards.
// (campaign's TestE2EGeneratedGoTest runs a generated test for real.)
func TestGeneratedTestCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping go vet of generated tests (compiles the test kit)")
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
	env := append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off", "KUBECONFIG=", "CI=", "GAUNTLET_REQUIRE_E2E=")
	cmd := exec.Command(goBin, "vet", "./"+rel)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go vet on the generated tests: %v\n%s", err, out)
	}
	cmd = exec.Command(goBin, "test", "-short", "-count=1", "-v", "./"+rel)
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -short on the generated tests: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "--- SKIP: TestReproduce"); n != 4 || strings.Count(string(out), "[short] starts real components") != 4 {
		t.Fatalf("want four generated tests skipped for -short (none for its faults), got:\n%s", out)
	}
}

func TestWriteGoTestFaults(t *testing.T) {
	src := string(generate(t, podKillReproducer()))
	for _, want := range []string{
		`Fault: &testkit.FaultPlan{Kind: "pod-kill", Role: "replica", Pick: 7},`,
		`Fault: &testkit.FaultPlan{Kind: "pod-kill", Role: "primary", Pick: 40961},`,
		`// Fault "pod-kill" on the "replica", on the state its desired state converged to.`,
		`// Fault "pod-kill" on the "primary", on the state its desired state converged to; the recorded run hit ["primary gauntlet-w1/vk-0 ` + strings.Trim(strconv.Quote(nasty), `"`) + `"].`,
		"ConvergeTimeout: 2 * time.Minute,",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated test lacks %q", want)
		}
	}
	src = string(generate(t, partitionReproducer()))
	for _, want := range []string{
		`Fault: &testkit.FaultPlan{Kind: "partition", Role: "replica", Pick: 2, Persistent: true, Hold: 8 * time.Second, Then: &testkit.FaultPlan{Kind: "pod-kill", Role: "primary", Pick: 0}, After: 1500 * time.Millisecond},`,
		`Fault: &testkit.FaultPlan{Kind: "operator-crash", Role: "operator", Pick: 1, Persistent: true, Delay: 734 * time.Millisecond},`,
		`// Fault "operator-crash" on the "operator", 734ms after its desired state is declared.`,
		`ReplayDir:       "results/alarms/3",`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated test lacks %q", want)
		}
	}
}

const podKillGolden = "testdata/reproduce_podkill_test.go.golden"

// TestWriteGoTestPodKillGolden pins a generated test with pod kills for review.
func TestWriteGoTestPodKillGolden(t *testing.T) {
	r := podKillReproducer()
	r.Steps[2].Faults[0].Targets = []string{"primary gauntlet-w1/vk-0"} // keep the golden file readable
	got := generate(t, r)
	golden.Check(t, podKillGolden, got, *update)
}
