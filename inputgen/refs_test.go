package inputgen

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// refsGenerator builds a generator for testdata/gen/refs.crd.yaml (a pod template whose
// containers mount volumes, claim resources and probe named ports; a StatefulSet-like template
// with claim templates; an exporter container in a pod the operator builds itself).
func refsGenerator(t *testing.T) *Generator {
	t.Helper()
	s, seed, examples := loadCase(t, "refs")
	g, err := NewGenerator(s, seed, Options{Seed: 7, Examples: examples, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The test relies on the semantic mapping of these core types; say so when it changes.
	for path, want := range map[string]string{
		"spec.pod.containers[*].volumeMounts[*]":            typeVolumeMount,
		"spec.pod.containers[*].volumeDevices[*]":           typeVolumeDevice,
		"spec.pod.containers[*].resources.claims[*]":        typeResourceClaim,
		"spec.pod.containers[*].livenessProbe.httpGet":      typeHTTPGetAction,
		"spec.pod.containers[*].livenessProbe.tcpSocket":    typeTCPSocketAction,
		"spec.pod.containers[*].ports[*]":                   typeContainerPort,
		"spec.pod.volumes[*]":                               typeVolume,
		"spec.pod.resourceClaims[*]":                        typePodResourceClaim,
		"spec.statefulSet.template.spec.containers[*]":      typeContainer,
		"spec.exporter.volumeMounts[*]":                     typeVolumeMount,
		"spec.exporter.resources.claims[*]":                 typeResourceClaim,
		"spec.statefulSet.volumeClaimTemplates[*].metadata": "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta",
	} {
		p := s.Lookup(path)
		if p == nil || p.Semantic == nil || p.Semantic.Type != want {
			t.Fatalf("%s: semantic mapping %+v, want %s", path, p.Semantic, want)
		}
	}
	return g
}

// get returns the value at a JSON pointer of st, failing the test when absent.
func get(t *testing.T, st map[string]any, ptr string) any {
	t.Helper()
	v, ok := jsonv.Get(st, ptr)
	if !ok {
		t.Fatalf("%s absent from %s", ptr, compactJSON(st))
	}
	return v
}

// names lists the "name" fields of the list at ptr.
func names(st map[string]any, ptr string) []string {
	v, _ := jsonv.Get(st, ptr)
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		out = append(out, n)
	}
	return out
}

func has(list []string, s string) bool { return containsString(list, s) }

// TestResolveRefs checks, per reference class, what a valid draft introducing a dangling name
// becomes: re-pointed to a declared name, declared, stripped of the holder that named what it
// removed, or relabelled a misoperation whose description names the reference.
func TestResolveRefs(t *testing.T) {
	g := refsGenerator(t)
	const (
		c0     = "/spec/pod/containers/0"
		mounts = c0 + "/volumeMounts"
	)
	tests := []struct {
		name   string
		target string
		// start edits the seed into the state the draft starts from (nil: the seed).
		start func(st map[string]any)
		// step edits the start into the draft's one step.
		step  func(st map[string]any)
		label Label
		want  refOutcome
		// check inspects the resolved step; reason must appear in a misoperation's description.
		check  func(t *testing.T, st map[string]any)
		reason string
	}{
		{
			name: "volume mount appended with an undeclared name is re-pointed to a declared volume", target: "spec.pod.containers[*].volumeMounts",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, mounts+"/-", map[string]any{"name": "ghost", "mountPath": "/ghost"})
			},
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, mounts+"/1/name"); n != "data" && n != "block" {
					t.Errorf("mount names %v, want a declared volume (data or block)", n)
				}
			},
		},
		{
			name: "a mount name the case writes is declared as an emptyDir volume", target: "spec.pod.containers[*].volumeMounts[*].name",
			step: func(st map[string]any) { _ = jsonv.Set(st, mounts+"/0/name", "cache") },
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, mounts+"/0/name"); n != "cache" {
					t.Errorf("mount names %v, want the case's own name cache", n)
				}
				vols, _ := get(t, st, "/spec/pod/volumes").([]any)
				last, _ := vols[len(vols)-1].(map[string]any)
				if last["name"] != "cache" || last["emptyDir"] == nil {
					t.Errorf("volumes end with %v, want an emptyDir volume named cache", last)
				}
			},
		},
		{
			name: "removing the volumes removes the mounts naming them", target: "spec.pod.volumes",
			step: func(st map[string]any) { _ = jsonv.Remove(st, "/spec/pod/volumes") },
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if ns := names(st, mounts); has(ns, "data") {
					t.Errorf("mounts %v still name the removed volume data", ns)
				}
			},
		},
		{
			name: "a mount of a volume the operator provides (used so by the seed) is re-pointed there", target: "spec.exporter.volumeMounts",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, "/spec/exporter/volumeMounts/-", map[string]any{"name": "ghost", "mountPath": "/ghost"})
			},
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, "/spec/exporter/volumeMounts/1/name"); n != "exporter-config" {
					t.Errorf("mount names %v, want the seed's exporter-config", n)
				}
			},
		},
		{
			name: "a new mount name where the schema declares no volumes is a misoperation", target: "spec.exporter.volumeMounts[*].name",
			step:   func(st map[string]any) { _ = jsonv.Set(st, "/spec/exporter/volumeMounts/0/name", "ghost") },
			want:   refsRelabelled,
			reason: `spec.exporter.volumeMounts[0].name "ghost" names no volume of the pod: the schema declares no volumes next to the mount`,
		},
		{
			name: "a mount of a volume claim template resolves", target: "spec.statefulSet.template.spec.containers[*].volumeMounts",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, "/spec/statefulSet/template/spec/containers/0/volumeMounts/-", map[string]any{"name": "state", "mountPath": "/state2"})
			},
			want: refsUntouched,
		},
		{
			name: "a block device is re-pointed from an emptyDir volume to the claim-backed one", target: "spec.pod.containers[*].volumeDevices",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/volumeDevices", []any{map[string]any{"name": "data", "devicePath": "/dev/data"}})
			},
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, c0+"/volumeDevices/0/name"); n != "block" {
					t.Errorf("device names %v, want the claim-backed volume block", n)
				}
			},
		},
		{
			name: "a device naming the claim-backed volume resolves", target: "spec.pod.containers[*].volumeDevices",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/volumeDevices", []any{map[string]any{"name": "block", "devicePath": "/dev/block"}})
			},
			want: refsUntouched,
		},
		{
			name: "a container claim is re-pointed to the pod's resource claim", target: "spec.pod.containers[*].resources.claims",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/resources", map[string]any{"claims": []any{map[string]any{"name": "ghost"}}})
			},
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, c0+"/resources/claims/0/name"); n != "gpu" {
					t.Errorf("claim names %v, want the pod's gpu", n)
				}
			},
		},
		{
			name: "a second claim cannot repeat the only declared name: misoperation", target: "spec.pod.containers[*].resources.claims",
			start: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/resources", map[string]any{"claims": []any{map[string]any{"name": "gpu"}}})
			},
			step: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/resources/claims/-", map[string]any{"name": "ghost"})
			},
			want:   refsRelabelled,
			reason: `spec.pod.containers[0].resources.claims[1].name "ghost" names no resource claim of the pod`,
		},
		{
			name: "a claim where the schema has no pod-level resourceClaims is a misoperation", target: "spec.exporter.resources.claims",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, "/spec/exporter/resources", map[string]any{"claims": []any{map[string]any{"name": "gpu"}}})
			},
			want:   refsRelabelled,
			reason: "the schema exposes no pod-level resourceClaims",
		},
		{
			name: "a probe port name the case writes is re-pointed to another declared port", target: "spec.pod.containers[*].livenessProbe.httpGet.port",
			start: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/ports/-", map[string]any{"name": "metrics", "containerPort": int64(9090)})
			},
			step: func(st map[string]any) { _ = jsonv.Set(st, c0+"/livenessProbe/httpGet/port", "50%") },
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, c0+"/livenessProbe/httpGet/port"); n != "metrics" {
					t.Errorf("probe port %v, want metrics (the declared port that is not the start's http)", n)
				}
			},
		},
		{
			name: "a probe port name no port carries, with no other declared port, is a misoperation", target: "spec.pod.containers[*].livenessProbe.httpGet.port",
			step:   func(st map[string]any) { _ = jsonv.Set(st, c0+"/livenessProbe/httpGet/port", "admin") },
			want:   refsRelabelled,
			reason: `spec.pod.containers[0].livenessProbe.httpGet.port "admin" names no port of the container`,
		},
		{
			name: "a port name filled in on the way to another field is re-pointed to a declared port", target: "spec.pod.containers[*].livenessProbe.tcpSocket.host",
			step: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/livenessProbe/tcpSocket", map[string]any{"host": "localhost", "port": "30%"})
			},
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, c0+"/livenessProbe/tcpSocket/port"); n != "http" {
					t.Errorf("tcpSocket port %#v, want http, the container's port", n)
				}
			},
		},
		{
			name: "a port name filled in on the way, with no named port, becomes the container's port number", target: "spec.pod.containers[*].livenessProbe.tcpSocket.host",
			start: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/ports", []any{map[string]any{"containerPort": int64(8080)}})
				_ = jsonv.Set(st, c0+"/livenessProbe/httpGet/port", int64(8080))
			},
			step: func(st map[string]any) {
				_ = jsonv.Set(st, c0+"/livenessProbe/tcpSocket", map[string]any{"host": "localhost", "port": "30%"})
			},
			want: refsRepaired,
			check: func(t *testing.T, st map[string]any) {
				if n := get(t, st, c0+"/livenessProbe/tcpSocket/port"); !jsonv.Equal(n, int64(8080)) {
					t.Errorf("tcpSocket port %#v, want 8080, the container's declared port", n)
				}
			},
		},
		{
			name: "a numeric probe port is no reference", target: "spec.pod.containers[*].livenessProbe.httpGet.port",
			step: func(st map[string]any) { _ = jsonv.Set(st, c0+"/livenessProbe/httpGet/port", int64(9999)) },
			want: refsUntouched,
		},
		{
			name: "misoperation drafts are left as they are", target: "spec.exporter.resources.claims", label: Misoperation,
			step: func(st map[string]any) {
				_ = jsonv.Set(st, "/spec/exporter/resources", map[string]any{"claims": []any{map[string]any{"name": "gpu"}}})
			},
			want: refsUntouched,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := g.schema.Lookup(tt.target)
			if p == nil {
				t.Fatalf("no property %s", tt.target)
			}
			start := g.Base()
			if tt.start != nil {
				tt.start(start)
			}
			step := jsonv.CopyMap(start)
			tt.step(step)
			label := tt.label
			if label == "" {
				label = Valid
			}
			d := &draft{generator: "test", label: label, description: "test draft", steps: []map[string]any{step}}
			got, _ := g.resolveRefs(p, d, start)
			if got != tt.want {
				t.Fatalf("outcome %d, want %d; draft [%s] %s: %s", got, tt.want, d.label, d.description, compactJSON(d.steps[0]))
			}
			switch {
			case tt.want == refsRelabelled:
				if d.label != Misoperation || !strings.Contains(d.description, tt.reason) {
					t.Errorf("draft [%s] %q, want a misoperation saying %q", d.label, d.description, tt.reason)
				}
			case tt.label != Misoperation:
				if d.label != Valid {
					t.Errorf("draft relabelled %s: %s", d.label, d.description)
				}
				if left := freshDangling(g, start, d.steps[0]); len(left) > 0 {
					t.Errorf("valid draft still dangles: %s", left[0].describe())
				}
			}
			if tt.check != nil {
				tt.check(t, d.steps[0])
			}
		})
	}
}

// freshDangling lists the dangling references of st that start did not already have.
func freshDangling(g *Generator, start, st map[string]any) []*refSite {
	before := map[string]string{}
	for _, s := range g.refs.dangling(start) {
		before[s.ptr()] = s.value
	}
	var out []*refSite
	for _, s := range g.refs.dangling(st) {
		if v, ok := before[s.ptr()]; !ok || v != s.value {
			out = append(out, s)
		}
	}
	return out
}

// danglingValid returns, for every valid test case of plan with a state naming what the object
// neither declares nor the operator provides, one description of such a reference.
func danglingValid(g *Generator, plan *Plan) []string {
	var out []string
	for _, tc := range plan.TestCases {
		if tc.Label != Valid {
			continue
		}
		for i, st := range plan.States(tc.ID) {
			if left := freshDangling(g, plan.Base, st); len(left) > 0 {
				out = append(out, fmt.Sprintf("%s state %d: %s", tc.ID, i+1, left[0].describe()))
				break
			}
		}
	}
	return out
}

// TestPlanReferences generates the whole plan of the reference CRD: every property stays
// covered, every state validates, no valid test case names what its object does not declare, and
// test cases whose reference nothing can satisfy are misoperations saying which one dangles.
func TestPlanReferences(t *testing.T) {
	g := refsGenerator(t)
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Stats.Covered != plan.Stats.Properties {
		for _, pc := range plan.Properties {
			if !pc.Covered {
				t.Errorf("%s not covered: %s", pc.Path, pc.Reason)
			}
		}
	}
	revalidate(t, g.Validator(), plan)
	for _, d := range danglingValid(g, plan) {
		t.Errorf("valid test case with a dangling reference: %s", d)
	}
	if plan.Stats.RefsRepaired == 0 || plan.Stats.RefsMisoperation == 0 {
		t.Errorf("stats: %d repaired, %d relabelled; want both above zero", plan.Stats.RefsRepaired, plan.Stats.RefsMisoperation)
	}
	byID := map[string]*TestCase{}
	for _, tc := range plan.TestCases {
		byID[tc.ID] = tc
	}
	for _, want := range []struct {
		id     string
		label  Label
		phrase string
	}{
		{"spec.exporter.resources.claims#array/append", Misoperation, "the schema exposes no pod-level resourceClaims"},
		{"spec.pod.containers[*].resources.claims#array/append", Valid, `names claim "gpu"`},
		{"spec.pod.containers[*].volumeMounts[*].name#string/generated", Valid, "declaring volume"},
		{"spec.pod.volumes#array/remove", Valid, "removing spec.pod.containers[0].volumeMounts[0]"},
	} {
		tc := byID[want.id]
		if tc == nil {
			t.Errorf("no test case %s", want.id)
			continue
		}
		if tc.Label != want.label || !strings.Contains(tc.Description, want.phrase) {
			t.Errorf("%s [%s] %q, want [%s] saying %q", tc.ID, tc.Label, tc.Description, want.label, want.phrase)
		}
	}
}
