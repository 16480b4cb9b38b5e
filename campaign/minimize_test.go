package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
	"github.com/gauntlet-dev/gauntlet/model"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// minimizeGolden is what the golden files record for one history: the alarm
// groups and, per group, the step its reproducer derives from and the
// candidate sequences in the order minimization tries them.
type minimizeGolden struct {
	Groups []goldenGroup `json:"groups"`
}

type goldenGroup struct {
	ID           int           `json:"id"`
	Signature    string        `json:"signature"`
	Oracle       string        `json:"oracle"`
	Misoperation bool          `json:"misoperation,omitempty"`
	Steps        []string      `json:"steps"`
	Findings     int           `json:"findings"`
	FromStep     string        `json:"fromStep,omitempty"`
	Note         string        `json:"note,omitempty"`
	Candidates   [][]ReproStep `json:"candidates"`
}

// TestMinimizeGolden groups the alarms of recorded histories
// (testdata/minimize/*.history.jsonl, journals written by hand) and derives
// each group's reproducer candidates; the result must match NAME.golden.json
// (rewrite with -update).
func TestMinimizeGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "minimize", "*.history.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories under testdata/minimize (%v)", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".history.jsonl")
		t.Run(name, func(t *testing.T) {
			recs, _, err := ReadJournal(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := Replay(recs); err != nil {
				t.Fatal(err)
			}
			res := &Result{}
			collect(res, recs)
			group(res)
			idx := stepIndex(recs)
			base := idx["w0/s0"].Desired
			var got minimizeGolden
			for _, g := range res.Groups {
				from, cands, note := reproducerFor(g, idx, base)
				gg := goldenGroup{ID: g.ID, Signature: g.Signature, Oracle: g.Oracle, Misoperation: g.Misoperation, Steps: g.Steps,
					Findings: len(g.Findings), Note: note, Candidates: cands}
				if from != nil {
					gg.FromStep = from.ID()
					checkCandidates(t, from, idx[from.Prev], base, cands)
				}
				got.Groups = append(got.Groups, gg)
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			file := filepath.Join("testdata", "minimize", name+".golden.json")
			golden.Check(t, file, b, *update)
		})
	}
}

// checkCandidates asserts the invariants every candidate list must hold,
// independently of the golden files: shortest first, every candidate ends with
// the failing declaration, the first is (S0, D(i)) for a forward step, the
// second is Acto's (S0, D(i-1)), (S(i-1), D(i)), and no candidate re-declares D0.
func checkCandidates(t *testing.T, fail, prev *StepRecord, base model.Object, cands [][]ReproStep) {
	t.Helper()
	if len(cands) == 0 {
		t.Errorf("%s: no candidate", fail.ID())
		return
	}
	for i, c := range cands {
		if i > 0 && len(c) < len(cands[i-1]) {
			t.Errorf("%s: candidate %d (%d steps) is shorter than candidate %d (%d steps): not shortest first", fail.ID(), i, len(c), i-1, len(cands[i-1]))
		}
		if len(c) == 0 {
			t.Errorf("%s: candidate %d is empty", fail.ID(), i)
			continue
		}
		last := c[len(c)-1]
		if last.Kind != fail.Kind || !jsonEqual(last.Desired, fail.Desired) || last.Recreate != (fail.Kind == model.StepRecreate) {
			t.Errorf("%s: candidate %d ends with %s %v, want the failing %s %v", fail.ID(), i, last.Kind, last.Desired, fail.Kind, fail.Desired)
		}
		for j, s := range c[:len(c)-1] {
			if jsonEqual(s.Desired, base) {
				t.Errorf("%s: candidate %d step %d re-declares D0", fail.ID(), i, j)
			}
		}
	}
	switch fail.Kind {
	case model.StepApply, model.StepRecreate:
		if len(cands[0]) != 1 {
			t.Errorf("%s: first candidate has %d steps, want (S0, D(i)) alone", fail.ID(), len(cands[0]))
		}
		if prev != nil && prev.Kind != model.StepSeed && !jsonEqual(prev.Current, base) {
			if len(cands) != 2 || len(cands[1]) != 2 || !jsonEqual(cands[1][0].Desired, prev.Current) || cands[1][0].Kind != model.StepApply {
				t.Errorf("%s: want Acto's (S0, D(i-1)), (S(i-1), D(i)) second, with D(i-1) = %v; got %v", fail.ID(), prev.Current, cands)
			}
		}
	case model.StepRollback:
		if len(cands) != 1 || !jsonEqual(cands[0][len(cands[0])-2].Desired, prev.Desired) {
			t.Errorf("%s: a failed rollback replays D(i-1), D(i), rollback; got %v", fail.ID(), cands)
		}
	}
}

func TestCandidatesEdgeCases(t *testing.T) {
	obj := func(r int) model.Object { return model.Object{"spec": map[string]any{"replicas": int64(r)}} }
	step := func(kind model.StepKind, d, cur model.Object) *StepRecord {
		return &StepRecord{Step: model.Step{Kind: kind, Desired: d}, Current: cur}
	}
	tests := []struct {
		name       string
		fail, prev *StepRecord
		base       model.Object
		want       [][]ReproStep
	}{
		{"seed step fails: the seed alone", step(model.StepSeed, obj(1), obj(1)), nil, obj(1), [][]ReproStep{nil}},
		{"no previous step", step(model.StepApply, obj(2), obj(2)), nil, obj(1),
			[][]ReproStep{{{Kind: model.StepApply, Desired: obj(2)}}}},
		{"previous step already declared D(i)", step(model.StepApply, obj(2), obj(2)), step(model.StepApply, obj(2), obj(2)), obj(1),
			[][]ReproStep{{{Kind: model.StepApply, Desired: obj(2)}}}},
		{"previous step rolled back to D0", step(model.StepApply, obj(3), obj(3)), step(model.StepRollback, obj(1), obj(1)), obj(1),
			[][]ReproStep{{{Kind: model.StepApply, Desired: obj(3)}}}},
		{"previous step rolled back to D(i-1)", step(model.StepApply, obj(3), obj(3)), step(model.StepRollback, obj(2), obj(2)), obj(1),
			[][]ReproStep{{{Kind: model.StepApply, Desired: obj(3)}}, {{Kind: model.StepApply, Desired: obj(2)}, {Kind: model.StepApply, Desired: obj(3)}}}},
		{"recreate keeps its kind", step(model.StepRecreate, obj(3), obj(3)), step(model.StepApply, obj(2), obj(2)), obj(1),
			[][]ReproStep{{{Kind: model.StepRecreate, Desired: obj(3), Recreate: true}}, {{Kind: model.StepApply, Desired: obj(2)}, {Kind: model.StepRecreate, Desired: obj(3), Recreate: true}}}},
		{"rollback to D0", step(model.StepRollback, obj(1), obj(1)), step(model.StepApply, obj(5), obj(5)), obj(1),
			[][]ReproStep{{{Kind: model.StepApply, Desired: obj(5)}, {Kind: model.StepRollback, Desired: obj(1)}}}},
		{"rollback without its forward step", step(model.StepRollback, obj(1), obj(1)), nil, obj(1), nil},
	}
	for _, tt := range tests {
		if got := candidates(tt.fail, tt.prev, tt.base); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: candidates = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMinimizeOrder(t *testing.T) {
	obj := func(r int) model.Object { return model.Object{"spec": map[string]any{"replicas": int64(r)}} }
	short := []ReproStep{{Kind: model.StepApply, Desired: obj(3)}}
	long := []ReproStep{{Kind: model.StepApply, Desired: obj(2)}, {Kind: model.StepApply, Desired: obj(3)}}
	boom := errors.New("cluster gone")
	tests := []struct {
		name      string
		cands     [][]ReproStep
		fires     map[int]bool // by candidate length
		err       error
		want      []ReproStep
		confirmed bool
		tried     int
	}{
		{"shortest fires", [][]ReproStep{short, long}, map[int]bool{1: true, 2: true}, nil, short, true, 1},
		{"needs the longer history", [][]ReproStep{short, long}, map[int]bool{2: true}, nil, long, true, 2},
		{"none fires: longest, unconfirmed", [][]ReproStep{short, long}, nil, nil, long, false, 2},
		{"no candidates", nil, nil, nil, nil, false, 0},
		{"replay error stops", [][]ReproStep{short, long}, nil, boom, nil, false, 1},
	}
	for _, tt := range tests {
		got, ok, tried, err := minimize(context.Background(), tt.cands, func(_ context.Context, seq []ReproStep) (bool, error) {
			return tt.fires[len(seq)], tt.err
		})
		if !errors.Is(err, tt.err) || !reflect.DeepEqual(got, tt.want) || ok != tt.confirmed || tried != tt.tried {
			t.Errorf("%s: minimize = %v, %v, %d, %v; want %v, %v, %d, %v", tt.name, got, ok, tried, err, tt.want, tt.confirmed, tt.tried, tt.err)
		}
	}
}

func TestReplayTimeout(t *testing.T) {
	step := func(ms int64, timedOut bool) Record {
		return Record{Type: RecStep, Step: &StepRecord{Step: model.Step{TimedOut: timedOut}, Timing: Timing{Converge: ms}}}
	}
	tests := []struct {
		name     string
		campaign time.Duration
		recs     []Record
		want     time.Duration
	}{
		{"at least a minute", 5 * time.Minute, []Record{step(2000, false)}, time.Minute},
		{"three times the slowest", 5 * time.Minute, []Record{step(2000, false), step(40000, false)}, 2 * time.Minute},
		{"timed-out steps do not count", 5 * time.Minute, []Record{step(300000, true), step(1000, false)}, time.Minute},
		{"never above the campaign's", 30 * time.Second, []Record{step(1000, false)}, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := replayTimeout(tt.campaign, tt.recs); got != tt.want {
			t.Errorf("%s: replayTimeout = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCandidatesRecreatedRollback(t *testing.T) {
	base := model.Object{"spec": map[string]any{"a": int64(0)}}
	d1 := model.Object{"spec": map[string]any{"a": int64(1)}}
	d2 := model.Object{"spec": map[string]any{"a": int64(2)}}
	fwd := &StepRecord{Step: model.Step{Kind: model.StepApply, Desired: d2}, Current: d2}
	rb := &StepRecord{Step: model.Step{Kind: model.StepRollback, Desired: d1}, Current: d1, Recreated: true}
	c := candidates(rb, fwd, base)
	if len(c) != 1 || len(c[0]) != 3 {
		t.Fatalf("candidates = %+v, want one sequence D1, D2, rollback", c)
	}
	if last := c[0][2]; last.Kind != model.StepRollback || !last.Recreate {
		t.Errorf("the rollback the API server refused as an update must replay as a re-creation: %+v", last)
	}
	if longest(nil) != nil {
		t.Error("longest(nil) must be nil")
	}
}
