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
	Stats    []stat
	Oracles  []OracleCount
	Coverage coverageView
	Chart    chartView
	Timeline []timelineRow
	Bugs     []groupView
	Misops   []groupView
}

type stat struct {
	Label, Value, Class, Href string
}

type coverageView struct {
	Percent    string
	BarWidth   string
	Properties []propertyRow
}

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

// chartView is the inline SVG timeline: one lane per worker, x is time since
// the campaign started, each step is a bar occupying its time slot whose height
// is its convergence time.
type chartView struct {
	Width, Height int
	PlotX, PlotW  int
	PlotEnd       int
	LabelX        int
	TickY         int
	Lanes         []laneView
	XTicks        []tickView
	MaxLabel      string
	Empty         bool
	AxisY         int
	ByOrder       bool
}

type laneView struct {
	Label  string
	Y, H   int
	LabelY int
	Bars   []barView
	Marks  []faultMark
}

// faultMark marks a fault on the chart: a triangle at its injection, and for a
// fault that held, a band from injection to removal along the lane's top.
type faultMark struct {
	Points       string
	BandX, BandW string
	BandY        int
	Class        string
	Href         string
	Title        string
}

type barView struct {
	X, Y, W, H string
	Class      string
	Href       string
	Title      string
}

type tickView struct {
	X      string
	Label  string
	Anchor string
}

func buildView(s Summary, d Details) htmlView {
	v := htmlView{
		S:       s,
		CSS:     template.CSS(reportCSS),
		JS:      template.JS(reportJS),
		Started: fmtTime(s.Started),
		Oracles: s.Oracles,
	}
	v.CSP = "default-src 'none'; img-src data:; style-src 'sha256-" + hashOf(reportCSS) + "'; script-src 'sha256-" + hashOf(reportJS) + "'; base-uri 'none'; form-action 'none'"
	if s.Finished.IsZero() {
		v.Finished = "running"
	} else {
		v.Finished = fmtTime(s.Finished)
		v.Elapsed = fmtDur(s.Finished.Sub(s.Started))
	}
	cov := s.Coverage
	v.Stats = []stat{
		{Label: "transitions done / planned", Value: fmt.Sprintf("%d / %d", s.StepsDone, s.StepsPlanned), Href: "#timeline"},
		{Label: "alarm groups", Value: strconv.Itoa(len(s.Alarms)), Class: cond(len(s.Alarms) > 0, "bad", "good"), Href: "#alarms"},
		{Label: "misoperation groups", Value: strconv.Itoa(len(s.Misoperations)), Class: cond(len(s.Misoperations) > 0, "warn", "good"), Href: "#misoperations"},
		{Label: "property coverage", Value: fmt.Sprintf("%d / %d (%.0f%%)", cov.Covered, cov.Total, cov.Percent()), Class: cond(cov.Covered < cov.Total, "warn", "good"), Href: "#coverage"},
		{Label: "transitions / hour", Value: strconv.FormatFloat(s.TransitionsPerHour, 'f', 1, 64)},
		{Label: "harness overhead p50 / p95", Value: fmt.Sprintf("%s / %s", fmtDur(s.HarnessOverhead.P50.D()), fmtDur(s.HarnessOverhead.P95.D()))},
		{Label: "workers", Value: strconv.Itoa(s.Workers)},
	}
	if s.Partial {
		why := "stopped early"
		switch s.StopReason {
		case "budget":
			why = "stopped by its time budget"
		case "signal":
			why = "stopped by a signal"
		}
		v.Stats = append([]stat{{Label: "partial run", Value: why + " (gauntlet run --resume continues it)", Class: "warn"}}, v.Stats...)
	}
	if s.Budget != "" {
		v.Stats = append(v.Stats, stat{Label: "time budget", Value: s.Budget})
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
	tl := append([]TimelineEntry(nil), s.Timeline...)
	SortTimeline(tl)
	for _, e := range tl {
		r := timelineRow{
			TimelineEntry: e,
			Anchor:        stepAnchor(e.ID()),
			Converge:      fmtDur(e.Converge.D()),
			Overhead:      fmtDur(e.Overhead.D()),
			Changed:       strings.Join(e.Changed, ", "),
		}
		if !s.Started.IsZero() && !e.Started.IsZero() {
			r.Offset = "+" + fmtDur(e.Started.Sub(s.Started))
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
	occ := map[string][]model.Finding{}
	for _, f := range d.Findings {
		sig := f.Signature
		if sig == "" {
			sig = model.Signature(f.Oracle, "summary:"+f.Summary)
		}
		k := groupKey(f.Misoperation, sig)
		occ[k] = append(occ[k], f)
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
	return v
}

func groupKey(misop bool, sig string) string {
	return strconv.FormatBool(misop) + "\x00" + sig
}

func buildGroupView(g AlarmGroup, n int, prefix string, occ map[string][]model.Finding, desired map[string]model.Object, steps map[string]TimelineEntry) groupView {
	gv := groupView{AlarmGroup: g, Number: n, Anchor: fmt.Sprintf("%s-%d", prefix, n), Class: cond(g.Misoperation, "misop", "bug")}
	gv.StepLinks, gv.MoreSteps = links(g.Steps, 12)
	for _, e := range g.Evidence {
		gv.Evidence = append(gv.Evidence, buildEvidence(e))
	}
	fs := append([]model.Finding(nil), occ[groupKey(g.Misoperation, g.Signature)]...)
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

// Chart geometry, in SVG user units (the SVG scales to the page width).
const (
	chartWidth  = 1000
	chartLeft   = 64
	chartRight  = 16
	chartTop    = 24
	laneHeight  = 64
	laneGap     = 10
	chartBottom = 34
	minBarWidth = 2.0
	// faultMarkSize is the width and height of a fault's triangle.
	faultMarkSize = 8
)

func buildChart(s Summary, tl []TimelineEntry) chartView {
	c := chartView{Width: chartWidth, PlotX: chartLeft, PlotW: chartWidth - chartLeft - chartRight, PlotEnd: chartWidth - chartRight, LabelX: chartLeft - 8}
	if len(tl) == 0 {
		c.Empty = true
		c.Height = chartTop + chartBottom
		return c
	}
	lanes := map[int][]TimelineEntry{}
	var workers []int
	for _, e := range tl {
		if _, ok := lanes[e.Worker]; !ok {
			workers = append(workers, e.Worker)
		}
		lanes[e.Worker] = append(lanes[e.Worker], e)
	}
	sort.Ints(workers)

	// x: time since start when every step has a start time, else step order.
	t0 := s.Started
	var tEnd time.Time
	timed := true
	for _, e := range tl {
		if e.Started.IsZero() {
			timed = false
			break
		}
		if t0.IsZero() || e.Started.Before(t0) {
			t0 = e.Started
		}
		end := e.Started.Add(e.Converge.D() + e.Overhead.D())
		if end.After(tEnd) {
			tEnd = end
		}
	}
	if timed && !s.Finished.IsZero() && s.Finished.After(tEnd) {
		tEnd = s.Finished
	}
	span := tEnd.Sub(t0)
	if !timed || span <= 0 {
		timed = false
		c.ByOrder = true
	}
	var maxConv time.Duration
	for _, e := range tl {
		if e.Converge.D() > maxConv {
			maxConv = e.Converge.D()
		}
	}
	if maxConv <= 0 {
		maxConv = time.Second
	}
	c.MaxLabel = fmtDur(maxConv)
	plotW := float64(c.PlotW)
	maxIdx := 0
	for _, w := range workers {
		maxIdx = max(maxIdx, len(lanes[w]))
	}
	xOf := func(t time.Time) float64 { return float64(chartLeft) + plotW*float64(t.Sub(t0))/float64(span) }
	barH := float64(laneHeight - 4)
	for li, w := range workers {
		y := chartTop + li*(laneHeight+laneGap)
		lane := laneView{Label: fmt.Sprintf("w%d", w), Y: y, H: laneHeight, LabelY: y + laneHeight/2 + 4}
		es := lanes[w]
		sort.SliceStable(es, func(i, j int) bool { return es[i].Index < es[j].Index })
		for i, e := range es {
			var x, wd float64
			if timed {
				x = xOf(e.Started)
				// The bar spans the convergence; a step that timed out
				// spans its whole slot, up to the next step's start.
				end := e.Started.Add(e.Converge.D())
				if e.TimedOut || e.Converge <= 0 {
					end = tEnd
					if i+1 < len(es) && es[i+1].Started.After(e.Started) {
						end = es[i+1].Started
					}
				}
				wd = xOf(end) - x - 1
			} else {
				slot := plotW / float64(maxIdx)
				x = float64(chartLeft) + slot*float64(i)
				wd = slot - 1
			}
			wd = max(wd, minBarWidth)
			h := barH * float64(e.Converge.D()) / float64(maxConv)
			if e.TimedOut {
				h = barH
			}
			h = max(h, 2)
			title := fmt.Sprintf("%s %s", e.ID(), e.Kind)
			if e.TestCase != "" {
				title += " " + e.TestCase
			}
			if e.TimedOut {
				title += ": timed out"
			} else {
				title += ": converged in " + fmtDur(e.Converge.D())
			}
			if e.Findings > 0 {
				title += fmt.Sprintf(", %d finding(s)", e.Findings)
			}
			if e.Misoperation {
				title += " (misoperation"
				if e.MisoperationReason != "" {
					title += ": " + e.MisoperationReason
				}
				title += ")"
			}
			if e.Availability != nil {
				title += fmt.Sprintf(", availability %s over %d request(s)", fmtPercent(*e.Availability), e.Requests)
			}
			for _, f := range e.Faults {
				title += "; fault: " + faultTitle(e, f)
			}
			class := "bar " + stepClass(e)
			if len(e.Faults) > 0 {
				class += " faulted"
			}
			lane.Bars = append(lane.Bars, barView{
				X:     fmtF(x),
				Y:     fmtF(float64(y+laneHeight) - h),
				W:     fmtF(wd),
				H:     fmtF(h),
				Class: class,
				Href:  "#" + stepAnchor(e.ID()),
				Title: title,
			})
			// Fault marks: at the injection time when the chart is timed and
			// the fault was injected, else along the bar's start.
			for fi, f := range e.Faults {
				mx := x + float64(fi)*faultMarkSize
				var bandX, bandW float64
				if timed && f.Unsupported == "" && !f.Injected.IsZero() {
					mx = clampF(xOf(f.Injected), float64(chartLeft), float64(chartLeft)+plotW)
					if !f.Removed.IsZero() && f.Removed.After(f.Injected) {
						bandX = mx
						bandW = max(clampF(xOf(f.Removed), float64(chartLeft), float64(chartLeft)+plotW)-mx, 1)
					}
				}
				m := faultMark{
					Points: fmtF(mx-faultMarkSize/2) + "," + strconv.Itoa(y) + " " + fmtF(mx+faultMarkSize/2) + "," + strconv.Itoa(y) + " " + fmtF(mx) + "," + strconv.Itoa(y+faultMarkSize),
					BandY:  y,
					Class:  "fmark",
					Href:   "#" + stepAnchor(e.ID()),
					Title:  e.ID() + " fault: " + faultTitle(e, f),
				}
				if bandW > 0 {
					m.BandX, m.BandW = fmtF(bandX), fmtF(bandW)
				}
				if f.Unsupported != "" {
					m.Class += " unsupported"
				}
				if f.Persistent {
					m.Class += " persistent"
				}
				lane.Marks = append(lane.Marks, m)
			}
		}
		c.Lanes = append(c.Lanes, lane)
	}
	c.AxisY = chartTop + len(workers)*(laneHeight+laneGap) - laneGap
	c.Height = c.AxisY + chartBottom
	c.TickY = c.AxisY + 18
	const ticks = 5
	for i := 0; i <= ticks; i++ {
		x := float64(chartLeft) + plotW*float64(i)/ticks
		var label string
		if timed {
			label = "+" + fmtDur(time.Duration(float64(span)*float64(i)/ticks).Round(time.Second))
		} else {
			label = "step " + strconv.Itoa(int(math.Round(float64(maxIdx)*float64(i)/ticks)))
		}
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case ticks:
			anchor = "end"
		}
		c.XTicks = append(c.XTicks, tickView{X: fmtF(x), Label: label, Anchor: anchor})
	}
	return c
}

func stepClass(e TimelineEntry) string {
	switch {
	case e.TimedOut:
		return "timeout"
	case e.Findings > 0 && e.Misoperation:
		return "misop"
	case e.Findings > 0:
		return "alarm"
	case e.Misoperation:
		return "misop-ok"
	}
	return "ok"
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
