package oracles

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

func TestParsePathRoundTrip(t *testing.T) {
	cases := []struct{ in, out string }{
		{"spec.replicas", "spec.replicas"},
		{"spec.template.spec.containers[0].image", "spec.template.spec.containers[0].image"},
		{`metadata.labels["app.kubernetes.io/name"]`, `metadata.labels["app.kubernetes.io/name"]`},
		{`data["valkey.conf"]`, `data["valkey.conf"]`},
		{"spec.tolerations[*].key", "spec.tolerations[*].key"},
		{"spec.config{*}", "spec.config{*}"},
		{"spec.config.*", "spec.config{*}"},
		{"**.lastTransitionTime", "**.lastTransitionTime"},
		{"status.*Time", "status.*Time"},
		{"/spec/replicas", "spec.replicas"},
		{"/metadata/labels/app.kubernetes.io~1name", `metadata.labels["app.kubernetes.io/name"]`},
		{"", ""},
	}
	for _, c := range cases {
		p, err := jsonv.ParsePath(c.in)
		if err != nil {
			t.Errorf("jsonv.ParsePath(%q): %v", c.in, err)
			continue
		}
		if got := p.String(); got != c.out {
			t.Errorf("jsonv.ParsePath(%q).String() = %q, want %q", c.in, got, c.out)
		}
	}
	for _, bad := range []string{"spec..replicas", "spec.", "a[x]", `a["x"`, "a[-1]", "a[1"} {
		if _, err := jsonv.ParsePath(bad); err == nil {
			t.Errorf("jsonv.ParsePath(%q) succeeded, want an error", bad)
		}
	}
}

func TestMatchPath(t *testing.T) {
	cases := []struct {
		pat, path string
		prefix    bool
		want      bool
	}{
		{"spec.replicas", "spec.replicas", false, true},
		{"spec", "spec.replicas", true, true},
		{"spec", "spec.replicas", false, false},
		{"spec.containers[*].image", "spec.containers[3].image", false, true},
		{"spec.containers[1].image", "spec.containers[3].image", false, false},
		{"**.lastTransitionTime", "status.conditions[2].lastTransitionTime", false, true},
		{"**", "a.b", false, true},
		{"status.*Time", "status.startTime", false, true},
		{"status.*Time", "status.phase", false, false},
		{"spec.config{*}", "spec.config.maxmemory", false, true},
		{"/spec/tolerations/0", "spec.tolerations[0]", false, true},
	}
	for _, c := range cases {
		got := jsonv.Match(jsonv.MustPath(c.pat), jsonv.MustPath(c.path), c.prefix)
		if got != c.want {
			t.Errorf("jsonv.Match(%q, %q, prefix=%v) = %v, want %v", c.pat, c.path, c.prefix, got, c.want)
		}
	}
}

func decode(t *testing.T, s string) model.Object {
	t.Helper()
	var o model.Object
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestMask(t *testing.T) {
	pod := `{"kind":"Pod","metadata":{"name":"cache-0","uid":"u1","labels":{"a.b/c":"x","keep":"y"}},
		"spec":{"nodeName":"n1","containers":[{"name":"valkey","image":"i"},{"name":"exporter","image":"e"}]},
		"status":{"podIP":"10.0.0.1","startTime":"2025-03-01T10:00:05Z","conditions":[{"type":"Ready","lastTransitionTime":"2025-03-01T10:01:12Z"}]}}`
	cases := []struct {
		name  string
		masks []string
		want  string
	}{
		{"nothing", nil, pod},
		{"field everywhere", []string{"metadata.uid"}, strings.Replace(pod, `"uid":"u1",`, "", 1)},
		{"quoted key", []string{`metadata.labels["a.b/c"]`}, strings.Replace(pod, `"a.b/c":"x",`, "", 1)},
		{"kind scoped", []string{"Pod/*/spec.nodeName", "Service/*/spec"}, strings.Replace(pod, `"nodeName":"n1",`, "", 1)},
		{"name glob", []string{"Pod/cache-*/status.podIP"}, strings.Replace(pod, `"podIP":"10.0.0.1",`, "", 1)},
		{"name glob elsewhere", []string{"Pod/web-*/status.podIP"}, pod},
		{"list elements", []string{"spec.containers[*].image"}, strings.Replace(strings.Replace(pod, `,"image":"i"`, "", 1), `,"image":"e"`, "", 1)},
		{"deep", []string{"**.lastTransitionTime"}, strings.Replace(pod, `,"lastTransitionTime":"2025-03-01T10:01:12Z"`, "", 1)},
		{"timestamps", []string{MaskTimestamps}, strings.ReplaceAll(strings.ReplaceAll(pod, "2025-03-01T10:00:05Z", "<timestamp>"), "2025-03-01T10:01:12Z", "<timestamp>")},
		{"invalid mask ignored", []string{"spec..x"}, pod},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := decode(t, pod)
			before := decode(t, pod)
			got := Mask(in, c.masks)
			if !reflect.DeepEqual(in, before) {
				t.Fatal("Mask modified its input")
			}
			if want := decode(t, c.want); !reflect.DeepEqual(got, want) {
				gb, _ := json.Marshal(got)
				t.Errorf("Mask = %s\nwant   %s", gb, c.want)
			}
		})
	}
	if got := Mask(decode(t, pod), []string{"Pod/cache-*"}); got != nil {
		t.Errorf("whole-object mask: got %v, want nil", got)
	}
}

func TestValidateMasks(t *testing.T) {
	if err := ValidateMasks(append(DefaultMasks(), "Pod/*", "*/x/spec.a", "Pod/cache-[0-9]/status")); err != nil {
		t.Errorf("valid masks rejected: %v", err)
	}
	for _, bad := range []string{"", "Pod//spec", "spec..a", "Pod/[/spec", "Pod/x/a[y]"} {
		if err := ValidateMasks([]string{bad}); err == nil {
			t.Errorf("ValidateMasks(%q) = nil, want an error", bad)
		}
	}
}

func TestDiff(t *testing.T) {
	a := `{"kind":"StatefulSet","metadata":{"name":"cache","uid":"a","resourceVersion":"1"},
		"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"valkey","image":"v1"},{"name":"exporter","image":"e"}]}}},
		"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"}]}}`
	cases := []struct {
		name  string
		b     string
		masks []string
		want  []Change
	}{
		{"identical", a, nil, nil},
		{"identity masked", strings.NewReplacer(`"uid":"a"`, `"uid":"b"`, `"resourceVersion":"1"`, `"resourceVersion":"9"`).Replace(a), DefaultMasks(), nil},
		{"number forms", strings.Replace(a, `"replicas":3`, `"replicas":3.0`, 1), nil, nil},
		{"value changed", strings.Replace(a, `"image":"v1"`, `"image":"v2"`, 1), nil,
			[]Change{{Path: "spec.template.spec.containers[0].image", A: "v1", B: "v2"}}},
		{"keyed list reordered", strings.Replace(a, `[{"name":"valkey","image":"v1"},{"name":"exporter","image":"e"}]`, `[{"name":"exporter","image":"e"},{"name":"valkey","image":"v1"}]`, 1), nil, nil},
		{"keyed list element removed", strings.Replace(a, `,{"type":"B","status":"True"}`, "", 1), nil,
			[]Change{{Path: "status.conditions[1]", A: map[string]any{"type": "B", "status": "True"}}}},
		{"field added", strings.Replace(a, `"replicas":3`, `"replicas":3,"paused":true`, 1), nil,
			[]Change{{Path: "spec.paused", B: true}}},
		{"masked by kind", strings.Replace(a, `"replicas":3`, `"replicas":5`, 1), []string{"StatefulSet/cache/spec.replicas"}, nil},
		{"whole object masked", strings.Replace(a, `"replicas":3`, `"replicas":5`, 1), []string{"StatefulSet/*"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Diff(decode(t, a), decode(t, c.b), c.masks)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Diff = %#v\nwant   %#v", got, c.want)
			}
		})
	}
	if got := Diff(nil, decode(t, `{"a":1}`), nil); len(got) != 1 || got[0].Path != "a" {
		t.Errorf("Diff(nil, obj) = %#v", got)
	}
}

func TestGeneralizePath(t *testing.T) {
	cases := map[string]string{
		"spec.containers[0].image":        "spec.containers[*].image",
		`metadata.labels["a.b/c"]`:        `metadata.labels["a.b/c"]`,
		"status.conditions[12].reason":    "status.conditions[*].reason",
		"not..a.path":                     "not..a.path",
		"spec.volumes[3].configMap.items": "spec.volumes[*].configMap.items",
	}
	for in, want := range cases {
		if got := GeneralizePath(in); got != want {
			t.Errorf("GeneralizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEquivalent(t *testing.T) {
	cases := []struct {
		d, v any
		want bool
	}{
		{"1Gi", "1073741824", true},
		{"1Gi", "1024Mi", true},
		{"1Gi", "1G", false},
		{"500m", "0.5", true},
		{3.0, "3", true},
		{int64(3), 3.0, true},
		{json.Number("3"), "3", true},
		{true, "true", true},
		{true, "True", true},
		{false, "true", false},
		{"1m", "60s", true},
		{"1s", "1000ms", true},
		{"100mb", "100mb", true},
		{"100mb", "104857600", false},
		{"50%", "50%", true},
		{"valkey/valkey:8.1", "valkey/valkey:8.0", false},
		{nil, nil, true},
		{"", nil, false},
	}
	for _, c := range cases {
		if got := equivalent(c.d, c.v); got != c.want {
			t.Errorf("equivalent(%#v, %#v) = %v, want %v", c.d, c.v, got, c.want)
		}
	}
}

func TestContains(t *testing.T) {
	cases := []struct {
		d, v string
		want bool
	}{
		{`{"limits":{"memory":"1Gi"}}`, `{"limits":{"memory":"1024Mi","cpu":"1"}}`, true},
		{`{"limits":{"memory":"2Gi"}}`, `{"limits":{"memory":"1Gi"}}`, false},
		{`[{"key":"a","effect":"NoSchedule"}]`, `[{"key":"b"},{"key":"a","effect":"NoSchedule","operator":"Equal"}]`, true},
		{`[{"key":"a"}]`, `[{"key":"b"}]`, false},
		{`{"a":""}`, `{}`, true},
	}
	for _, c := range cases {
		var d, v any
		_ = json.Unmarshal([]byte(c.d), &d)
		_ = json.Unmarshal([]byte(c.v), &v)
		if got := contains(d, v); got != c.want {
			t.Errorf("contains(%s, %s) = %v, want %v", c.d, c.v, got, c.want)
		}
	}
}

func TestLineValue(t *testing.T) {
	conf := "# comment maxmemory 1\nport 6379\nmaxmemory 100mb\nsave \"\"\nmaxmemory-policy allkeys-lru\nMaxClients=20\n--loglevel=debug\ntimeout: 30\nmaxmemory 200mb\n"
	cases := []struct {
		key, want string
		ok        bool
	}{
		{"maxmemory", "200mb", true}, // the last line wins
		{"maxmemory-policy", "allkeys-lru", true},
		{"save", "", true},
		{"maxclients", "20", true},
		{"loglevel", "debug", true},
		{"timeout", "30", true},
		{"appendonly", "", false},
		{"", "", false},
	}
	cases = append(cases, struct {
		key, want string
		ok        bool
	}{"replica-announce-ip", "10.0.0.1", true})
	conf += "exec valkey-server /etc/valkey.conf --replica-announce-ip 10.0.0.1 --port=6379\n"
	for _, c := range cases {
		got, ok := lineValue(conf, c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("lineValue(%q) = %q, %v; want %q, %v", c.key, got, ok, c.want, c.ok)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{
		OperatorSelector: map[string]string{"app": "op"},
		LogPatterns:      []string{`level":"error`},
		Mappings:         []Mapping{{Property: "spec.image", Kind: "StatefulSet", Name: "cache*", Field: "spec.template.spec.containers[*].image"}},
		Skip:             []string{"spec.failover"},
		MapProperties:    []string{"spec.config"},
		Masks:            []string{"Pod/*/status.podIP"},
		TolerateExtra:    []string{"PersistentVolumeClaim/data-*"},
	}
	if err := good.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	cases := []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"regexp", Config{LogPatterns: []string{"("}}, "log pattern"},
		{"skip", Config{Skip: []string{"a..b"}}, "skip"},
		{"mapping incomplete", Config{Mappings: []Mapping{{Property: "spec.image"}}}, "mapping 0"},
		{"mapping field", Config{Mappings: []Mapping{{Property: "spec.image", Kind: "Pod", Field: "a[x]"}}}, "mapping 0"},
		{"mask", Config{Masks: []string{""}}, "masks"},
		{"tolerate fields", Config{TolerateExtra: []string{"Pod/*/status"}}, "tolerate extra"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", c.name, err, c.msg)
		}
	}
}

func TestDefaultAndRun(t *testing.T) {
	custom := Func{OracleName: "valkey-roles", Fn: func(ctx context.Context, tr *model.Transition) []model.Finding {
		return []model.Finding{{Summary: "two primaries", Signature: model.Signature("valkey-roles", "two-primaries"), Evidence: []model.Evidence{{Detail: "x"}}}}
	}}
	os := Default(Config{Custom: []Oracle{custom}})
	var names []string
	for _, o := range os {
		names = append(names, o.Name())
	}
	if want := "health,consistency,differential,recovery,stability,system-state,split-brain,availability,durability,roll-safety,stale-view,valkey-roles"; strings.Join(names, ",") != want {
		t.Fatalf("Default names = %v, want %s", names, want)
	}
	s := loadSnapshot(t, "s0")
	st := step(model.StepApply)
	st.Misoperation = true
	fs := Run(context.Background(), os, &model.Transition{Step: st, Prev: loadSnapshot(t, "s0"), Curr: s, Desired: desiredOf(s), PrevDesired: desiredOf(s)})
	if len(fs) != 1 {
		t.Fatalf("got %d findings on a converged state, want only the custom one: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Oracle != "valkey-roles" || f.Step != "w0/s1" || !f.Misoperation || f.Severity != model.SeverityError {
		t.Errorf("Run did not stamp the finding: %+v", f)
	}
}

// A clean transition judged by every oracle at once yields nothing.
func TestAllOraclesCleanTransition(t *testing.T) {
	prev := loadSnapshot(t, "s0")
	prevD := desiredOf(prev)
	d := jsonv.CopyMap(prevD)
	setIn(t, d, "spec.replicas", 5.0)
	curr := loadSnapshot(t, "s0")
	curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
	scaleTo(t, curr, 5)
	ref := loadSnapshot(t, "s0-ref")
	ref.CRObject()["spec"] = jsonv.Copy(d["spec"])
	scaleTo(t, ref, 5)
	sample := cloneSnapshot(t, curr)
	set(t, sample, "StatefulSet/cache", "metadata.resourceVersion", "2999")
	tr := &model.Transition{
		Step: step(model.StepApply, "spec.replicas"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr,
		Stability: []*model.Snapshot{sample}, Reference: ref, Masks: calibrated,
	}
	if fs := Run(context.Background(), Default(Config{OperatorSelector: map[string]string{"app.kubernetes.io/name": "valkey-operator"}}), tr); len(fs) != 0 {
		for _, f := range fs {
			t.Errorf("unexpected finding: %s: %s", f.Oracle, f.Summary)
		}
	}
}

// BenchmarkDefaultOracles judges one realistic transition (scale 3 → 40 pods)
// with every built-in oracle, as a campaign step does.
func BenchmarkDefaultOracles(b *testing.B) {
	t := b
	prev := loadSnapshot(t, "s0")
	prevD := desiredOf(prev)
	d := jsonv.CopyMap(prevD)
	setIn(t, d, "spec.replicas", 40.0)
	curr := loadSnapshot(t, "s0")
	curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
	scaleTo(t, curr, 40)
	ref := cloneSnapshot(t, curr)
	sample := cloneSnapshot(t, curr)
	os := Default(Config{})
	tr := &model.Transition{Step: step(model.StepApply, "spec.replicas"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr,
		Stability: []*model.Snapshot{sample, sample}, Reference: ref}
	b.ResetTimer()
	for range b.N {
		if fs := Run(context.Background(), os, tr); len(fs) != 0 {
			b.Fatalf("unexpected findings: %v", fs)
		}
	}
}

// TestDefaultMasksPodTopologyLabels: the API server copies the node's topology
// labels onto a pod when it is bound, so a pod re-created on another node
// differs only by placement.
func TestDefaultMasksPodTopologyLabels(t *testing.T) {
	pod := model.Object{"kind": "Pod", "metadata": map[string]any{"name": "cache-0", "labels": map[string]any{
		"app": "valkey", "topology.kubernetes.io/zone": "zone-c", "topology.kubernetes.io/region": "local"}}}
	got := Mask(pod, DefaultMasks())
	labels := got["metadata"].(map[string]any)["labels"].(map[string]any)
	if _, ok := labels["topology.kubernetes.io/zone"]; ok {
		t.Errorf("zone label not masked: %v", labels)
	}
	if _, ok := labels["topology.kubernetes.io/region"]; ok {
		t.Errorf("region label not masked: %v", labels)
	}
	if labels["app"] != "valkey" {
		t.Errorf("other labels must stay: %v", labels)
	}
}

// TestDefaultMasksClaimResize: a claim grown to a size keeps Kubernetes'
// resize record (allocatedResources), which a claim created at that size never
// has; its requested and actual sizes still count.
func TestDefaultMasksClaimResize(t *testing.T) {
	fresh := `{"kind":"PersistentVolumeClaim","metadata":{"name":"data-0"},"spec":{"resources":{"requests":{"storage":"2Gi"}}},
		"status":{"phase":"Bound","capacity":{"storage":"2Gi"}}}`
	grown := strings.Replace(fresh, `"phase":"Bound",`, `"phase":"Bound","allocatedResources":{"storage":"2Gi"},`, 1)
	if got := Diff(decode(t, fresh), decode(t, grown), DefaultMasks()); got != nil {
		t.Errorf("grown claim differs from a fresh one: %#v", got)
	}
	pending := strings.Replace(grown, `"capacity":{"storage":"2Gi"}`, `"capacity":{"storage":"1Gi"},"allocatedResourceStatuses":{"storage":"NodeResizePending"}`, 1)
	want := []Change{{Path: "status.capacity.storage", A: "2Gi", B: "1Gi"}}
	if got := Diff(decode(t, fresh), decode(t, pending), DefaultMasks()); !reflect.DeepEqual(got, want) {
		t.Errorf("claim still growing: Diff = %#v, want %#v", got, want)
	}
}
