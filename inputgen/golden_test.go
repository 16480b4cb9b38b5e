package inputgen

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// loadCase reads testdata/gen/<name>.crd.yaml, <name>.seed.yaml and, if present,
// <name>.examples.yaml.
func loadCase(t testing.TB, name string) (*crd.Schema, map[string]any, []map[string]any) {
	t.Helper()
	dir := filepath.Join("testdata", "gen")
	crds, err := crd.LoadFile(filepath.Join(dir, name+".crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := crd.NewSchema(crds[0], "")
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := LoadObjects(filepath.Join(dir, name+".seed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []map[string]any
	if _, err := os.Stat(filepath.Join(dir, name+".examples.yaml")); err == nil {
		examples, err = LoadObjects(filepath.Join(dir, name+".examples.yaml"))
		if err != nil {
			t.Fatal(err)
		}
	}
	return s, seeds[0], examples
}

// renderPlan renders a plan as stable, reviewable text.
func renderPlan(p *Plan) string {
	var b strings.Builder
	st := p.Stats
	fmt.Fprintf(&b, "# %s %s/%s seed=%d\n", p.Kind, p.Group, p.Version, p.Seed)
	fmt.Fprintf(&b, "# properties %d covered %d semantic %d cases %d valid %d misoperation %d recreate %d redrawn %d repaired %d dropped %d\n",
		st.Properties, st.Covered, st.SemanticMapped, st.TestCases, st.Valid, st.Misoperation, st.Recreate, st.Redrawn, st.Repaired, st.Dropped)
	for _, r := range p.SemanticRoots {
		fmt.Fprintf(&b, "semantic %s = %s (%.2f)\n", r.Path, r.Type, r.Score)
	}
	for _, pc := range p.Properties {
		fmt.Fprintf(&b, "property %s [%s]", pc.Path, pc.Type)
		if pc.Hint != "" {
			fmt.Fprintf(&b, " hint=%s", pc.Hint)
		}
		fmt.Fprintf(&b, " covered-by=%d targeted=%s\n", pc.CoveredBy, strings.Join(pc.Targeted, ","))
		if !pc.Covered {
			fmt.Fprintf(&b, "  UNCOVERED: %s\n", pc.Reason)
		}
	}
	for _, tc := range p.TestCases {
		fmt.Fprintf(&b, "\ncase %s [%s]", tc.ID, tc.Label)
		if tc.Recreate {
			b.WriteString(" recreate")
		}
		fmt.Fprintf(&b, "\n  %s\n", tc.Description)
		for _, pr := range tc.Preconditions {
			fmt.Fprintf(&b, "  pre %s %s %s (default %s)\n", pr.Path, pr.Op, js(pr.Value), js(pr.Default))
		}
		for _, c := range tc.Setup {
			fmt.Fprintf(&b, "  setup %s %s %s\n", c.Op, c.Path, js(c.Value))
		}
		for i, s := range tc.Steps {
			for _, c := range s.Changes {
				fmt.Fprintf(&b, "  step %d: %s %s", i+1, c.Op, c.Path)
				if c.Op == OpSet {
					fmt.Fprintf(&b, " = %s", js(c.Value))
				}
				b.WriteByte('\n')
			}
		}
	}
	for _, d := range p.Dropped {
		fmt.Fprintf(&b, "\ndropped %s %s: %s\n", d.Property, d.Generator, d.Reason)
	}
	return b.String()
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name+".golden"), []byte(got), *update)
}

// TestGoldenPlans checks the test cases each generator and scenario produces on small hand-written
// CRDs, and that every one of them validates.
func TestGoldenPlans(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "primitives", opts: Options{Seed: 7}},
		{name: "collections", opts: Options{Seed: 7}},
		{name: "scenarios", opts: Options{Seed: 7, PodLabels: map[string]string{"app": "db"}}},
		{name: "deps", opts: Options{Seed: 7, Dependencies: []Dependency{{
			Subtree: "spec.cluster",
			When:    []Predicate{{Path: "/spec/mode", Op: PredEquals, Value: "cluster", Default: "standalone", Reason: "declared by target"}},
		}}}},
		{name: "cel", opts: Options{Seed: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, seed, examples := loadCase(t, tt.name)
			tt.opts.Examples = examples
			g, err := NewGenerator(s, seed, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := g.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if plan.Stats.Covered != plan.Stats.Properties {
				t.Errorf("coverage %d/%d", plan.Stats.Covered, plan.Stats.Properties)
			}
			revalidate(t, g.Validator(), plan)
			checkGolden(t, tt.name, renderPlan(plan))
		})
	}
}

// revalidate checks every state of every test case again, independently of generation: each
// step as an update of the previous state (or as a create for Recreate test cases). It returns
// the number of states checked.
func revalidate(t testing.TB, v *LocalValidator, plan *Plan) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, tc := range plan.TestCases {
		states := plan.States(tc.ID)
		if len(states) == 0 {
			t.Errorf("%s: no states", tc.ID)
			continue
		}
		prev := plan.Base
		for i, st := range states {
			var err error
			if tc.Recreate {
				err = v.ValidateCreate(ctx, st)
			} else {
				err = v.ValidateUpdate(ctx, st, prev)
			}
			n++
			if err != nil {
				t.Errorf("%s [%s] state %d rejected: %v", tc.ID, tc.Label, i+1, err)
			}
			prev = st
		}
		// The recorded changes must reproduce the states from the base.
		replay, err := tc.Apply(plan.Base)
		if err != nil {
			t.Errorf("%s: apply: %v", tc.ID, err)
			continue
		}
		if len(replay) != len(states) {
			t.Errorf("%s: apply gives %d states, want %d", tc.ID, len(replay), len(states))
			continue
		}
		for i := range replay {
			if !bytes.Equal(mustJSON(t, replay[i]), mustJSON(t, states[i])) {
				t.Errorf("%s: state %d from changes differs from the generated state", tc.ID, i+1)
			}
		}
	}
	return n
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
