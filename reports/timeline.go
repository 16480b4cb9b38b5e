package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The timeline chart is inline SVG (no script, no library): one lane per
// worker, each step a bar from its start to its convergence (or, when it timed
// out, to the worker's next step), coloured by outcome; fault injections as
// triangles (a band while a fault held); under the bars a strip with each
// transition's workload availability; x in minutes since the campaign started.
// Idle gaps of a stopped-and-resumed campaign are cut out of the axis.

// Chart geometry, in SVG user units (one CSS pixel at the chart's natural width).
const (
	chartWidth  = 1000 // natural width; a busier chart grows (up to maxChartWidth) and scrolls
	chartLeft   = 52
	chartRight  = 16
	chartTop    = 8
	chartBottom = 40 // tick labels and the axis title
	laneGap     = 8
	// A lane: fault marks on top, the step bars, then the availability strip.
	laneMarkH   = 9
	laneBarH    = 22
	laneStripG  = 3
	laneStripH  = 12
	minBarWidth = 2.0
	// minVisibleWidth is the narrowest bar, one squeezed between its neighbours.
	minVisibleWidth = 1.0
	// faultMarkSize is the width and height of a fault's triangle.
	faultMarkSize = 8
	// pxPerStep is the least room per step of the busiest lane: a chart that
	// would give less grows wider (it scrolls inside its figure).
	pxPerStep     = 6
	maxPxPerStep  = 24
	maxChartWidth = 12000
	// minTickSpacing is the least room between two labelled ticks.
	minTickSpacing = 70
	// idleGap is the shortest stretch with no step running on any worker that
	// the axis cuts out (a campaign stopped by its budget and resumed the next
	// night); breakWidth is what such a gap takes on the axis instead.
	idleGap    = 15 * time.Minute
	breakWidth = 18
)

// chartView is the timeline chart as the template draws it.
type chartView struct {
	Width, Height          int
	PlotX, PlotW, PlotEnd  int
	PlotTop                int
	LabelX                 int
	AxisY, TickY, AxisNote int
	TickMarkY              int
	Lanes                  []laneView
	XTicks                 []tickView
	Breaks                 []breakView
	Budget                 *budgetView
	Empty                  bool
	ByOrder                bool
	// Wide charts keep their natural size and scroll; the others scale to the page.
	Wide     bool
	HasAvail bool
	AxisText string
	Label    string
}

type laneView struct {
	Worker         int
	Label, Title   string
	Y, H           int
	LabelY         int
	StripY, StripH int
	// Strip80Y is the y of the strip's lowAvailability line.
	Strip80Y string
	Bars     []barView
	Marks    []faultMark
	Avail    []availMark
}

// faultMark marks a fault on the chart: a triangle at its injection, and for a
// fault that held, a band from injection to removal along the bar's top.
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
	Kind       string
	Step       string
	Href       string
	Title      string
}

// availMark is one transition's availability in its lane's strip: the served
// share from the bottom, the failed share above it.
type availMark struct {
	Step         string
	X, W         string
	OKY, OKH     string
	LossY, LossH string
	Low          bool
	Href         string
	Title        string
}

type tickView struct {
	X      string
	Label  string
	Anchor string
}

// breakView is an idle gap cut out of the time axis.
type breakView struct {
	X     string
	Path  string
	Label string
	Title string
}

// budgetView is the vertical line where the campaign's time budget ran out.
type budgetView struct {
	X     string
	Label string
	Title string
}

// outcome is how a step ended, as the report colours and names it.
type outcome struct {
	// Class is the CSS class: ok, alarm, misop (alarm on a misoperation),
	// misop-ok (a misoperation that passed), timeout, stuck.
	Class string
	// Verdict is the outcome in words.
	Verdict string
}

// isStuck reports whether the step ended early without progress (the stuck
// window of docs/architecture.md §3) rather than at the hard timeout.
func isStuck(e TimelineEntry) bool { return e.Stuck && !e.TimedOut }

// stepOutcome classifies a step; stuck comes from isStuck.
func stepOutcome(e TimelineEntry, stuck bool) outcome {
	var o outcome
	switch {
	case stuck:
		o = outcome{"stuck", "stuck: ended early, it would never converge"}
	case e.TimedOut:
		o = outcome{"timeout", "timed out"}
	case e.Findings > 0 && e.Misoperation:
		o = outcome{"misop", "alarm on a misoperation"}
	case e.Findings > 0:
		o = outcome{"alarm", "alarm"}
	case e.Misoperation:
		o = outcome{"misop-ok", "misoperation, passed"}
	default:
		o = outcome{"ok", "clean"}
	}
	if e.Findings > 0 {
		o.Verdict += fmt.Sprintf(" (%d finding%s)", e.Findings, plural(e.Findings))
	}
	return o
}

func stepClass(e TimelineEntry) string { return stepOutcome(e, isStuck(e)).Class }

func plural(n int) string { return cond(n == 1, "", "s") }

// timeAxis maps instants to x: segments of activity laid side by side, each
// idle gap of at least idleGap cut down to breakWidth.
type timeAxis struct {
	t0   time.Time
	segs []axisSeg
}

type axisSeg struct {
	from, to time.Time
	x0, x1   float64
}

type interval struct{ from, to time.Time }

// newTimeAxis lays out the intervals (any order) over [x0, x0+w].
func newTimeAxis(ivs []interval, x0, w float64) timeAxis {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].from.Before(ivs[j].from) })
	var merged []interval
	for _, iv := range ivs {
		if iv.to.Before(iv.from) {
			iv.to = iv.from
		}
		if n := len(merged); n > 0 && iv.from.Sub(merged[n-1].to) < idleGap {
			if iv.to.After(merged[n-1].to) {
				merged[n-1].to = iv.to
			}
			continue
		}
		merged = append(merged, iv)
	}
	a := timeAxis{t0: merged[0].from}
	var total time.Duration
	for _, m := range merged {
		total += m.to.Sub(m.from)
	}
	timeW := w - float64(len(merged)-1)*breakWidth
	x := x0
	for i, m := range merged {
		sw := 0.0
		if total > 0 {
			sw = timeW * float64(m.to.Sub(m.from)) / float64(total)
		} else {
			sw = timeW / float64(len(merged))
		}
		if i == len(merged)-1 {
			sw = x0 + w - x // no rounding drift at the right edge
		}
		a.segs = append(a.segs, axisSeg{from: m.from, to: m.to, x0: x, x1: x + sw})
		x += sw + breakWidth
	}
	return a
}

// x maps t onto the axis (an instant inside a cut gap lands on the gap's left edge).
func (a timeAxis) x(t time.Time) float64 {
	for i, s := range a.segs {
		if t.After(s.to) {
			if i+1 < len(a.segs) && !t.Before(a.segs[i+1].from) {
				continue
			}
			return s.x1
		}
		if !t.After(s.from) || !s.to.After(s.from) {
			return s.x0
		}
		return s.x0 + (s.x1-s.x0)*float64(t.Sub(s.from))/float64(s.to.Sub(s.from))
	}
	return a.segs[0].x0
}

// active is the time the axis shows (gaps excluded).
func (a timeAxis) active() time.Duration {
	var d time.Duration
	for _, s := range a.segs {
		d += s.to.Sub(s.from)
	}
	return d
}

// nearBreak reports whether x is too close to a cut gap for a tick label
// (the gap has its own label).
func (a timeAxis) nearBreak(x float64) bool {
	for i := 1; i < len(a.segs); i++ {
		if math.Abs(x-(a.segs[i-1].x1+a.segs[i].x0)/2) < minTickSpacing/2 {
			return true
		}
	}
	return false
}

// tickSteps are the candidate tick intervals, in minutes.
var tickSteps = []float64{0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 720, 1440}

// tickStep picks the smallest candidate interval that keeps at most maxTicks
// intervals over minutes.
func tickStep(minutes float64, maxTicks int) float64 {
	maxTicks = max(maxTicks, 1)
	for _, s := range tickSteps {
		if minutes/s <= float64(maxTicks) {
			return s
		}
	}
	return math.Ceil(minutes/float64(maxTicks)/1440) * 1440
}

// fmtMinutes writes a tick value in minutes: "0", "2", "0.5", "1.25".
func fmtMinutes(m float64) string { return strconv.FormatFloat(m, 'f', -1, 64) }

// ticks are the labelled instants of the axis: multiples of a round number
// of minutes since t0 inside each segment, at least minTickSpacing apart.
func (a timeAxis) ticks(plotW float64) []tickView {
	step := tickStep(a.active().Minutes(), int(plotW/minTickSpacing))
	var out []tickView
	last := math.Inf(-1)
	for _, s := range a.segs {
		from := s.from.Sub(a.t0).Minutes()
		to := s.to.Sub(a.t0).Minutes()
		for m := math.Ceil(from/step-1e-9) * step; m <= to+1e-9; m += step {
			x := a.x(a.t0.Add(time.Duration(m * float64(time.Minute))))
			if x-last < minTickSpacing*0.6 || a.nearBreak(x) {
				continue
			}
			last = x
			out = append(out, tickView{X: fmtF(x), Label: fmtMinutes(m + 0), Anchor: "middle"}) // +0: no "-0"
		}
	}
	return out
}

// stepEnd is where a step's bar ends: at its convergence; for a step that did
// not converge, at the worker's next step (else at end), but at most idleGap
// after its start, so that a last step before a stop does not bridge the gap.
func stepEnd(es []TimelineEntry, i int, end time.Time) time.Time {
	e := es[i]
	if !e.TimedOut && e.Converge > 0 {
		return e.Started.Add(e.Converge.D())
	}
	if i+1 < len(es) {
		end = es[i+1].Started
	}
	if end.Sub(e.Started) > idleGap {
		end = e.Started.Add(idleGap)
	}
	if end.Before(e.Started) {
		return e.Started
	}
	return end
}

// slotPercentile is the q-quantile of the time from a step's start to the
// next step of its worker (for a worker's last step, to its bar's end): how
// much room the shortest steps need.
func slotPercentile(lanes map[int][]TimelineEntry, latest time.Time, q float64) time.Duration {
	var slots []time.Duration
	for _, es := range lanes {
		for i, e := range es {
			end := stepEnd(es, i, latest)
			if i+1 < len(es) && es[i+1].Started.Sub(e.Started) < idleGap {
				end = es[i+1].Started
			}
			if d := end.Sub(e.Started); d > 0 {
				slots = append(slots, d)
			}
		}
	}
	if len(slots) == 0 {
		return 0
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i] < slots[j] })
	return slots[int(q*float64(len(slots)-1))]
}

func buildChart(s Summary, tl []TimelineEntry) chartView {
	c := chartView{Width: chartWidth, PlotX: chartLeft, PlotTop: chartTop, LabelX: chartLeft - 8}
	if len(tl) == 0 {
		c.Empty = true
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
	busiest := 0
	for _, w := range workers {
		es := lanes[w]
		sort.SliceStable(es, func(i, j int) bool { return es[i].Index < es[j].Index })
		busiest = max(busiest, len(es))
	}
	for _, e := range tl {
		if e.Availability != nil {
			c.HasAvail = true
		}
	}
	// x: time since the campaign started when every step has a start time,
	// else step order.
	timed := true
	var latest time.Time
	for _, e := range tl {
		if e.Started.IsZero() {
			timed = false
			break
		}
		if end := e.Started.Add(e.Converge.D() + e.Overhead.D()); end.After(latest) {
			latest = end
		}
	}
	if !s.Finished.IsZero() && s.Finished.After(latest) {
		latest = s.Finished
	}
	var ivs []interval
	if timed {
		for _, w := range workers {
			es := lanes[w]
			for i, e := range es {
				ivs = append(ivs, interval{e.Started, stepEnd(es, i, latest)})
			}
		}
		// This run (a resumed campaign's Started is its last run's start).
		if !s.Started.IsZero() {
			end := s.Started
			if s.Finished.After(end) {
				end = s.Finished
			}
			ivs = append(ivs, interval{s.Started, end})
		}
		// The budget's deadline, when it falls shortly after the last step.
		if b, ok := budgetOf(s); ok && !s.Started.IsZero() {
			dl := s.Started.Add(b)
			if dl.After(latest) && dl.Sub(s.Started) <= 3*max(latest.Sub(s.Started), time.Minute)/2 {
				ivs = append(ivs, interval{s.Started, dl})
			}
		}
		if newTimeAxis(ivs, 0, 1).active() <= 0 {
			timed = false
		}
	}
	// Width: the page's, unless the busiest lane needs more room per step, or
	// short steps (the 10th percentile of the time from a step to the next)
	// would be drawn thinner than minBarWidth; the latter never asks for more
	// than maxPxPerStep per step (a few short steps in a long campaign stay thin).
	c.PlotW = chartWidth - chartLeft - chartRight
	need := busiest * pxPerStep
	if timed {
		probe := newTimeAxis(ivs, 0, 1)
		if p := slotPercentile(lanes, latest, 0.1); p > 0 {
			breaks := len(probe.segs) - 1
			short := math.Ceil(minBarWidth * float64(probe.active()) / float64(p))
			need = max(need, int(min(short, float64(busiest*maxPxPerStep)))+breaks*breakWidth)
		}
	}
	if need > c.PlotW {
		c.PlotW = min(need, maxChartWidth-chartLeft-chartRight)
		c.Wide = true
	}
	c.Width = chartLeft + c.PlotW + chartRight
	c.PlotEnd = c.PlotX + c.PlotW
	plotW := float64(c.PlotW)
	var axis timeAxis
	if timed {
		axis = newTimeAxis(ivs, float64(chartLeft), plotW)
	}
	c.ByOrder = !timed
	origin := campaignOrigin(s)
	xOf := func(t time.Time) float64 { return axis.x(t) }

	y := chartTop
	for _, w := range workers {
		es := lanes[w]
		lane := laneView{Worker: w, Label: fmt.Sprintf("w%d", w), Y: y}
		barY := y + laneMarkH
		lane.H = laneMarkH + laneBarH
		if c.HasAvail {
			lane.StripY = barY + laneBarH + laneStripG
			lane.StripH = laneStripH
			lane.Strip80Y = fmtF(float64(lane.StripY) + laneStripH*(1-lowAvailability))
			lane.H += laneStripG + laneStripH
		}
		lane.LabelY = barY + laneBarH/2 + 4
		// Bars from start to end; a short step keeps minBarWidth where the
		// next one leaves room, and never overlaps it.
		xs, ends := make([]float64, len(es)), make([]float64, len(es))
		for i, e := range es {
			if timed {
				xs[i], ends[i] = xOf(e.Started), xOf(stepEnd(es, i, latest))
			} else {
				slot := plotW / float64(busiest)
				xs[i] = float64(chartLeft) + slot*float64(i)
				ends[i] = xs[i] + slot
			}
		}
		for i := range xs {
			xs[i], ends[i] = round1(xs[i]), round1(ends[i])
		}
		var alarms, timeouts int
		for i, e := range es {
			x := xs[i]
			wd := ends[i] - x
			if wd > minBarWidth+1 {
				wd-- // a hairline between consecutive steps
			}
			wd = max(wd, minBarWidth)
			if i+1 < len(es) && x+wd > xs[i+1] {
				wd = max(xs[i+1]-x, minVisibleWidth)
			}
			wd = math.Floor(min(wd, float64(c.PlotEnd)-x)*10+1e-6) / 10
			o := stepOutcome(e, isStuck(e))
			if e.Findings > 0 {
				alarms++
			}
			if e.TimedOut {
				timeouts++
			}
			class := "bar " + o.Class + " k-" + classSafe(string(e.Kind))
			if len(e.Faults) > 0 {
				class += " faulted"
			}
			href := "#" + stepAnchor(e.ID())
			lane.Bars = append(lane.Bars, barView{
				X: fmtF(x), Y: strconv.Itoa(barY), W: fmtF(wd), H: strconv.Itoa(laneBarH),
				Class: class, Kind: string(e.Kind), Step: e.ID(), Href: href,
				Title: barTitle(origin, es, i, o),
			})
			if c.HasAvail && e.Availability != nil {
				rate := *e.Availability
				okH := laneStripH * rate
				m := availMark{
					Step: e.ID(), X: fmtF(x), W: fmtF(wd),
					OKY: fmtF(float64(lane.StripY) + laneStripH - okH), OKH: fmtF(okH),
					Low: rate < lowAvailability, Href: href,
					Title: availTitle(e, rate),
				}
				if rate < 1 {
					m.LossY, m.LossH = strconv.Itoa(lane.StripY), fmtF(laneStripH-okH)
				}
				lane.Avail = append(lane.Avail, m)
			}
			for fi, f := range e.Faults {
				mx := x + float64(fi)*faultMarkSize
				var bandX, bandW float64
				if timed && f.Unsupported == "" && !f.Injected.IsZero() {
					mx = clampF(xOf(f.Injected), float64(chartLeft), float64(c.PlotEnd))
					if !f.Removed.IsZero() && f.Removed.After(f.Injected) {
						bandX = mx
						bandW = max(clampF(xOf(f.Removed), float64(chartLeft), float64(c.PlotEnd))-mx, 1)
					}
				}
				m := faultMark{
					Points: fmtF(mx-faultMarkSize/2) + "," + strconv.Itoa(y) + " " + fmtF(mx+faultMarkSize/2) + "," + strconv.Itoa(y) + " " + fmtF(mx) + "," + strconv.Itoa(y+faultMarkSize),
					BandY:  barY,
					Class:  "fmark",
					Href:   href,
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
		lane.Title = fmt.Sprintf("worker %d: %d step%s, %d with findings, %d timed out", w, len(es), plural(len(es)), alarms, timeouts)
		c.Lanes = append(c.Lanes, lane)
		y += lane.H + laneGap
	}
	c.AxisY = y - laneGap + 4
	c.TickMarkY = c.AxisY + 4
	c.TickY = c.AxisY + 16
	c.AxisNote = c.AxisY + 32
	c.Height = c.AxisY + chartBottom
	c.Label = fmt.Sprintf("Timeline of %d step%s on %d worker%s", len(tl), plural(len(tl)), len(workers), plural(len(workers)))
	if !timed {
		c.AxisText = "step order (start times not recorded)"
		const ticks = 5
		for i := 0; i <= ticks; i++ {
			x := float64(chartLeft) + plotW*float64(i)/ticks
			anchor := "middle"
			switch i {
			case 0:
				anchor = "start"
			case ticks:
				anchor = "end"
			}
			c.XTicks = append(c.XTicks, tickView{X: fmtF(x), Label: "step " + strconv.Itoa(int(math.Round(float64(busiest)*float64(i)/ticks))), Anchor: anchor})
		}
		return c
	}
	c.AxisText = "minutes since the campaign started"
	c.XTicks = axis.ticks(plotW)
	for i := 1; i < len(axis.segs); i++ {
		prev, next := axis.segs[i-1], axis.segs[i]
		bx := (prev.x1 + next.x0) / 2
		gap := next.from.Sub(prev.to)
		c.Breaks = append(c.Breaks, breakView{
			X:     fmtF(bx),
			Path:  fmt.Sprintf("M%s %d l-3 5 l6 6 l-3 5", fmtF(bx), c.AxisY-8),
			Label: fmtDur(gap),
			Title: fmt.Sprintf("no step ran for %s (from +%s to +%s): the campaign was stopped and resumed; the axis skips the gap", fmtDur(gap), fmtMin(prev.to.Sub(axis.t0)), fmtMin(next.from.Sub(axis.t0))),
		})
	}
	if b, ok := budgetOf(s); ok && !s.Started.IsZero() {
		dl := s.Started.Add(b)
		last := axis.segs[len(axis.segs)-1]
		if !dl.Before(last.from) && !dl.After(last.to) {
			c.Budget = &budgetView{
				X:     fmtF(xOf(dl)),
				Label: "budget " + fmtBudget(b),
				Title: fmt.Sprintf("the %s time budget of the run started at %s ends here", fmtBudget(b), fmtTime(s.Started)),
			}
		}
	}
	return c
}

// availTitle is an availability mark's hover text: "w1/s9 availability 62.5%:
// 25 of 40 request(s) succeeded (below 80.0%)".
func availTitle(e TimelineEntry, rate float64) string {
	t := e.ID() + " availability " + fmtPercent(rate)
	if e.Requests > 0 {
		t += fmt.Sprintf(": %d of %d request(s) succeeded", int(math.Round(rate*float64(e.Requests))), e.Requests)
	}
	if rate < lowAvailability {
		t += " (below " + fmtPercent(lowAvailability) + ")"
	}
	return t
}

// campaignOrigin is when the campaign started: the earliest of Summary.Started
// and its steps' starts (a resumed campaign's Started is its last run's start).
func campaignOrigin(s Summary) time.Time {
	o := s.Started
	for _, e := range s.Timeline {
		if !e.Started.IsZero() && (o.IsZero() || e.Started.Before(o)) {
			o = e.Started
		}
	}
	return o
}

// barTitle is a bar's hover text: step, test case, timing, verdict, details.
func barTitle(origin time.Time, es []TimelineEntry, i int, o outcome) string {
	e := es[i]
	var b strings.Builder
	b.WriteString(e.ID() + " " + string(e.Kind))
	if e.TestCase != "" {
		b.WriteString(", test case " + e.TestCase)
	}
	b.WriteString("\n")
	if !origin.IsZero() && !e.Started.IsZero() {
		b.WriteString("started +" + fmtDur(e.Started.Sub(origin)) + "; ")
	}
	if e.TimedOut || e.Converge <= 0 {
		b.WriteString("did not converge")
		if i+1 < len(es) && es[i+1].Started.After(e.Started) {
			b.WriteString("; the worker's next step started " + fmtDur(es[i+1].Started.Sub(e.Started)) + " later")
		}
	} else {
		b.WriteString("converged in " + fmtDur(e.Converge.D()))
	}
	b.WriteString("\nverdict: " + o.Verdict)
	if e.Misoperation {
		b.WriteString("\nmisoperation")
		if e.MisoperationReason != "" {
			b.WriteString(": " + e.MisoperationReason)
		}
	}
	if e.Availability != nil {
		b.WriteString(fmt.Sprintf("\navailability %s over %d request(s)", fmtPercent(*e.Availability), e.Requests))
	}
	for _, f := range e.Faults {
		b.WriteString("\nfault: " + faultTitle(e, f))
	}
	return b.String()
}

// classSafe makes a value usable as one CSS class name.
func classSafe(s string) string { return anchorUnsafe.ReplaceAllString(s, "-") }

// round1 rounds to the 0.1 unit fmtF writes.
func round1(f float64) float64 { return math.Round(f*10) / 10 }

// fmtMin writes a duration as minutes to 0.1 ("12.5m").
func fmtMin(d time.Duration) string {
	return strconv.FormatFloat(math.Round(d.Minutes()*10)/10, 'f', -1, 64) + "m"
}

// budgetOf is Summary.Budget, when there is one.
func budgetOf(s Summary) (time.Duration, bool) { return s.Budget.D(), s.Budget > 0 }

// fmtBudget writes a budget as people give it: "40m", "1h30m", "90s" → "1m30s".
func fmtBudget(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
