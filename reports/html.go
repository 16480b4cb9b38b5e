package reports

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// HTMLFile is report.html's file name inside a results folder.
const HTMLFile = "report.html"

// Details is optional material for the HTML report beyond the summary. Its zero
// value is valid: the report then shows each group's first evidence only.
type Details struct {
	// Findings are every finding of the campaign; each alarm group then lists all
	// its occurrences with their evidence.
	Findings []model.Finding
	// Desired maps Step.ID() to the desired state declared at that step; each
	// group shows the CR declared where it was first seen.
	Desired map[string]model.Object
}

//go:embed report.html.tmpl
var reportTemplate string

//go:embed report.css
var reportCSS string

//go:embed report.js
var reportJS string

// reportTmpl is parsed once; executing an html/template is safe concurrently.
var reportTmpl = template.Must(template.New("report").Parse(reportTemplate))

// WriteHTML writes a self-contained report.html: no external assets (inline
// CSS, JS and SVG; a Content-Security-Policy forbids loading anything), readable
// offline and without JavaScript. Every value from the campaign is escaped by
// html/template.
func WriteHTML(w io.Writer, s Summary, d Details) error {
	if err := reportTmpl.Execute(w, buildView(s, d)); err != nil {
		return fmt.Errorf("render report.html: %w", err)
	}
	return nil
}

type htmlView struct {
	S        Summary
	CSP      string
	CSS      template.CSS
	JS       template.JS
	Started  string
	Finished string
	Elapsed  string
	Run      runView
	Stats    []stat
	Oracles  []OracleCount
	Coverage coverageView
	Chart    chartView
	Timeline []timelineRow
	Bugs     []groupView
	Misops   []groupView
	Warnings []groupView
	Time     *timeView
}

// timeView is the "where the time went" section (Summary.Time).
type timeView struct {
	Steps, Setup, Backoff, Unused string
	BackoffWaits                  int
	Phases, Kinds                 []timeRow
}

type timeRow struct {
	Name, Total, Percent string
	Steps                int
	// Width is the bar's width in percent.
	Width float64
}

func buildTimeView(t *TimeBreakdown) *timeView {
	if t == nil {
		return nil
	}
	v := &timeView{Steps: fmtDur(t.Steps.D()), Setup: fmtDur(t.Setup.D()), BackoffWaits: t.BackoffWaits}
	if t.Backoff > 0 {
		v.Backoff = fmtDur(t.Backoff.D())
	}
	if t.BudgetUnused > 0 {
		v.Unused = fmtDur(t.BudgetUnused.D())
	}
	rows := func(ts []TimeShare) []timeRow {
		var out []timeRow
		for _, x := range ts {
			out = append(out, timeRow{Name: x.Name, Total: fmtDur(x.Total.D()), Percent: strconv.FormatFloat(math.Round(x.Share*1000)/10, 'f', -1, 64) + "%",
				Steps: x.Steps, Width: math.Round(x.Share*1000) / 10})
		}
		return out
	}
	v.Phases, v.Kinds = rows(t.Phases), rows(t.Kinds)
	return v
}

type stat struct {
	Label, Value, Class, Href, Title string
}

// runView is the campaign's extent: desired-state steps and transitions, its
// time budget, and for a partial run why and where it stopped.
type runView struct {
	Partial bool
	// Stopped says why and where a partial run stopped: "stopped by its 40m
	// budget after 12 of 30 planned desired-state steps (20 transitions judged)".
	Stopped string
	// Dir is the results folder's name (Summary.CampaignID), for --resume.
	Dir string
	// DesiredDone counts the desired-state steps done (apply and recreate),
	// DesiredPlanned those planned (Summary.StepsPlanned), Transitions every
	// step judged (Summary.StepsDone).
	DesiredDone, DesiredPlanned, Transitions int
	// Budget is the time budget ("40m"), Used the run's wall-clock time.
	Budget, Used string
}

type coverageView struct {
	Percent    string
	BarWidth   string
	Top        []topCoverage
	Properties []propertyRow
	// Open unfolds the per-property table (when it is short).
	Open bool
}

// topCoverage is the coverage of one top-level property of the spec
// ("spec.config"): of its properties (itself and every one below it) and of
// the test cases planned for them.
type topCoverage struct {
	Name                string
	Props, PropsCovered int
	Cases, CasesRun     int
	BarWidth            string
	// Class is cov-full, cov-part or cov-none (by properties covered).
	Class string
	// Uncovered lists the first uncovered properties, MoreUncovered the rest's count.
	Uncovered     []string
	MoreUncovered int
	// NotRun lists the planned test cases no step ran (a hover title).
	NotRun string
}

// propertyTableOpen is the most properties whose table the report unfolds.
const propertyTableOpen = 60

type propertyRow struct {
	Path      string
	Covered   bool
	TestCases int
	CaseList  string
	Steps     []stepLink
	MoreSteps int
}

type stepLink struct {
	ID, Href string
}

type timelineRow struct {
	TimelineEntry
	Anchor   string
	Offset   string
	Converge string
	Overhead string
	Changed  string
	Class    string
	Faults   []faultView
	Avail    availView
}

// faultView is one fault as the timeline table and the alarm groups show it.
type faultView struct {
	Kind        string
	Targets     string
	Persistent  bool
	Held        string
	Unsupported string
	Title       string
}

// availView is a step's workload availability: "62.5%" over Requests, Low
// below lowAvailability.
type availView struct {
	Show     bool
	Percent  string
	Requests int
	Low      bool
	Title    string
}

// lowAvailability is the success rate below which the report highlights a step.
const lowAvailability = 0.8

type groupView struct {
	AlarmGroup
	Number      int
	Anchor      string
	Class       string
	StepLinks   []stepLink
	MoreSteps   int
	Evidence    []evidenceView
	Occurrences []occurrenceView
	Desired     string
	DesiredStep string
	// Reasons are the harness's misoperation labels of the group's steps
	// (distinct, in step order); Faults the faults of its first step.
	Reasons   []string
	Faults    []faultView
	FaultStep stepLink
}

type evidenceView struct {
	Where    string
	Detail   string
	Inline   bool
	Expected string
	Actual   string
	HasExp   bool
	HasAct   bool
	Diff     []diffRow
}

type diffRow struct {
	Sign  string
	Text  string
	Class string
}

type occurrenceView struct {
	Step     stepLink
	Summary  string
	Evidence []string
}

func buildView(s Summary, d Details) htmlView {
	v := htmlView{
		S:       s,
		CSS:     template.CSS(reportCSS),
		JS:      template.JS(reportJS),
		Started: fmtTime(s.Started),
		Oracles: s.Oracles,
		Time:    buildTimeView(s.Time),
	}
	v.CSP = "default-src 'none'; img-src data:; style-src 'sha256-" + hashOf(reportCSS) + "'; script-src 'sha256-" + hashOf(reportJS) + "'; base-uri 'none'; form-action 'none'"
	if s.Finished.IsZero() {
		v.Finished = "running"
	} else {
		v.Finished = fmtTime(s.Finished)
		v.Elapsed = fmtDur(s.RunTime())
	}
	cov := s.Coverage
	v.Run = buildRun(s)
	v.Stats = []stat{
		{Label: "desired-state steps done / planned", Value: fmt.Sprintf("%d / %d", v.Run.DesiredDone, v.Run.DesiredPlanned), Class: cond(s.Partial, "warn", ""), Href: "#timeline",
			Title: "steps that declared a new desired state from the plan (apply, recreate)"},
		{Label: "transitions judged", Value: strconv.Itoa(v.Run.Transitions), Href: "#timeline",
			Title: "every step the oracles judged: seeds, desired states, rollbacks, faults and differential re-runs"},
		{Label: "alarm groups", Value: strconv.Itoa(len(s.Alarms)), Class: cond(len(s.Alarms) > 0, "bad", "good"), Href: "#alarms"},
		{Label: "misoperation groups", Value: strconv.Itoa(len(s.Misoperations)), Class: cond(len(s.Misoperations) > 0, "warn", "good"), Href: "#misoperations"},
		{Label: "warning groups", Value: strconv.Itoa(len(s.Warnings)), Class: cond(len(s.Warnings) > 0, "warn", ""), Href: "#warnings"},
		{Label: "property coverage", Value: fmt.Sprintf("%d / %d (%.0f%%), %d effectively changed", cov.Covered, cov.Total, cov.Percent(), cov.Effective), Class: cond(cov.Covered < cov.Total, "warn", "good"), Href: "#coverage"},
		{Label: "transitions / hour", Value: strconv.FormatFloat(s.TransitionsPerHour, 'f', 1, 64)},
		{Label: "harness overhead p50 / p95", Value: fmt.Sprintf("%s / %s", fmtDur(s.HarnessOverhead.P50.D()), fmtDur(s.HarnessOverhead.P95.D()))},
		{Label: "workers", Value: strconv.Itoa(s.Workers)},
	}
	if n := len(s.HeldBack); n > 0 {
		why := make([]string, n)
		for i, h := range s.HeldBack {
			why[i] = h.ID + ": " + h.Reason
		}
		v.Stats = append(v.Stats, stat{Label: "cases held back to the end", Value: strconv.Itoa(n), Class: "warn", Title: strings.Join(why, "\n")})
	}
	if s.Shard != nil {
		v.Stats = append(v.Stats, stat{Label: "shard", Value: s.Shard.String(), Title: "one slice of the campaign's plan (gauntlet run --shard); gauntlet merge joins the shards' results"})
	}
	if m := s.Merged; m != nil {
		st := stat{Label: "shards merged", Value: shardList(m.Present) + " of " + strconv.Itoa(m.Count), Class: cond(m.Complete(), "good", "bad"),
			Title: "results folders joined by gauntlet merge; each shard's evidence is under shards/K"}
		if !m.Complete() {
			st.Value += " (missing " + shardList(m.Missing) + ")"
		}
		v.Stats = append(v.Stats, st)
	}
	if v.Run.Budget != "" {
		st := stat{Label: "time budget", Value: v.Run.Budget, Class: cond(s.Partial && s.StopReason == "budget", "warn", "")}
		if v.Run.Used != "" {
			st.Value += " (used " + v.Run.Used + ")"
		}
		v.Stats = append(v.Stats, st)
	}
	if s.FaultSteps > 0 || s.FaultsUnsupported > 0 {
		val := strconv.Itoa(s.FaultSteps)
		if s.FaultsUnsupported > 0 {
			val += fmt.Sprintf(" (%d unsupported)", s.FaultsUnsupported)
		}
		v.Stats = append(v.Stats, stat{Label: "fault steps", Value: val, Class: cond(s.FaultsUnsupported > 0, "warn", ""), Href: "#timeline"})
	}
	if s.MinAvailability != nil {
		st := stat{Label: "lowest availability", Value: fmtPercent(*s.MinAvailability), Class: cond(*s.MinAvailability < lowAvailability, "bad", "good")}
		if s.MinAvailabilityStep != "" {
			st.Value += " at " + s.MinAvailabilityStep
			st.Href = "#" + stepAnchor(s.MinAvailabilityStep)
		}
		v.Stats = append(v.Stats, st)
	}
	v.Coverage = coverageView{
		Percent:  fmt.Sprintf("%.1f", cov.Percent()),
		BarWidth: strconv.FormatFloat(math.Round(cov.Percent()*10)/10, 'f', -1, 64),
	}
	for _, p := range cov.Properties {
		r := propertyRow{Path: p.Path, Covered: p.Covered(), TestCases: len(p.TestCases), CaseList: strings.Join(p.TestCases, ", ")}
		r.Steps, r.MoreSteps = links(p.Steps, 6)
		v.Coverage.Properties = append(v.Coverage.Properties, r)
	}
	v.Coverage.Top = buildTopCoverage(cov, s.Timeline)
	v.Coverage.Open = len(cov.Properties) <= propertyTableOpen
	tl := append([]TimelineEntry(nil), s.Timeline...)
	SortTimeline(tl)
	origin := campaignOrigin(s)
	for _, e := range tl {
		r := timelineRow{
			TimelineEntry: e,
			Anchor:        stepAnchor(e.ID()),
			Converge:      fmtDur(e.Converge.D()),
			Overhead:      fmtDur(e.Overhead.D()),
			Changed:       strings.Join(e.Changed, ", "),
		}
		if !origin.IsZero() && !e.Started.IsZero() {
			r.Offset = "+" + fmtDur(e.Started.Sub(origin))
		}
		if e.TimedOut {
			r.Converge = "timed out"
		}
		r.Class = stepClass(e)
		if len(e.Faults) > 0 {
			r.Class += " faulted"
		}
		r.Faults = faultViews(e)
		r.Avail = buildAvail(e)
		v.Timeline = append(v.Timeline, r)
	}
	v.Chart = buildChart(s, tl)
	occ := map[groupKey][]model.Finding{}
	for _, g := range GroupFindings(d.Findings) {
		occ[g.key()] = g.Findings
	}
	steps := map[string]TimelineEntry{}
	for _, e := range tl {
		steps[e.ID()] = e
	}
	for i, g := range s.Alarms {
		v.Bugs = append(v.Bugs, buildGroupView(g, i+1, "alarm", occ, d.Desired, steps))
	}
	for i, g := range s.Misoperations {
		v.Misops = append(v.Misops, buildGroupView(g, i+1, "misop", occ, d.Desired, steps))
	}
	for i, g := range s.Warnings {
		v.Warnings = append(v.Warnings, buildGroupView(g, i+1, "warning", occ, d.Desired, steps))
	}
	return v
}

// buildRun counts the campaign's steps and says why a partial run stopped.
func buildRun(s Summary) runView {
	r := runView{Partial: s.Partial, Dir: s.CampaignID, DesiredPlanned: s.StepsPlanned, Transitions: s.StepsDone}
	for _, e := range s.Timeline {
		if coversProperties(e.Kind) {
			r.DesiredDone++
		}
	}
	if r.Transitions == 0 {
		r.Transitions = len(s.Timeline)
	}
	b, hasBudget := budgetOf(s)
	if hasBudget {
		r.Budget = fmtBudget(b)
	}
	if d := s.RunTime(); d > 0 {
		r.Used = fmtDur(d)
	}
	if !s.Partial {
		return r
	}
	switch {
	case s.StopReason == "budget" && hasBudget:
		r.Stopped = "stopped by its " + fmtBudget(b) + " budget"
	case s.StopReason == "budget":
		r.Stopped = "stopped by its time budget"
	case s.StopReason == "signal":
		r.Stopped = "stopped by a signal (SIGINT or SIGTERM)"
	case s.StopReason != "":
		r.Stopped = "stopped early (" + string(s.StopReason) + ")"
	default:
		r.Stopped = "stopped early"
	}
	if r.DesiredPlanned > 0 {
		r.Stopped += fmt.Sprintf(" after %d of %d planned desired-state steps", r.DesiredDone, r.DesiredPlanned)
	} else {
		r.Stopped += fmt.Sprintf(" after %d desired-state step%s", r.DesiredDone, plural(r.DesiredDone))
	}
	r.Stopped += fmt.Sprintf(" (%d transition%s judged)", r.Transitions, plural(r.Transitions))
	return r
}

// topLevelOf is the top-level spec property a property path belongs to:
// "spec.config.maxmemory" → "spec.config", "spec.ports[*].name" →
// "spec.ports"; a path outside spec keeps its first segment.
func topLevelOf(path string) string {
	prefix := "spec."
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		prefix, rest = "", path
	}
	if i := strings.IndexAny(rest, ".[{"); i > 0 {
		rest = rest[:i]
	}
	return prefix + rest
}

// maxUncoveredListed is how many uncovered properties a top-level row names.
const maxUncoveredListed = 4

// buildTopCoverage groups property coverage by top-level spec property: how
// many of its properties were changed, and how many of the test cases planned
// for them a desired-state step ran.
func buildTopCoverage(cov Coverage, tl []TimelineEntry) []topCoverage {
	ran := map[string]bool{}
	for _, e := range tl {
		if coversProperties(e.Kind) && e.TestCase != "" {
			ran[e.TestCase] = true
		}
	}
	type acc struct {
		topCoverage
		cases map[string]bool
	}
	by := map[string]*acc{}
	var names []string
	for _, p := range cov.Properties {
		n := topLevelOf(p.Path)
		a := by[n]
		if a == nil {
			a = &acc{topCoverage: topCoverage{Name: n}, cases: map[string]bool{}}
			by[n] = a
			names = append(names, n)
		}
		a.Props++
		if p.Covered() {
			a.PropsCovered++
		} else if len(a.Uncovered) < maxUncoveredListed {
			a.Uncovered = append(a.Uncovered, p.Path)
		} else {
			a.MoreUncovered++
		}
		for _, tc := range p.TestCases {
			a.cases[tc] = true
		}
	}
	sort.Strings(names)
	out := make([]topCoverage, 0, len(names))
	for _, n := range names {
		a := by[n]
		var notRun []string
		for tc := range a.cases {
			a.Cases++
			if ran[tc] {
				a.CasesRun++
			} else {
				notRun = append(notRun, tc)
			}
		}
		sort.Strings(notRun)
		if len(notRun) > 0 {
			a.NotRun = "not run: " + strings.Join(notRun, ", ")
		}
		pct := 100 * float64(a.PropsCovered) / float64(a.Props)
		a.BarWidth = strconv.FormatFloat(math.Round(pct*10)/10, 'f', -1, 64)
		switch {
		case a.PropsCovered == a.Props:
			a.Class = "cov-full"
		case a.PropsCovered == 0:
			a.Class = "cov-none"
		default:
			a.Class = "cov-part"
		}
		out = append(out, a.topCoverage)
	}
	return out
}

func buildGroupView(g AlarmGroup, n int, prefix string, occ map[groupKey][]model.Finding, desired map[string]model.Object, steps map[string]TimelineEntry) groupView {
	gv := groupView{AlarmGroup: g, Number: n, Anchor: fmt.Sprintf("%s-%d", prefix, n), Class: cond(g.Misoperation, "misop", "bug")}
	gv.StepLinks, gv.MoreSteps = links(g.Steps, 12)
	for _, e := range g.Evidence {
		gv.Evidence = append(gv.Evidence, buildEvidence(e))
	}
	fs := append([]model.Finding(nil), occ[g.key()]...)
	sort.SliceStable(fs, func(i, j int) bool { return compareSteps(fs[i].Step, fs[j].Step) < 0 })
	for _, f := range fs {
		o := occurrenceView{Step: stepLink{ID: f.Step, Href: "#" + stepAnchor(f.Step)}, Summary: f.Summary}
		for _, e := range f.Evidence {
			o.Evidence = append(o.Evidence, evidenceLine(e))
		}
		gv.Occurrences = append(gv.Occurrences, o)
	}
	if len(g.Steps) > 0 {
		if obj, ok := desired[g.Steps[0]]; ok && obj != nil {
			gv.Desired = prettyValue(obj)
			gv.DesiredStep = g.Steps[0]
		}
		if e, ok := steps[g.Steps[0]]; ok && len(e.Faults) > 0 {
			gv.Faults = faultViews(e)
			gv.FaultStep = stepLink{ID: e.ID(), Href: "#" + stepAnchor(e.ID())}
		}
	}
	seen := map[string]bool{}
	for _, id := range g.Steps {
		if r := steps[id].MisoperationReason; r != "" && !seen[r] {
			seen[r] = true
			gv.Reasons = append(gv.Reasons, r)
		}
	}
	return gv
}

func faultViews(e TimelineEntry) []faultView {
	var out []faultView
	for _, f := range e.Faults {
		fv := faultView{Kind: f.Kind, Targets: strings.Join(f.Targets, ", "), Persistent: f.Persistent, Unsupported: f.Unsupported}
		if h := f.Held(); h > 0 {
			fv.Held = fmtDur(h)
		}
		fv.Title = faultTitle(e, f)
		out = append(out, fv)
	}
	return out
}

// faultTitle describes a fault in one line: kind, targets, timing.
func faultTitle(e TimelineEntry, f FaultEntry) string {
	t := f.Kind
	if len(f.Targets) > 0 {
		t += " on " + strings.Join(f.Targets, ", ")
	}
	if f.Unsupported != "" {
		return t + ": not injected (unsupported: " + f.Unsupported + ")"
	}
	if !f.Injected.IsZero() && !e.Started.IsZero() {
		t += ", injected " + signedDur(f.Injected.Sub(e.Started)) + " after the step started"
	}
	h := f.Held()
	switch {
	case f.Persistent && h > 0:
		t += ", held across the desired state (" + fmtDur(h) + ")"
	case f.Persistent:
		t += ", struck while the desired state was declared"
	case h > 0:
		t += ", held " + fmtDur(h) + " on the converged state"
	default:
		t += ", on the converged state"
	}
	return t
}

// signedDur is fmtDur with a sign for negative durations ("-1.2s").
func signedDur(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDur(-d)
	}
	return "+" + fmtDur(d)
}

func buildAvail(e TimelineEntry) availView {
	if e.Availability == nil {
		return availView{}
	}
	rate := *e.Availability
	a := availView{Show: true, Percent: fmtPercent(rate), Requests: e.Requests, Low: rate < lowAvailability}
	a.Title = "workload success rate during the transition"
	if e.Requests > 0 {
		ok := int(math.Round(rate * float64(e.Requests)))
		a.Title += fmt.Sprintf(": %d of %d request(s) succeeded", ok, e.Requests)
	}
	if a.Low {
		a.Title += fmt.Sprintf(" (below %s)", fmtPercent(lowAvailability))
	}
	return a
}

// fmtPercent writes a rate (0..1) as a percentage to 0.1, rounded down so that
// a rate below 1 never reads 100%.
func fmtPercent(rate float64) string {
	return strconv.FormatFloat(math.Floor(rate*1000+1e-9)/10, 'f', 1, 64) + "%"
}

func buildEvidence(e model.Evidence) evidenceView {
	ev := evidenceView{
		Where:  strings.TrimSpace(e.Object + " " + e.Path),
		Detail: e.Detail,
		HasExp: e.Expected != nil,
		HasAct: e.Actual != nil,
	}
	if !ev.HasExp && !ev.HasAct {
		return ev
	}
	if (e.Expected == nil || isScalar(e.Expected)) && (e.Actual == nil || isScalar(e.Actual)) {
		ev.Inline = true
		if ev.HasExp {
			ev.Expected = compactValue(e.Expected)
		}
		if ev.HasAct {
			ev.Actual = compactValue(e.Actual)
		}
		return ev
	}
	for _, l := range DiffValues(e.Expected, e.Actual) {
		r := diffRow{Sign: string(rune(l.Op)), Text: l.Text}
		switch l.Op {
		case DiffExpected:
			r.Class = "del"
		case DiffActual:
			r.Class = "add"
		default:
			r.Class = "ctx"
		}
		ev.Diff = append(ev.Diff, r)
	}
	return ev
}

var anchorUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// stepAnchor is the HTML id of a step's timeline row.
func stepAnchor(id string) string {
	return "step-" + anchorUnsafe.ReplaceAllString(id, "-")
}

func links(ids []string, limit int) ([]stepLink, int) {
	var out []stepLink
	for i, id := range ids {
		if i == limit {
			return out, len(ids) - limit
		}
		out = append(out, stepLink{ID: id, Href: "#" + stepAnchor(id)})
	}
	return out, 0
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}

func cond(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

func clampF(f, lo, hi float64) float64 { return math.Min(math.Max(f, lo), hi) }

func fmtF(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// fmtDur formats a duration for people: "850ms", "12.3s", "4m05s", "2h03m".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
