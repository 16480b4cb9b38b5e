package campaign

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/model"
)

func TestJournalTornLastLineAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, recs, err := OpenJournal(path)
	if err != nil || len(recs) != 0 {
		t.Fatal(err, recs)
	}
	start := &StartRecord{Seed: 3, Workers: 2, Assignments: [][]string{{"a", "b"}, {"c"}}}
	must(t, j.Append(Record{Type: RecStart, Start: start}))
	must(t, j.Append(Record{Type: RecStep, Step: &StepRecord{Step: model.Step{Worker: 0, Index: 0, Kind: model.StepSeed}, Cursor: Cursor{}}}))
	must(t, j.Append(Record{Type: RecStep, Step: &StepRecord{Step: model.Step{Worker: 0, Index: 1, Kind: model.StepApply}, Cursor: Cursor{Case: 1}}}))
	must(t, j.Append(Record{Type: RecWorkerDone, Worker: 1}))
	must(t, j.Close())
	// SIGKILL mid-write: a torn last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"type":"step","step":{"worker":0,"ind`)
	f.Close()
	j2, recs, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("replayed %d records, want 4", len(recs))
	}
	st, ws, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seed != 3 || ws[0].Last == nil || ws[0].Last.Cursor != (Cursor{Case: 1}) || ws[0].Steps != 2 || !ws[1].Done {
		t.Fatalf("replay = %+v %+v", st, ws)
	}
	// Appending after the cut leaves a well-formed journal.
	must(t, j2.Append(Record{Type: RecEnd}))
	must(t, j2.Close())
	recs, _, err = ReadJournal(path)
	if err != nil || len(recs) != 5 || recs[4].Type != RecEnd {
		t.Fatalf("after resume: %d records, %v", len(recs), err)
	}
	// A corrupt line before the last is an error, not silently skipped.
	data, _ := os.ReadFile(path)
	bad := append([]byte("garbage\n"), data...)
	os.WriteFile(path, bad, 0o644)
	if _, _, err := ReadJournal(path); err == nil {
		t.Fatal("a corrupt middle line was accepted")
	}
}

// TestReplayCountsConvergedStates: a resumed worker's fault schedule counts the
// desired states reached without an alarm, as the uninterrupted worker did.
func TestReplayCountsConvergedStates(t *testing.T) {
	d1 := model.Object{"spec": map[string]any{"replicas": int64(1)}}
	d2 := model.Object{"spec": map[string]any{"replicas": int64(2)}}
	step := func(i int, kind model.StepKind, desired, current model.Object, f func(*StepRecord)) Record {
		s := &StepRecord{Step: model.Step{Worker: 0, Index: i, Kind: kind, Desired: desired}, Current: current}
		if f != nil {
			f(s)
		}
		return Record{Type: RecStep, Step: s}
	}
	recs := []Record{
		{Type: RecStart, Start: &StartRecord{Workers: 1}},
		step(0, model.StepSeed, d1, d1, nil),
		step(1, model.StepApply, d2, d2, nil), // counted
		step(2, model.StepFault, d2, d2, nil),
		step(3, model.StepApply, d1, d1, func(s *StepRecord) { s.Findings = []model.Finding{{Severity: model.SeverityError}} }),
		step(4, model.StepRollback, d2, d2, nil),
		step(5, model.StepApply, d1, d1, func(s *StepRecord) { s.TimedOut = true }),
		step(6, model.StepApply, d1, d2, nil), // refused by the API server
		step(7, model.StepRecreate, d1, d1, func(s *StepRecord) { s.Findings = []model.Finding{{Severity: model.SeverityWarning}} }), // counted
		// A misoperation the system took without an alarm is rolled back, not
		// followed by a fault (seed 4: 100 replicas placed on 3 nodes).
		step(8, model.StepApply, d2, d2, func(s *StepRecord) { s.Misoperation = true }),
		step(9, model.StepRollback, d1, d1, nil),
	}
	_, ws, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].Applied != 2 {
		t.Fatalf("Applied = %d, want 2 (one apply and one recreate reached D without an alarm)", ws[0].Applied)
	}
	if !convergedApply(recs[8].Step) {
		t.Fatal("the recreate that converged is not seen as one a fault may follow")
	}
	if convergedApply(recs[9].Step) {
		t.Fatal("a misoperation reached without an alarm is seen as a valid state a fault may follow")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPartition(t *testing.T) {
	tc := func(id string, steps int) *inputgen.TestCase {
		return &inputgen.TestCase{ID: id, Steps: make([]inputgen.Step, steps)}
	}
	cases := []*inputgen.TestCase{tc("a", 1), tc("b", 3), tc("c", 1), tc("d", 2), tc("e", 1)}
	tests := []struct {
		n    int
		want [][]string
	}{
		{1, [][]string{{"a", "b", "c", "d", "e"}}},
		{2, [][]string{{"b", "c"}, {"a", "d", "e"}}},
		{3, [][]string{{"b"}, {"d", "e"}, {"a", "c"}}},
	}
	for _, tt := range tests {
		if got := Partition(cases, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Partition(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

func TestHasDataKey(t *testing.T) {
	secret := map[string]any{"kind": "Secret", "data": map[string]any{"password": "cHc="}, "stringData": map[string]any{"user": "u"}}
	cm := map[string]any{"kind": "ConfigMap", "binaryData": map[string]any{"blob": "AA=="}}
	for _, tt := range []struct {
		obj  map[string]any
		key  string
		want bool
	}{
		{secret, "password", true}, {secret, "user", true}, {secret, "gauntlet-x1", false},
		{cm, "blob", true}, {cm, "password", false}, {map[string]any{"kind": "Secret"}, "password", false},
	} {
		if got := hasDataKey(tt.obj, tt.key); got != tt.want {
			t.Errorf("hasDataKey(%v, %q) = %v, want %v", tt.obj, tt.key, got, tt.want)
		}
	}
}

// Keys that are not plain names (label keys, node-selector keys) are quoted, so
// the oracles parse the path back to the key (a dotted key once parsed as
// nodeSelector.kubernetes["io/hostname"] and was never judged).
func TestChangedPathsQuoteKeys(t *testing.T) {
	a := model.Object{"spec": map[string]any{"replicas": int64(3), "scheduling": map[string]any{"nodeSelector": map[string]any{"disk": "ssd"}}}}
	b := model.Object{"spec": map[string]any{"replicas": int64(3), "scheduling": map[string]any{"nodeSelector": map[string]any{"disk": "ssd", "kubernetes.io/hostname": "node-2"}}},
		"metadata": map[string]any{"labels": map[string]any{"x": "y"}}}
	got := changedPaths(a, b)
	want := []string{`spec.scheduling.nodeSelector["kubernetes.io/hostname"]`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changedPaths = %q, want %q", got, want)
	}
	c := model.Object{"spec": map[string]any{"replicas": int64(4), "config": map[string]any{"a b": "1", "": "2"}}}
	got = changedPaths(a, c)
	want = []string{`spec.config`, `spec.replicas`, `spec.scheduling`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changedPaths = %q, want %q", got, want)
	}
}
