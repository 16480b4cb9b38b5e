package inputgen

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// realCase is one CRD kind of the shared real-world CRDs with its seed and examples.
type realCase struct {
	name     string
	schema   *crd.Schema
	seed     map[string]any
	examples []map[string]any
	// unknown are the fields of the example seed the schema does not declare (pruned from seed).
	unknown []string
}

// realCases loads every CRD in ../shared/crds. The seed of a kind is its first object in the
// operator's example files (sorted by name, as the folder's README says); the other objects of the
// same kind are examples mined for values. It skips the test when the folder is absent.
func realCases(t testing.TB) []realCase {
	t.Helper()
	ops, err := testcrds.Operators()
	if errors.Is(err, testcrds.ErrAbsent) {
		testenv.Unavailable(t, "the shared CRDs (../shared/crds) are needed for the real-CRD tests: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []realCase
	for _, op := range ops {
		var objs []map[string]any
		for _, f := range op.Examples {
			o, err := LoadObjects(f)
			if err != nil {
				t.Fatalf("%s: %v", op.Name, err)
			}
			objs = append(objs, o...)
		}
		for _, f := range op.CRDs {
			crds, err := crd.LoadFile(f)
			if err != nil {
				t.Fatalf("%s: %v", op.Name, err)
			}
			for _, c := range crds {
				s, err := crd.NewSchema(c, "")
				if err != nil {
					t.Fatalf("%s: %v", op.Name, err)
				}
				rc := realCase{name: op.Name + "/" + s.Kind, schema: s}
				for _, o := range objs {
					if o["kind"] != s.Kind {
						continue
					}
					if rc.seed == nil && o["apiVersion"] == s.APIVersion() {
						rc.seed = o
						continue
					}
					rc.examples = append(rc.examples, o)
				}
				if rc.seed == nil {
					t.Fatalf("%s: no example of %s to seed from", op.Name, s.APIVersion())
				}
				// Three example seeds set fields their CRD does not declare
				// (TestRealSeedUnknownFields): the tests use what the API server keeps.
				v, err := NewLocalValidator(s)
				if err != nil {
					t.Fatalf("%s: %v", rc.name, err)
				}
				if rc.unknown, err = v.UnknownFields(rc.seed); err != nil {
					t.Fatalf("%s: %v", rc.name, err)
				}
				if rc.seed, err = v.Prune(rc.seed); err != nil {
					t.Fatalf("%s: %v", rc.name, err)
				}
				out = append(out, rc)
			}
		}
	}
	return out
}

// TestRealCRDs generates a plan for every real CRD and checks that the schema parses, every
// changeable property is covered, every generated state passes the API server's validation
// (re-checked independently of generation), and no valid test case names what its object does not
// declare (a volume mount's volume, a container's resource claim, a probe's named port). It logs
// the semantic mapping share per CRD and how many test cases had such references resolved or
// became misoperations because of one.
func TestRealCRDs(t *testing.T) {
	cases := realCases(t)
	if len(cases) < 11 {
		t.Fatalf("found %d CRD kinds in ../shared/crds, want at least 11", len(cases))
	}
	// Plans run in parallel on the machine's cores (each plan is itself sequential here).
	var mu sync.Mutex
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	type result struct {
		name                             string
		stats                            Stats
		checked, failedValid, failedMiso int
		uncovered                        []PropertyCoverage
		dangling                         []string
	}
	results := make([]result, len(cases))
	for i, rc := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			g, err := NewGenerator(rc.schema, rc.seed, Options{Seed: 1, Examples: rc.examples, Workers: 1})
			if err != nil {
				mu.Lock()
				t.Errorf("%s: %v", rc.name, err)
				mu.Unlock()
				return
			}
			plan, err := g.Plan(context.Background())
			if err != nil {
				mu.Lock()
				t.Errorf("%s: %v", rc.name, err)
				mu.Unlock()
				return
			}
			r := result{name: rc.name, stats: plan.Stats}
			r.checked, r.failedValid, r.failedMiso = recheck(g.Validator(), plan)
			r.dangling = danglingValid(g, plan)
			for _, pc := range plan.Properties {
				if !pc.Covered && !pc.Pinned {
					r.uncovered = append(r.uncovered, pc)
				}
			}
			results[i] = r
		})
	}
	wg.Wait()
	totalStates, totalFailed := 0, 0
	for _, r := range results {
		if r.name == "" {
			continue
		}
		st := r.stats
		t.Logf("%-34s properties %4d covered %4d pinned %d (%.1f%%) semantic mapping %.1f%% | cases %4d (valid %4d, misoperation %2d, recreate %d) | redrawn %d repaired %d dropped %d | states re-validated %d, rejected %d | in-object references resolved in %d, misoperations for one %d, valid still dangling %d",
			r.name, st.Properties, st.Covered, st.Pinned, 100*st.Coverage, 100*st.SemanticShare,
			st.TestCases, st.Valid, st.Misoperation, st.Recreate, st.Redrawn, st.Repaired, st.Dropped, r.checked, r.failedValid+r.failedMiso,
			st.RefsRepaired, st.RefsMisoperation, len(r.dangling))
		for _, pc := range r.uncovered {
			t.Errorf("%s: property %s not covered: %s", r.name, pc.Path, pc.Reason)
		}
		if r.failedValid > 0 || r.failedMiso > 0 {
			t.Errorf("%s: %d valid and %d misoperation states rejected by validation", r.name, r.failedValid, r.failedMiso)
		}
		for i, d := range r.dangling {
			if i == 5 {
				t.Errorf("%s: and %d more valid test cases with a dangling reference", r.name, len(r.dangling)-i)
				break
			}
			t.Errorf("%s: valid test case with a dangling in-object reference: %s", r.name, d)
		}
		if st.SemanticShare <= 0 {
			t.Errorf("%s: no property semantically mapped", r.name)
		}
		totalStates += r.checked
		totalFailed += r.failedValid + r.failedMiso
	}
	t.Logf("all CRDs: %d states re-validated, %d rejected (%.2f%% pass)", totalStates, totalFailed, 100*float64(totalStates-totalFailed)/float64(max(1, totalStates)))
}

// recheck validates every state of every test case again (update of the previous state, or
// create for Recreate test cases), and replays the recorded changes from the base.
func recheck(v *LocalValidator, plan *Plan) (checked, failedValid, failedMiso int) {
	ctx := context.Background()
	for _, tc := range plan.TestCases {
		states := plan.States(tc.ID)
		replay, err := tc.Apply(plan.Base)
		fail := func() {
			if tc.Label == Misoperation {
				failedMiso++
			} else {
				failedValid++
			}
		}
		if err != nil || len(replay) != len(states) {
			fail()
			continue
		}
		prev := plan.Base
		for i, st := range states {
			checked++
			var err error
			if tc.Recreate {
				err = v.ValidateCreate(ctx, st)
			} else {
				err = v.ValidateUpdate(ctx, st, prev)
			}
			if err != nil || !bytes.Equal(jsonBytes(replay[i]), jsonBytes(st)) {
				fail()
			}
			prev = st
		}
	}
	return checked, failedValid, failedMiso
}

func jsonBytes(v any) []byte {
	var buf bytes.Buffer
	_ = (&Plan{}).writeValue(&buf, v)
	return buf.Bytes()
}

// TestPlanDeterministic checks that the seed fixes the plan whatever the parallelism, and that
// another seed changes it.
func TestPlanDeterministic(t *testing.T) {
	var rc realCase
	for _, c := range realCases(t) {
		if filepath.Base(c.name) == "CrdbCluster" {
			rc = c
		}
	}
	if rc.schema == nil {
		t.Fatal("CrdbCluster not found")
	}
	render := func(seed int64, workers int) []byte {
		t.Helper()
		g, err := NewGenerator(rc.schema, rc.seed, Options{Seed: seed, Examples: rc.examples, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := g.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := plan.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b := render(42, 1), render(42, 4)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different plans with 1 and 4 workers")
	}
	if c := render(43, 2); bytes.Equal(a, c) {
		t.Error("seeds 42 and 43 gave the same plan")
	}
}
