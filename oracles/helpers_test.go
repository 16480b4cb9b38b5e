package oracles

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
	"github.com/gauntlet-dev/gauntlet/model"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// loadSnapshot reads testdata/snapshots/<name>.json strictly (a fresh copy each time).
func loadSnapshot(t testing.TB, name string) *model.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "snapshots", name+".json"))
	if err != nil {
		t.Fatalf("read snapshot: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s model.Snapshot
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decode snapshot %s: %v", name, err)
	}
	return &s
}

// keyOf finds the key of the object "Kind/name" in s.
func keyOf(t testing.TB, s *model.Snapshot, kindName string) string {
	t.Helper()
	kind, name, _ := strings.Cut(kindName, "/")
	for key := range s.Objects {
		if k, ok := model.ParseObjectKey(key); ok && k.Kind == kind && k.Name == name {
			return key
		}
	}
	t.Fatalf("no %s in snapshot", kindName)
	return ""
}

// obj returns the object "Kind/name" of s.
func obj(t testing.TB, s *model.Snapshot, kindName string) model.Object {
	t.Helper()
	return s.Objects[keyOf(t, s, kindName)]
}

// set stores v at a dotted path of object "Kind/name", creating maps on the way.
func set(t testing.TB, s *model.Snapshot, kindName, path string, v any) {
	t.Helper()
	setIn(t, obj(t, s, kindName), path, v)
}

func setIn(t testing.TB, o map[string]any, path string, v any) {
	t.Helper()
	p, err := jsonv.ParsePath(path)
	if err != nil || len(p) == 0 {
		t.Fatalf("bad path %q: %v", path, err)
	}
	var cur any = o
	for i, seg := range p {
		last := i == len(p)-1
		switch n := cur.(type) {
		case map[string]any:
			if last {
				n[seg.Key] = v
				return
			}
			next, ok := n[seg.Key]
			if !ok || next == nil {
				next = map[string]any{}
				n[seg.Key] = next
			}
			cur = next
		case []any:
			if seg.Kind != jsonv.SegIndex || seg.Index >= len(n) {
				t.Fatalf("path %q: no element %d", path, seg.Index)
			}
			if last {
				n[seg.Index] = v
				return
			}
			cur = n[seg.Index]
		default:
			t.Fatalf("path %q: cannot descend into %T", path, cur)
		}
	}
}

// copyAs adds a copy of object "Kind/name" renamed to newName (keys and
// metadata.name; other fields are replaced by the edits the caller makes).
func copyAs(t testing.TB, s *model.Snapshot, kindName, newName string) model.Object {
	t.Helper()
	key := keyOf(t, s, kindName)
	k, _ := model.ParseObjectKey(key)
	o := jsonv.CopyMap(s.Objects[key])
	setIn(t, o, "metadata.name", newName)
	k.Name = newName
	s.Objects[k.String()] = o
	return o
}

// remove deletes object "Kind/name".
func remove(t testing.TB, s *model.Snapshot, kindName string) {
	t.Helper()
	delete(s.Objects, keyOf(t, s, kindName))
}

// desiredOf is the CR as the campaign declares it: identity and spec.
func desiredOf(s *model.Snapshot) model.Object {
	cr := s.CRObject()
	md := cr["metadata"].(map[string]any)
	return model.Object{
		"apiVersion": cr["apiVersion"],
		"kind":       cr["kind"],
		"metadata":   map[string]any{"name": md["name"], "namespace": md["namespace"]},
		"spec":       jsonv.Copy(cr["spec"]),
	}
}

var t0 = time.Date(2025, 3, 1, 10, 3, 0, 0, time.UTC)

func step(kind model.StepKind, changed ...string) *model.Step {
	return &model.Step{Worker: 0, Index: 1, Kind: kind, Changed: changed, Started: t0, Converged: t0.Add(40 * time.Second)}
}

// checkGolden compares findings with testdata/golden/<dir>/<name>.json (rewritten
// with -update).
func checkGolden(t testing.TB, dir, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	got = append(got, '\n')
	golden.Check(t, filepath.Join("testdata", "golden", dir, name+".json"), got, *update)
}

// expectation is what a table case asserts beyond its golden file.
type expectation struct {
	n        int      // number of findings
	contains []string // substrings, each in some finding's summary
	detail   string   // a substring of the first fact of every finding
	pods     []string // the pods the first finding's evidence names, in order
}

func (e expectation) check(t *testing.T, fs []model.Finding) {
	t.Helper()
	if len(fs) != e.n {
		var sums []string
		for _, f := range fs {
			sums = append(sums, f.Summary)
		}
		t.Fatalf("got %d findings, want %d:\n  %s", len(fs), e.n, strings.Join(sums, "\n  "))
	}
	for _, want := range e.contains {
		found := false
		for _, f := range fs {
			if strings.Contains(f.Summary, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no finding's summary contains %q", want)
		}
	}
	for _, f := range fs {
		if f.Signature == "" || f.Summary == "" || len(f.Evidence) == 0 || f.Oracle == "" || f.Severity == "" {
			t.Errorf("finding lacks signature, summary, evidence, oracle or severity: %+v", f)
			continue
		}
		if e.detail != "" && !strings.Contains(f.Evidence[0].Detail, e.detail) {
			t.Errorf("%s: first fact %q lacks %q", f.Summary, f.Evidence[0].Detail, e.detail)
		}
	}
	if len(e.pods) > 0 {
		var pods []string
		for _, ev := range fs[0].Evidence {
			if k, ok := model.ParseObjectKey(ev.Object); ok && k.Kind == "Pod" {
				pods = append(pods, k.Name)
			}
		}
		if !slices.Equal(pods, e.pods) {
			t.Errorf("evidence names pods %v, want %v", pods, e.pods)
		}
	}
}

func run(o Oracle, t *model.Transition) []model.Finding {
	return Run(context.Background(), []Oracle{o}, t)
}
