package bugs

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// Trigger is what a campaign must do to exercise a seeded bug: the untuned
// mode reads it against the campaign's recorded steps to tell a bug the
// campaign reached but did not catch from one it never reached. A step reaches
// the bug when it matches any of Seed, Changes, Faults or Unready, and the
// state it leaves has at least MinReplicas pods.
type Trigger struct {
	// What says in words what reaches the bug (printed in the table's legend).
	What string
	// Seed is a CR path the seed step itself reaches the bug with, when the
	// seed sets it to a non-empty value (the seed's spec.config: a bug in how
	// config keys are applied at creation).
	Seed string
	// Changes are desired-state changes that reach the bug (apply, recreate
	// and rollback steps).
	Changes []Change
	// Faults are injected faults that reach the bug (any step kind).
	Faults []FaultTrigger
	// Unready: a change (apply or rollback) declared on a worker whose
	// previous step ended with pods not ready (timed out, stuck, or something
	// not ready when it settled) reaches the bug.
	Unready bool
	// MinReplicas is the least spec.replicas the step's resulting desired
	// state must have (0: any).
	MinReplicas int64
	// Misoperations: a step labelled a misoperation may reach the bug (by
	// default it does not: the API server or the operator refused it).
	Misoperations bool
}

// Change is a change of the desired state at one CR path.
type Change struct {
	// Path is the dotted CR path ("spec.podDisruptionBudget.enabled"); a
	// change anywhere under it counts. Empty objects and lists count as unset.
	Path string
	// To, when set, is the value the step must set (numbers compare by value).
	To any
	// Set requires the new value to be present (a change to unset does not count).
	Set bool
	// Not, when set, is a value the new one must differ from (the operator's
	// own default, which the bug leaves in place anyway).
	Not any
	// NewKey, when set, requires the new value to be a map holding a key that
	// contains NewKey which the previous value did not hold with that value.
	NewKey string
}

// FaultTrigger is a fault that reaches a bug.
type FaultTrigger struct {
	// Kind is the campaign's fault kind ("pod-kill", "pod-failure", ...).
	Kind string
	// Role is the role of the member it must hit ("primary"; empty: any target).
	Role string
	// MinHold is how long a lasting fault must hold (0: any).
	MinHold time.Duration
}

// Record is a campaign's results folder as the untuned mode reads it: its
// summary.json (the alarm groups and the start time) and its journal (every
// step with its desired states, faults and findings).
type Record struct {
	Summary reports.Summary
	// Steps are the journal's step and differential records in journal order.
	Steps []*campaign.StepRecord
}

// ReadRecord reads a campaign's results folder.
func ReadRecord(dir string) (*Record, error) {
	sum, err := reports.ReadSummary(dir)
	if err != nil {
		return nil, err
	}
	recs, _, err := campaign.ReadJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("read the journal of %s: %w", dir, err)
	}
	r := &Record{Summary: sum}
	for _, rec := range recs {
		if (rec.Type == campaign.RecStep || rec.Type == campaign.RecDifferential) && rec.Step != nil {
			r.Steps = append(r.Steps, rec.Step)
		}
	}
	return r, nil
}

// step finds a step record by its ID ("w0/s3").
func (r *Record) step(id string) *campaign.StepRecord {
	for _, s := range r.Steps {
		if s.ID() == id {
			return s
		}
	}
	return nil
}

// after is how long into the campaign step id started (0, false: unknown step).
func (r *Record) after(id string) (time.Duration, bool) {
	s := r.step(id)
	if s == nil || s.Started.IsZero() || r.Summary.Started.IsZero() {
		return 0, false
	}
	return s.Started.Sub(r.Summary.Started), true
}

// Reach is the first step that exercised a bug's trigger.
type Reach struct {
	// Step is the step's ID; After how long into the campaign it started.
	Step  string
	After time.Duration
	// How says which part of the trigger it matched.
	How string
}

// Reached returns the first step of rec (by start time) that reaches the bug.
func (t Trigger) Reached(rec *Record) (Reach, bool) {
	steps := make([]*campaign.StepRecord, 0, len(rec.Steps))
	byID := map[string]*campaign.StepRecord{}
	for _, s := range rec.Steps {
		if s.Kind == model.StepDifferential {
			continue // a fresh system re-running a state: not the campaign's history
		}
		steps = append(steps, s)
		byID[s.ID()] = s
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Started.Before(steps[j].Started) })
	unready := map[int]bool{} // per worker: its last step ended with pods not ready
	for _, s := range steps {
		wasUnready := unready[s.Worker]
		unready[s.Worker] = s.TimedOut || s.Stuck || len(s.NotReady) > 0
		if s.Misoperation && !t.Misoperations {
			continue
		}
		after := s.Current
		if after == nil {
			after = s.Desired
		}
		if t.MinReplicas > 0 && replicas(after) < t.MinReplicas {
			continue
		}
		var before model.Object
		if p := byID[s.Prev]; p != nil {
			before = p.Current
		}
		how := t.match(s, before, after, wasUnready)
		if how == "" {
			continue
		}
		r := Reach{Step: s.ID(), How: how}
		if !s.Started.IsZero() && !rec.Summary.Started.IsZero() {
			r.After = s.Started.Sub(rec.Summary.Started)
		}
		return r, true
	}
	return Reach{}, false
}

// match says how step s (from desired state before to after) reaches the bug ("": it does not).
func (t Trigger) match(s *campaign.StepRecord, before, after model.Object, wasUnready bool) string {
	if t.Seed != "" && s.Kind == model.StepSeed && !empty(get(after, t.Seed)) {
		return "the seed sets " + t.Seed
	}
	changes := s.Kind == model.StepApply || s.Kind == model.StepRecreate || s.Kind == model.StepRollback
	if changes && before != nil {
		for _, c := range t.Changes {
			if c.matches(get(before, c.Path), get(after, c.Path)) {
				return fmt.Sprintf("%s changed (%s %s)", c.Path, s.Kind, s.TestCase)
			}
		}
	}
	for _, f := range s.Faults {
		if f.Unsupported != "" || f.Injected.IsZero() {
			continue
		}
		for _, ft := range t.Faults {
			if ft.matches(f) {
				how := f.Kind + " of the " + orAny(ft.Role)
				if !f.Removed.IsZero() && f.Removed.After(f.Injected) {
					how += fmt.Sprintf(", held %s", f.Removed.Sub(f.Injected).Round(100*time.Millisecond))
				}
				return how
			}
		}
	}
	if t.Unready && wasUnready && (s.Kind == model.StepApply || s.Kind == model.StepRollback) && before != nil && !jsonv.Equal(before, after) {
		return fmt.Sprintf("%s after a step that left pods not ready (%s)", s.Kind, s.TestCase)
	}
	return ""
}

func orAny(role string) string {
	if role == "" {
		return "any member"
	}
	return role
}

func (c Change) matches(before, after any) bool {
	if equalValues(before, after) {
		return false
	}
	if (c.Set || c.NewKey != "") && empty(after) {
		return false
	}
	if c.To != nil && !jsonv.Equal(c.To, after) {
		return false
	}
	if c.Not != nil && jsonv.Equal(c.Not, after) {
		return false
	}
	if c.NewKey != "" {
		am, _ := after.(map[string]any)
		bm, _ := before.(map[string]any)
		for k, v := range am {
			if strings.Contains(k, c.NewKey) {
				if old, ok := bm[k]; !ok || !jsonv.Equal(old, v) {
					return true
				}
			}
		}
		return false
	}
	return true
}

func (ft FaultTrigger) matches(f model.Fault) bool {
	if f.Kind != ft.Kind {
		return false
	}
	if ft.Role != "" {
		hit := false
		for _, tg := range f.Targets {
			if strings.HasPrefix(tg, ft.Role+" ") {
				hit = true
			}
		}
		if !hit {
			return false
		}
	}
	if ft.MinHold > 0 && (f.Removed.IsZero() || f.Removed.Sub(f.Injected) < ft.MinHold) {
		return false
	}
	return true
}

// get reads a dotted path of a CR (nil when absent).
func get(obj model.Object, path string) any {
	var cur any = map[string]any(obj)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// replicas is the desired state's spec.replicas; the CRD's default (3) when unset.
func replicas(obj model.Object) int64 {
	n, ok := jsonv.AsInt(get(obj, "spec.replicas"))
	if !ok {
		return 3
	}
	return n
}

// empty reports whether a value is unset: nil, or an empty object or list.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// equalValues compares two desired values, empty objects and lists counting as unset.
func equalValues(a, b any) bool {
	if empty(a) || empty(b) {
		return empty(a) && empty(b)
	}
	return jsonv.Equal(a, b)
}

// Verdict is what an untuned campaign did with a seeded bug.
type Verdict string

// The verdicts, best first.
const (
	// VerdictCaught: an alarm group from one of the bug's expected oracles that
	// the clean operator's campaign of the same seed did not raise.
	VerdictCaught Verdict = "caught"
	// VerdictMissed: the campaign reached the bug's trigger but raised no such group.
	VerdictMissed Verdict = "reached, missed"
	// VerdictNotReached: the campaign never reached the trigger within its budget.
	VerdictNotReached Verdict = "not reached"
	// VerdictError: the campaign could not run (UntunedRow.Err says why).
	VerdictError Verdict = "error"
)

// UntunedRow is one untuned campaign: a seeded bug's (or the clean operator's) under one seed.
type UntunedRow struct {
	Bug     string
	Pattern string
	Seed    int64
	Expect  []string
	Trigger string
	Verdict Verdict
	// Caught counts the new groups by expected oracle; CaughtStep is the
	// earliest step of those groups, CaughtAfter how long into the campaign it started.
	Caught      map[string]int
	CaughtStep  string
	CaughtAfter time.Duration
	// Reach is the first step that reached the trigger (nil: none).
	Reach *Reach
	// Other counts the new groups (absent from the clean campaign of the
	// seed) by oracle whose oracle the bug does not expect.
	Other map[string]int
	// Alarms counts the campaign's bug groups (for the clean operator: the
	// figure that must be 0); Misoperations its misoperation groups.
	Alarms, Misoperations int
	// AlarmOracles counts the bug groups by oracle.
	AlarmOracles map[string]int
	// Steps is the number of transitions judged; Duration the campaign's wall time.
	Steps    int
	Duration time.Duration
	// Dir is the campaign's results folder.
	Dir string
	Err error
}

// Classify judges a bug's untuned campaign rec against the clean operator's
// campaign of the same seed (nil when it could not run: every group is then new).
// A group is new when the clean campaign has no group of the same signature;
// a misoperation group counts under the oracles its findings come from.
func Classify(b Bug, seed int64, rec, clean *Record) UntunedRow {
	row := UntunedRow{Bug: b.Name, Pattern: b.Pattern, Seed: seed, Expect: b.Expect, Trigger: b.Trigger.What,
		Caught: map[string]int{}, Other: map[string]int{}}
	fillCounts(&row, rec)
	cleanSigs := map[string]bool{}
	if clean != nil {
		for _, gs := range [][]reports.AlarmGroup{clean.Summary.Alarms, clean.Summary.Misoperations} {
			for _, g := range gs {
				cleanSigs[g.Signature] = true
			}
		}
	}
	expect := map[string]bool{}
	for _, o := range b.Expect {
		expect[o] = true
	}
	first := time.Duration(-1)
	for _, gs := range [][]reports.AlarmGroup{rec.Summary.Alarms, rec.Summary.Misoperations} {
		for _, g := range gs {
			if cleanSigs[g.Signature] {
				continue
			}
			oracles := []string{g.Oracle}
			if g.Misoperation {
				oracles = rec.findingOracles(g.Signature, g.Oracle)
			}
			hit := false
			for _, o := range oracles {
				if expect[o] {
					row.Caught[o]++
					hit = true
				}
			}
			if !hit {
				for _, o := range oracles {
					row.Other[o]++
				}
				continue
			}
			for _, id := range g.Steps {
				at, ok := rec.after(id)
				if !ok {
					at = 1<<63 - 1 // a step the journal lacks sorts last
				}
				if first < 0 || at < first || (at == first && stepLess(id, row.CaughtStep)) {
					first, row.CaughtStep, row.CaughtAfter = at, id, at
				}
			}
		}
	}
	if row.CaughtAfter == 1<<63-1 {
		row.CaughtAfter = 0
	}
	if r, ok := b.Trigger.Reached(rec); ok {
		row.Reach = &r
	}
	switch {
	case len(row.Caught) > 0:
		row.Verdict = VerdictCaught
	case row.Reach != nil:
		row.Verdict = VerdictMissed
	default:
		row.Verdict = VerdictNotReached
	}
	return row
}

// fillCounts sets the row's figures from the campaign's summary.
func fillCounts(row *UntunedRow, rec *Record) {
	row.Alarms, row.Misoperations = len(rec.Summary.Alarms), len(rec.Summary.Misoperations)
	row.AlarmOracles = map[string]int{}
	for _, g := range rec.Summary.Alarms {
		row.AlarmOracles[g.Oracle]++
	}
	row.Steps = rec.Summary.StepsDone
}

// findingOracles lists the oracles of the findings with signature sig (a
// misoperation group's findings come from several); def when none is recorded.
func (r *Record) findingOracles(sig, def string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.Steps {
		for _, f := range s.Findings {
			if f.Signature == sig && !seen[f.Oracle] {
				seen[f.Oracle] = true
				out = append(out, f.Oracle)
			}
		}
	}
	if len(out) == 0 {
		return []string{def}
	}
	sort.Strings(out)
	return out
}

// CleanRow is the clean operator's untuned campaign under seed: its alarm
// groups are the figure that must be 0.
func CleanRow(seed int64, rec *Record) UntunedRow {
	row := UntunedRow{Bug: "clean", Pattern: "the clean operator", Seed: seed}
	fillCounts(&row, rec)
	return row
}
