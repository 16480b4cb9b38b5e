// Package reports turns a campaign's record into what a person acts on: the
// results folder's summary.json, a junit.xml for CI, a self-contained
// report.html, alarm groups (one bug seen on many steps is one group), and
// reproducers emitted as standalone Go regression tests.
//
// The campaign engine fills a Summary (Build derives most of it from the steps
// and findings it recorded) and hands it to WriteSummary, WriteJUnit and
// WriteHTML. Nothing here talks to a cluster or needs a browser at run time.
package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
	"github.com/gauntlet-dev/gauntlet/model"
)

// SummaryFormat is the version of summary.json this package writes. ReadSummary
// refuses a newer one and reads every older one. Format 2 added the fault and
// availability fields (Summary.FaultSteps, FaultsUnsupported, MinAvailability*;
// TimelineEntry.Faults, Availability, Requests, MisoperationReason).
const SummaryFormat = 2

// SummaryFile is the summary's file name inside a results folder.
const SummaryFile = "summary.json"

// Summary is summary.json: what a campaign did and found, in a stable shape that
// CI scripts can read (field order is the struct's; slices are sorted).
type Summary struct {
	// Format is SummaryFormat when written by this package.
	Format     int    `json:"format"`
	CampaignID string `json:"campaignId"`
	// Target names the operator under test (a target name or a target file).
	Target string `json:"target"`
	// Seed fixes every random choice; the campaign replays with it.
	Seed     int64     `json:"seed"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Workers  int       `json:"workers"`
	// StepsPlanned counts the desired-state steps planned (apply and recreate);
	// StepsDone counts the transitions judged (every kind of step: seeds,
	// rollbacks, faults and differential re-runs too).
	StepsPlanned int `json:"stepsPlanned"`
	StepsDone    int `json:"stepsDone"`
	// Partial is set when the campaign stopped before its plan was done, for
	// StopReason ("budget": its --budget ran out; "signal": SIGINT or SIGTERM);
	// `gauntlet run --resume` continues it. Budget is the time limit, if any.
	Partial    bool             `json:"partial,omitempty"`
	StopReason model.StopReason `json:"stopReason,omitempty"`
	Budget     model.Budget     `json:"budget,omitempty"`
	// Shard is the slice of the plan a sharded campaign ran (absent: the whole
	// plan); Merged is set instead on a summary Merge joined from shards. Both
	// are optional additions to format 2: an unsharded campaign's summary is
	// unchanged.
	Shard  *Shard  `json:"shard,omitempty"`
	Merged *Merged `json:"merged,omitempty"`
	// Oracles has one entry per oracle that ran, sorted by name, including those
	// that found nothing.
	Oracles []OracleCount `json:"oracles"`
	// Alarms are the bug groups, Misoperations the groups raised on steps that
	// declared a misoperation, Warnings what the campaign could not do (not
	// alarms); all in Group's order. Summaries written before Warnings existed
	// listed warning groups among Alarms: ReadSummary moves them.
	Alarms        []AlarmGroup `json:"alarms"`
	Misoperations []AlarmGroup `json:"misoperations"`
	Warnings      []AlarmGroup `json:"warnings,omitempty"`
	Coverage      Coverage     `json:"coverage"`
	// Active is how long the campaign ran, over all its runs (a resumed
	// campaign's Started is its last run's; the idle time between runs is not
	// counted); absent in summaries written before it existed, where Finished
	// minus Started stands in.
	Active Duration `json:"active,omitempty"`
	// HeldBack lists the test cases the breadth order held back to the end of
	// the campaign (beyond the test cluster's capacity), with why.
	HeldBack []HeldBack `json:"heldBack,omitempty"`
	// TransitionsPerHour is StepsDone over Active.
	TransitionsPerHour float64 `json:"transitionsPerHour"`
	// HarnessOverhead is the harness's own time per step beyond the operator's
	// convergence (apply, snapshot, oracles, journal).
	HarnessOverhead Overhead `json:"harnessOverhead"`
	// Time is where the campaign's time went: the steps' wall time per phase
	// and per kind, setup, back-off and unused budget (an optional addition to
	// format 2; absent when the steps recorded no phases).
	Time *TimeBreakdown `json:"time,omitempty"`
	// FaultSteps counts the steps that ran with at least one fault (OAT's
	// strategies); FaultsUnsupported counts the faults the cluster back end could
	// not inject (each is listed on its step, never dropped silently).
	FaultSteps        int `json:"faultSteps,omitempty"`
	FaultsUnsupported int `json:"faultsUnsupported,omitempty"`
	// MinAvailability is the lowest workload success rate (0..1) seen during a
	// transition, on step MinAvailabilityStep (the earliest on a tie) over
	// MinAvailabilityRequests requests; all absent when no workload ran.
	MinAvailability         *float64 `json:"minAvailability,omitempty"`
	MinAvailabilityStep     string   `json:"minAvailabilityStep,omitempty"`
	MinAvailabilityRequests int      `json:"minAvailabilityRequests,omitempty"`
	// Timeline has one entry per step done, sorted by start time, then worker and index.
	Timeline []TimelineEntry `json:"timeline"`
	// SimulatedContainers are the containers that ran simulated (Running and Ready
	// without a process, from an image-mapping rule with simulate: true) on the
	// campaign's clusters when it ended; absent when every container was a process.
	SimulatedContainers []SimulatedContainer `json:"simulatedContainers,omitempty"`
}

// SimulatedContainer is one container of a pod that ran without a process.
type SimulatedContainer struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Image     string `json:"image"`
}

// OracleCount is how much one oracle found.
type OracleCount struct {
	Oracle string `json:"oracle"`
	// Findings counts bug findings (one per failing step), Groups the distinct bugs.
	Findings int `json:"findings"`
	Groups   int `json:"groups"`
	// MisoperationFindings and MisoperationGroups count the same on misoperation steps.
	MisoperationFindings int `json:"misoperationFindings"`
	MisoperationGroups   int `json:"misoperationGroups"`
}

// AlarmGroup is every finding that shares a signature: one bug, however many
// steps it failed.
type AlarmGroup struct {
	// ID numbers bug and misoperation groups from 1 in Group's order (the
	// results folder's alarms/ID); warning groups have none.
	ID        int            `json:"id,omitempty"`
	Signature string         `json:"signature"`
	Oracle    string         `json:"oracle"`
	Severity  model.Severity `json:"severity"`
	// Summary is the first finding's summary.
	Summary string `json:"summary"`
	// Count is the number of findings in the group; Steps the distinct steps
	// (Step.ID()) in step order, so Steps[0] is where it was first seen.
	Count int      `json:"count"`
	Steps []string `json:"steps"`
	// Evidence is the first finding's evidence.
	Evidence     []model.Evidence `json:"evidence,omitempty"`
	Misoperation bool             `json:"misoperation,omitempty"`
	// Reproducer is the reproducer's folder relative to the results folder
	// ("alarms/3"), GoTest the generated Go test file, when there is one.
	Reproducer string `json:"reproducer,omitempty"`
	GoTest     string `json:"goTest,omitempty"`
	// GoTestError says why no Go test could be generated for the reproducer.
	GoTestError string `json:"goTestError,omitempty"`
	// ReproducerSteps is the length of the minimized sequence; Confirmed is set
	// when re-running it raised the alarm again.
	ReproducerSteps int  `json:"reproducerSteps,omitempty"`
	Confirmed       bool `json:"confirmed,omitempty"`
}

// TimelineEntry is one step of one worker.
type TimelineEntry struct {
	Worker int            `json:"worker"`
	Index  int            `json:"index"`
	Kind   model.StepKind `json:"kind"`
	// TestCase is the inputgen test case the step executed, if any.
	TestCase     string    `json:"testCase,omitempty"`
	Misoperation bool      `json:"misoperation,omitempty"`
	Started      time.Time `json:"started"`
	// Converge is how long the system took to converge (zero when TimedOut or Stuck).
	Converge Duration `json:"convergeSeconds"`
	TimedOut bool     `json:"timedOut,omitempty"`
	// Stuck is set when the step ended early, without progress for the stuck window.
	Stuck bool `json:"stuck,omitempty"`
	// Overhead is the harness's time on the step beyond Converge, when measured.
	Overhead Duration `json:"overheadSeconds,omitzero"`
	// Findings counts the findings raised on the step (bugs and misoperations).
	Findings int `json:"findings"`
	// Changed lists the CR property paths the step changed.
	Changed []string `json:"changed,omitempty"`
	// MisoperationReason says why the harness (rather than the test case)
	// labelled the step a misoperation.
	MisoperationReason string `json:"misoperationReason,omitempty"`
	// Faults are the faults the step ran with, in injection order.
	Faults []FaultEntry `json:"faults,omitempty"`
	// Availability is the workload's success rate (0..1) during the transition
	// over Requests requests; nil when no workload ran.
	Availability *float64 `json:"availability,omitempty"`
	Requests     int      `json:"requests,omitempty"`
}

// FaultEntry is one fault a step ran with, as summary.json records it.
type FaultEntry struct {
	// Kind is the campaign's fault kind ("pod-kill", "partition", "operator-crash", …).
	Kind string `json:"kind"`
	// Targets are what it hit, as the campaign recorded them ("primary gauntlet-w0/vk-0").
	Targets []string `json:"targets,omitempty"`
	// Persistent faults were held while the step's new desired state was
	// declared; the others struck the converged state.
	Persistent bool `json:"persistent,omitempty"`
	// Injected and Removed are when the fault started and was healed (Removed is
	// absent for instantaneous faults such as a pod kill).
	Injected time.Time `json:"injected,omitzero"`
	Removed  time.Time `json:"removed,omitzero"`
	// Unsupported says why the back end could not inject it; the step then ran
	// without it.
	Unsupported string `json:"unsupported,omitempty"`
}

// Held is how long the fault held (zero for an instantaneous or unsupported fault).
func (f FaultEntry) Held() time.Duration {
	if f.Injected.IsZero() || f.Removed.IsZero() || f.Removed.Before(f.Injected) {
		return 0
	}
	return f.Removed.Sub(f.Injected)
}

// ID is the step's Step.ID(): "w<worker>/s<index>".
func (e TimelineEntry) ID() string {
	s := model.Step{Worker: e.Worker, Index: e.Index}
	return s.ID()
}

// Coverage is property coverage: a property is covered once an executed step
// changed it (directly, or through one of its test cases).
type Coverage struct {
	Total   int `json:"total"`
	Covered int `json:"covered"`
	// Effective counts the covered properties whose effective value an executed
	// step changed (not set to its default or to what it already was).
	Effective int `json:"effective"`
	// Properties are sorted by path.
	Properties []PropertyCoverage `json:"properties"`
}

// Percent is Covered/Total in percent (100 when there is nothing to cover).
func (c Coverage) Percent() float64 {
	if c.Total == 0 {
		return 100
	}
	return 100 * float64(c.Covered) / float64(c.Total)
}

// PropertyCoverage is one CR property: the test cases planned for it and the
// steps that changed it.
type PropertyCoverage struct {
	Path      string   `json:"path"`
	TestCases []string `json:"testCases,omitempty"`
	Steps     []string `json:"steps,omitempty"`
	// Effective is true once an executed step changed the property's effective value.
	Effective bool `json:"effective,omitempty"`
}

// Covered reports whether a step changed the property.
func (p PropertyCoverage) Covered() bool { return len(p.Steps) > 0 }

// Overhead summarises the harness's per-step overhead.
type Overhead struct {
	// Steps is how many steps had a measured overhead.
	Steps int      `json:"steps"`
	Mean  Duration `json:"meanSeconds"`
	P50   Duration `json:"p50Seconds"`
	P95   Duration `json:"p95Seconds"`
	Max   Duration `json:"maxSeconds"`
}

// Duration is a time.Duration written to JSON as seconds (a number, to the
// millisecond), so that CI scripts can compute with it.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// String formats d as time.Duration does, rounded to the millisecond.
func (d Duration) String() string { return time.Duration(d).Round(time.Millisecond).String() }

// MarshalJSON writes d as seconds with millisecond precision.
func (d Duration) MarshalJSON() ([]byte, error) {
	ms := time.Duration(d).Round(time.Millisecond).Milliseconds()
	return []byte(strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)), nil
}

// UnmarshalJSON reads seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
		return fmt.Errorf("duration %s: want a number of seconds", b)
	}
	*d = Duration(math.Round(f * float64(time.Second)))
	return nil
}

// ErrNewerSummary is returned by ReadSummary for a summary written by a newer
// Gauntlet, whose fields this version cannot interpret.
var ErrNewerSummary = errors.New("summary.json was written by a newer Gauntlet (format above " + strconv.Itoa(SummaryFormat) + "): read it with that version")

// MarshalSummary encodes s as WriteSummary writes it: indented JSON with a
// trailing newline, nil slices written as [] so readers need no null checks.
func MarshalSummary(s Summary) ([]byte, error) {
	s = normalize(s)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encode summary: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteSummary writes s to dir/summary.json atomically (a temporary file synced
// and renamed over the old one), so a reader never sees half a summary.
func WriteSummary(dir string, s Summary) error {
	b, err := MarshalSummary(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, SummaryFile), b, 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// ReadSummary reads dir/summary.json strictly: unknown fields and trailing data
// are errors, and so is a summary from a newer format.
func ReadSummary(dir string) (Summary, error) {
	path := filepath.Join(dir, SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Summary{}, fmt.Errorf("read summary: %w (is %s a results folder?)", err, dir)
	}
	s, err := UnmarshalSummary(b)
	if err != nil {
		return Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// UnmarshalSummary decodes a summary.json document as ReadSummary does.
func UnmarshalSummary(b []byte) (Summary, error) {
	var probe struct {
		Format int `json:"format"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&probe); err != nil {
		return Summary{}, fmt.Errorf("decode summary: %w", err)
	}
	if probe.Format > SummaryFormat {
		return Summary{}, fmt.Errorf("format %d: %w", probe.Format, ErrNewerSummary)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Summary
	if err := dec.Decode(&s); err != nil {
		return Summary{}, fmt.Errorf("decode summary: %w", err)
	}
	if dec.More() {
		return Summary{}, errors.New("decode summary: trailing data after the JSON document")
	}
	if s.Warnings == nil {
		// Written before warnings had a list of their own: they sat among the alarms.
		var alarms []AlarmGroup
		for _, g := range s.Alarms {
			if g.Warning() {
				s.Warnings = append(s.Warnings, g)
			} else {
				alarms = append(alarms, g)
			}
		}
		if s.Warnings != nil {
			s.Alarms = alarms
			if s.Alarms == nil {
				s.Alarms = []AlarmGroup{}
			}
		}
	}
	return s, nil
}

// normalize fills Format and turns nil slices into empty ones.
func normalize(s Summary) Summary {
	if s.Format == 0 {
		s.Format = SummaryFormat
	}
	if s.Oracles == nil {
		s.Oracles = []OracleCount{}
	}
	if s.Alarms == nil {
		s.Alarms = []AlarmGroup{}
	}
	if s.Misoperations == nil {
		s.Misoperations = []AlarmGroup{}
	}
	if s.Coverage.Properties == nil {
		s.Coverage.Properties = []PropertyCoverage{}
	}
	if s.Timeline == nil {
		s.Timeline = []TimelineEntry{}
	}
	// JSON cannot carry NaN or infinities: a rate set by hand is sanitized as
	// Build does (on a copy, the caller's timeline is left alone).
	s.Timeline = append([]TimelineEntry{}, s.Timeline...)
	for i := range s.Timeline {
		s.Timeline[i].Availability = availability(s.Timeline[i].Availability)
	}
	s.MinAvailability = availability(s.MinAvailability)
	for _, gs := range [][]AlarmGroup{s.Alarms, s.Misoperations, s.Warnings} {
		for i := range gs {
			if gs[i].Steps == nil {
				gs[i].Steps = []string{}
			}
		}
	}
	return s
}

// StepRecord is one executed step as Build needs it: the recorded step (its
// faults and misoperation reason included), the harness's own time on it beyond
// convergence (zero when not measured) and the workload's availability.
type StepRecord struct {
	Step     model.Step
	Overhead time.Duration
	// Availability is the workload's success rate during the transition, 0..1,
	// over Requests requests; nil when no workload ran. A value outside 0..1 is
	// clamped; NaN or an infinity counts as nil.
	Availability *float64
	Requests     int
}

// HeldBack is a test case the campaign's order runs last, and why.
type HeldBack struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// PropertyPlan is one CR property the plan meant to change, with its test cases.
type PropertyPlan struct {
	Path      string
	TestCases []string
	// Effective lists the test cases that change the property's effective value.
	Effective []string
}

// BuildInput is what a campaign recorded; Build derives a Summary from it.
type BuildInput struct {
	CampaignID   string
	Target       string
	Seed         int64
	Started      time.Time
	Finished     time.Time
	Workers      int
	StepsPlanned int
	// Oracles names every oracle that ran (so one that found nothing is listed).
	Oracles    []string
	Steps      []StepRecord
	Findings   []model.Finding
	Properties []PropertyPlan
	// HeldBack are the test cases the order held back to the end (Summary.HeldBack).
	HeldBack []HeldBack
	// Stopped says why the campaign ended before its plan was done ("budget",
	// "signal"); Budget is its time limit, if any.
	Stopped model.StopReason
	Budget  time.Duration
	// Shard is the slice of the plan the campaign ran (nil: the whole plan).
	Shard *Shard
	// Active is how long the campaign ran over all its runs (zero: Finished
	// minus Started, a campaign that ran once).
	Active time.Duration
	// SimulatedContainers are the containers that ran simulated (see Summary).
	SimulatedContainers []SimulatedContainer
	// Time is the campaign-level time beside the steps' phases (Summary.Time).
	Time CampaignTime
}

// Build derives a Summary: counts per oracle, alarm and misoperation groups,
// property coverage, the timeline, transitions per hour and harness overhead.
// Reproducer paths are left for the caller to fill in on the groups.
func Build(in BuildInput) Summary {
	s := Summary{
		Format:       SummaryFormat,
		CampaignID:   in.CampaignID,
		Target:       in.Target,
		Seed:         in.Seed,
		Started:      in.Started,
		Finished:     in.Finished,
		Workers:      in.Workers,
		StepsPlanned: in.StepsPlanned,
		StepsDone:    len(in.Steps),
		Partial:      in.Stopped != "",
		StopReason:   in.Stopped,
	}
	if in.Shard != nil {
		sh := *in.Shard
		s.Shard = &sh
	}
	s.SimulatedContainers = append([]SimulatedContainer(nil), in.SimulatedContainers...)
	s.Budget = model.Budget(in.Budget)
	groups := Group(in.Findings)
	s.Alarms, s.Misoperations, s.Warnings = SplitGroups(groups)
	s.Oracles = countOracles(in.Oracles, in.Findings, groups)
	s.Timeline = buildTimeline(in.Steps, in.Findings)
	s.Coverage = buildCoverage(in.Properties, in.Steps)
	s.HeldBack = in.HeldBack
	s.Active = Duration(in.Active)
	if in.Active <= 0 && !in.Finished.IsZero() && in.Finished.After(in.Started) {
		s.Active = Duration(in.Finished.Sub(in.Started))
	}
	if s.Active > 0 {
		s.TransitionsPerHour = math.Round(float64(len(in.Steps))/s.Active.D().Hours()*10) / 10
	}
	var over []time.Duration
	for _, r := range in.Steps {
		if r.Overhead > 0 {
			over = append(over, r.Overhead)
		}
	}
	s.HarnessOverhead = OverheadStats(over)
	s.Time = buildTime(in)
	for _, e := range s.Timeline { // in timeline order: the earliest wins a tie
		if len(e.Faults) > 0 {
			s.FaultSteps++
		}
		for _, f := range e.Faults {
			if f.Unsupported != "" {
				s.FaultsUnsupported++
			}
		}
		if e.Availability != nil && (s.MinAvailability == nil || *e.Availability < *s.MinAvailability) {
			v := *e.Availability
			s.MinAvailability, s.MinAvailabilityStep, s.MinAvailabilityRequests = &v, e.ID(), e.Requests
		}
	}
	return normalize(s)
}

// OverheadStats summarises per-step overheads (mean, median, 95th percentile
// by nearest rank, maximum).
func OverheadStats(ds []time.Duration) Overhead {
	if len(ds) == 0 {
		return Overhead{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Overhead{
		Steps: len(s),
		Mean:  Duration(sum / time.Duration(len(s))),
		P50:   Duration(rank(0.50)),
		P95:   Duration(rank(0.95)),
		Max:   Duration(s[len(s)-1]),
	}
}

func countOracles(names []string, findings []model.Finding, groups []AlarmGroup) []OracleCount {
	by := map[string]*OracleCount{}
	get := func(n string) *OracleCount {
		c := by[n]
		if c == nil {
			c = &OracleCount{Oracle: n}
			by[n] = c
		}
		return c
	}
	for _, n := range names {
		get(n)
	}
	for _, f := range findings {
		c := get(f.Oracle)
		if f.Misoperation {
			c.MisoperationFindings++
		} else {
			c.Findings++
		}
	}
	for _, g := range groups {
		c := get(g.Oracle)
		if g.Misoperation {
			c.MisoperationGroups++
		} else {
			c.Groups++
		}
	}
	out := make([]OracleCount, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Oracle < out[j].Oracle })
	return out
}

func buildTimeline(steps []StepRecord, findings []model.Finding) []TimelineEntry {
	perStep := map[string]int{}
	for _, f := range findings {
		perStep[f.Step]++
	}
	out := make([]TimelineEntry, 0, len(steps))
	for _, r := range steps {
		st := r.Step
		out = append(out, TimelineEntry{
			Worker:       st.Worker,
			Index:        st.Index,
			Kind:         st.Kind,
			TestCase:     st.TestCase,
			Misoperation: st.Misoperation,
			Started:      st.Started,
			Converge:     Duration(st.ConvergeTime()),
			TimedOut:     st.TimedOut,
			Stuck:        st.Stuck,
			Overhead:     Duration(r.Overhead),
			Findings:     perStep[st.ID()],
			Changed:      append([]string(nil), st.Changed...),

			MisoperationReason: st.MisoperationReason,
			Faults:             faultEntries(st.Faults),
			Availability:       availability(r.Availability),
			Requests:           max(r.Requests, 0),
		})
	}
	SortTimeline(out)
	return out
}

func faultEntries(fs []model.Fault) []FaultEntry {
	if len(fs) == 0 {
		return nil
	}
	out := make([]FaultEntry, 0, len(fs))
	for _, f := range fs {
		out = append(out, FaultEntry{
			Kind:        f.Kind,
			Targets:     append([]string(nil), f.Targets...),
			Persistent:  f.Persistent,
			Injected:    f.Injected,
			Removed:     f.Removed,
			Unsupported: f.Unsupported,
		})
	}
	return out
}

// availability copies a success rate, clamped to 0..1 (nil for NaN or an
// infinity, which JSON cannot carry).
func availability(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	v := min(max(*p, 0), 1)
	return &v
}

// SortTimeline orders entries by start time, then worker, then index.
func SortTimeline(t []TimelineEntry) {
	sort.SliceStable(t, func(i, j int) bool {
		a, b := t[i], t[j]
		if !a.Started.Equal(b.Started) {
			return a.Started.Before(b.Started)
		}
		if a.Worker != b.Worker {
			return a.Worker < b.Worker
		}
		return a.Index < b.Index
	})
}

// coversProperties says which step kinds count for property coverage: those
// that declare a new desired state from the plan.
func coversProperties(k model.StepKind) bool {
	return k == model.StepApply || k == model.StepRecreate
}

func buildCoverage(props []PropertyPlan, steps []StepRecord) Coverage {
	byPath := map[string]*PropertyCoverage{}
	for _, p := range props {
		pc := byPath[p.Path]
		if pc == nil {
			pc = &PropertyCoverage{Path: p.Path}
			byPath[p.Path] = pc
		}
		pc.TestCases = append(pc.TestCases, p.TestCases...)
	}
	effective := map[string][]*PropertyCoverage{}
	for _, p := range props {
		for _, tc := range p.Effective {
			effective[tc] = append(effective[tc], byPath[p.Path])
		}
	}
	byCase := map[string][]*PropertyCoverage{}
	for _, pc := range byPath {
		pc.TestCases = sortedUnique(pc.TestCases)
		for _, tc := range pc.TestCases {
			byCase[tc] = append(byCase[tc], pc)
		}
	}
	ordered := append([]StepRecord(nil), steps...)
	sort.SliceStable(ordered, func(i, j int) bool {
		return compareSteps(ordered[i].Step.ID(), ordered[j].Step.ID()) < 0
	})
	for _, r := range ordered {
		st := r.Step
		if !coversProperties(st.Kind) {
			continue
		}
		hit := map[*PropertyCoverage]bool{}
		for _, pc := range byCase[st.TestCase] {
			hit[pc] = true
		}
		for _, c := range st.Changed {
			if pc := byPath[c]; pc != nil {
				hit[pc] = true
			}
		}
		for pc := range hit {
			pc.Steps = append(pc.Steps, st.ID())
		}
		for _, pc := range effective[st.TestCase] {
			pc.Effective = true
		}
	}
	cov := Coverage{Total: len(byPath), Properties: make([]PropertyCoverage, 0, len(byPath))}
	for _, pc := range byPath {
		if pc.Covered() {
			cov.Covered++
		}
		if pc.Effective {
			cov.Effective++
		}
		cov.Properties = append(cov.Properties, *pc)
	}
	sort.Slice(cov.Properties, func(i, j int) bool { return cov.Properties[i].Path < cov.Properties[j].Path })
	return cov
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := append([]string(nil), s...)
	sort.Strings(out)
	n := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[n-1] {
			out[n] = out[i]
			n++
		}
	}
	return out[:n]
}

// RunTime is how long the campaign ran: Active, or for a summary written
// before Active existed, Finished minus Started (zero while running).
func (s Summary) RunTime() time.Duration {
	if s.Active > 0 {
		return s.Active.D()
	}
	if !s.Started.IsZero() && s.Finished.After(s.Started) {
		return s.Finished.Sub(s.Started)
	}
	return 0
}
