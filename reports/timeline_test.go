package reports

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/gauntlet-dev/gauntlet/model"
)

// wantVerdict is the verdict a step's hover title must name, derived here
// independently of stepOutcome.
func wantVerdict(e TimelineEntry) (class, verdict string) {
	switch {
	case e.TimedOut:
		return "timeout", "timed out"
	case e.Findings > 0 && e.Misoperation:
		return "misop", "alarm on a misoperation"
	case e.Findings > 0:
		return "alarm", "alarm"
	case e.Misoperation:
		return "misop-ok", "misoperation, passed"
	}
	return "ok", "clean"
}

func attrF(t *testing.T, n *html.Node, key string) float64 {
	t.Helper()
	v, _ := attr(n, key)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.Data, key, v, err)
	}
	return f
}

// svgTitle is the text of an SVG element's own <title> child ("" if none).
func svgTitle(n *html.Node) (string, int) {
	var txt string
	count := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "title" {
			count++
			txt = textOf(c)
		}
	}
	return txt, count
}

// checkTimelineChart checks the SVG timeline: one lane per worker, one bar
// per step in its worker's lane (ordered, not overlapping, inside the plot),
// a hover title per bar naming step, test case, duration and verdict, one
// availability mark per measured transition, minute ticks and the budget line.
func checkTimelineChart(t *testing.T, doc *html.Node, s Summary) {
	t.Helper()
	chart := byID(doc, "timeline-chart")
	if chart == nil {
		t.Fatal("no timeline chart")
	}
	perWorker := map[int][]TimelineEntry{}
	for _, e := range s.Timeline {
		perWorker[e.Worker] = append(perWorker[e.Worker], e)
	}
	lanes := find(chart, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "lane") })
	if len(lanes) != len(perWorker) {
		t.Fatalf("chart has %d lanes, want one per worker (%d)", len(lanes), len(perWorker))
	}
	for _, lane := range lanes {
		wv, _ := attr(lane, "data-worker")
		w, err := strconv.Atoi(wv)
		if err != nil || perWorker[w] == nil {
			t.Fatalf("lane for worker %q, which ran no step", wv)
		}
		bg := find(lane, func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "lanebg") })
		if len(bg) != 1 {
			t.Fatalf("lane w%d: %d backgrounds", w, len(bg))
		}
		plotX, plotEnd := attrF(t, bg[0], "x"), attrF(t, bg[0], "x")+attrF(t, bg[0], "width")
		bars := find(lane, func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "bar") })
		if len(bars) != len(perWorker[w]) {
			t.Errorf("lane w%d has %d bars, want %d (one per step)", w, len(bars), len(perWorker[w]))
		}
		byStep := map[string]*html.Node{}
		prevEnd := math.Inf(-1)
		thin := 0
		for _, b := range bars {
			id, _ := attr(b, "data-step")
			byStep[id] = b
			x, wd := attrF(t, b, "x"), attrF(t, b, "width")
			if wd < minVisibleWidth || x < plotX-0.05 || x+wd > plotEnd+0.05 {
				t.Errorf("bar %s [%v, %v] is outside the plot [%v, %v] or thinner than %v", id, x, x+wd, plotX, plotEnd, minVisibleWidth)
			}
			if wd < minBarWidth {
				thin++
			}
			if x < prevEnd-0.05 {
				t.Errorf("bar %s starts at %v, before the previous step's bar ends (%v)", id, x, prevEnd)
			}
			prevEnd = x + wd
		}
		if thin*10 > len(bars) {
			t.Errorf("lane w%d: %d of %d bars are squeezed below %v", w, thin, len(bars), minBarWidth)
		}
		for _, e := range perWorker[w] {
			b := byStep[e.ID()]
			if b == nil {
				t.Errorf("lane w%d has no bar for %s", w, e.ID())
				continue
			}
			class, verdict := wantVerdict(e)
			if !hasClass(b, class) {
				c, _ := attr(b, "class")
				t.Errorf("bar %s has class %q, want %s", e.ID(), c, class)
			}
			if k, _ := attr(b, "data-kind"); k != string(e.Kind) {
				t.Errorf("bar %s kind %q, want %s", e.ID(), k, e.Kind)
			}
			title, n := svgTitle(b)
			if n != 1 {
				t.Errorf("bar %s has %d <title>s, want 1", e.ID(), n)
			}
			want := []string{e.ID() + " " + string(e.Kind), "verdict: " + verdict}
			if e.TestCase != "" {
				want = append(want, "test case "+e.TestCase)
			}
			if e.TimedOut {
				want = append(want, "did not converge")
			} else {
				want = append(want, "converged in "+fmtDur(e.Converge.D()))
			}
			want = append(want, "started +"+fmtDur(e.Started.Sub(campaignOrigin(s))))
			for _, w := range want {
				if !strings.Contains(title, w) {
					t.Errorf("bar %s title %q lacks %q", e.ID(), title, w)
				}
			}
		}
		// Availability: one mark per measured transition, red when low.
		marks := find(lane, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "availmark") })
		var measured []TimelineEntry
		for _, e := range perWorker[w] {
			if e.Availability != nil {
				measured = append(measured, e)
			}
		}
		if len(marks) != len(measured) {
			t.Errorf("lane w%d has %d availability marks, want %d", w, len(marks), len(measured))
			continue
		}
		for i, m := range marks {
			e := measured[i]
			if id, _ := attr(m, "data-step"); id != e.ID() {
				t.Errorf("availability mark %d of w%d is for %s, want %s", i, w, id, e.ID())
			}
			if hasClass(m, "low") != (*e.Availability < lowAvailability) {
				t.Errorf("%s availability %v: low = %v", e.ID(), *e.Availability, hasClass(m, "low"))
			}
			if title, _ := svgTitle(m); !strings.Contains(title, fmtPercent(*e.Availability)) {
				t.Errorf("%s availability title %q lacks %s", e.ID(), title, fmtPercent(*e.Availability))
			}
			ok := find(m, func(n *html.Node) bool { return hasClass(n, "availok") })
			if len(ok) != 1 || math.Abs(attrF(t, ok[0], "height")-laneStripH**e.Availability) > 0.06 {
				t.Errorf("%s availability area is not %v of the strip", e.ID(), *e.Availability)
			}
		}
	}
	// The x axis: minutes since the start, increasing from 0.
	labels := find(chart, func(n *html.Node) bool { return n.Data == "text" && hasClass(n, "ticklabel") })
	if len(labels) < 3 {
		t.Fatalf("%d tick labels", len(labels))
	}
	// Tick labels keep apart, and away from the labels of cut gaps.
	breaks := find(chart, func(n *html.Node) bool { return hasClass(n, "axisbreak") })
	lastX := math.Inf(-1)
	for _, l := range labels {
		x := attrF(t, l, "x")
		if x-lastX < minTickSpacing*0.6 {
			t.Errorf("tick %q at x=%v is %v from the previous one", textOf(l), x, x-lastX)
		}
		lastX = x
		for _, b := range breaks {
			if bl := find(b, func(n *html.Node) bool { return n.Data == "line" }); len(bl) == 1 && math.Abs(attrF(t, bl[0], "x1")-x) < minTickSpacing/2 {
				t.Errorf("tick %q at x=%v overlaps the label of the axis break at %v", textOf(l), x, attrF(t, bl[0], "x1"))
			}
		}
	}
	prev, step := math.Inf(-1), 0.0
	for i, l := range labels {
		m, err := strconv.ParseFloat(textOf(l), 64)
		if err != nil || m <= prev || (i == 0 && m != 0) {
			t.Errorf("tick %d reads %q after %v: want minutes increasing from 0", i, textOf(l), prev)
		}
		step, prev = m-prev, m
	}
	// The last tick is within one tick interval of the axis' end: the
	// campaign's, or its budget's when the chart shows the budget line.
	end := s.Finished
	if b, ok := budgetOf(s); ok && len(find(chart, func(n *html.Node) bool { return hasClass(n, "budget") })) > 0 && s.Started.Add(b).After(end) {
		end = s.Started.Add(b)
	}
	if last := end.Sub(campaignOrigin(s)).Minutes(); prev > last+1e-9 || prev < last-step {
		t.Errorf("last tick %v min, campaign ran %.1f min since it started", prev, last)
	}
	if axis := find(chart, func(n *html.Node) bool { return hasClass(n, "axistitle") }); len(axis) != 1 || textOf(axis[0]) != "minutes since the campaign started" {
		t.Error("no axis title in minutes")
	}
	budgets := find(chart, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "budget") })
	if b, ok := budgetOf(s); ok && b <= s.Finished.Sub(s.Started)*3/2 {
		if len(budgets) != 1 || !strings.Contains(textOf(budgets[0]), "budget "+fmtBudget(b)) {
			t.Errorf("%d budget lines, want one labelled budget %s", len(budgets), fmtBudget(b))
		}
	} else if len(budgets) != 0 {
		t.Errorf("%d budget lines for budget %q", len(budgets), s.Budget)
	}
}

// checkPartial checks the partial-run banner and the step cards.
func checkPartial(t *testing.T, doc *html.Node, s Summary) {
	t.Helper()
	banner := byID(doc, "partial")
	if !s.Partial {
		if banner != nil {
			t.Error("a complete run shows the partial banner")
		}
		return
	}
	if banner == nil {
		t.Fatal("a partial run shows no banner")
	}
	desired := 0
	for _, e := range s.Timeline {
		if e.Kind == model.StepApply || e.Kind == model.StepRecreate {
			desired++
		}
	}
	txt := strings.Join(strings.Fields(textOf(banner)), " ")
	want := fmt.Sprintf("after %d of %d planned desired-state steps (%d transitions judged)", desired, s.StepsPlanned, s.StepsDone)
	for _, w := range []string{"Partial run:", want, "gauntlet run --resume DIR continues it", s.CampaignID} {
		if !strings.Contains(txt, w) {
			t.Errorf("partial banner %q lacks %q", txt, w)
		}
	}
	cards := map[string]string{}
	for _, c := range find(doc, func(n *html.Node) bool { return hasClass(n, "stat") }) {
		for _, l := range find(c, func(n *html.Node) bool { return hasClass(n, "label") }) {
			for _, v := range find(c, func(n *html.Node) bool { return hasClass(n, "value") }) {
				cards[textOf(l)] = textOf(v)
			}
		}
	}
	if got, want := cards["desired-state steps done / planned"], fmt.Sprintf("%d / %d", desired, s.StepsPlanned); got != want {
		t.Errorf("desired-state card reads %q, want %q", got, want)
	}
	if got, want := cards["transitions judged"], strconv.Itoa(s.StepsDone); got != want {
		t.Errorf("transitions card reads %q, want %q", got, want)
	}
	if _, ok := cards["transitions done / planned"]; ok {
		t.Error("the ambiguous transitions done / planned card is back")
	}
}

// checkCoverageTotals checks that the top-level coverage rows add up to the
// summary's coverage.
func checkCoverageTotals(t *testing.T, doc *html.Node, s Summary) {
	t.Helper()
	top := byID(doc, "coverage-top")
	if top == nil {
		t.Fatal("no top-level coverage table")
	}
	var props, covered int
	for _, r := range find(top, func(n *html.Node) bool {
		return n.DataAtom == atom.Tr && hasClass(n, "cov-full") || hasClass(n, "cov-part") || hasClass(n, "cov-none")
	}) {
		cell := find(r, func(n *html.Node) bool { return n.DataAtom == atom.Td && hasClass(n, "props") })
		if len(cell) != 1 {
			t.Fatal("coverage row without a properties cell")
		}
		var c, p int
		if _, err := fmt.Sscanf(textOf(cell[0]), "%d / %d", &c, &p); err != nil {
			t.Fatalf("properties cell %q: %v", textOf(cell[0]), err)
		}
		covered += c
		props += p
	}
	if props != s.Coverage.Total || covered != s.Coverage.Covered {
		t.Errorf("top-level rows add up to %d / %d, summary has %d / %d", covered, props, s.Coverage.Covered, s.Coverage.Total)
	}
}

func renderDoc(t *testing.T, s Summary) (*html.Node, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, s, Details{}); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, buf.Bytes()
}

// TestCoverageTopLevel pins the top-level coverage table of the sample
// campaign and of a plan with partly covered array properties.
func TestCoverageTopLevel(t *testing.T) {
	s := sampleSummary()
	s.Coverage.Properties = append(s.Coverage.Properties,
		PropertyCoverage{Path: "spec.ports", TestCases: []string{"ports-append"}, Steps: []string{"w0/s1"}},
		PropertyCoverage{Path: "spec.ports[*].name", TestCases: []string{"ports-name"}},
		PropertyCoverage{Path: "spec.ports[*].port", TestCases: []string{"ports-port", "ports-append"}},
		PropertyCoverage{Path: "spec.ports[*].protocol"},
		PropertyCoverage{Path: "spec.ports[*].appProtocol"},
		PropertyCoverage{Path: "spec.ports[*].nodePort"},
		PropertyCoverage{Path: "spec.ports[*].targetPort"},
		PropertyCoverage{Path: "spec"},
	)
	sort.Slice(s.Coverage.Properties, func(i, j int) bool { return s.Coverage.Properties[i].Path < s.Coverage.Properties[j].Path })
	s.Coverage.Total += 8
	s.Coverage.Covered++
	s.Timeline = append(s.Timeline, TimelineEntry{Worker: 0, Index: 99, Kind: model.StepApply, TestCase: "ports-append", Started: s.Finished})
	doc, _ := renderDoc(t, s)
	checkCoverageTotals(t, doc, s)
	type row struct{ class, props, cases, uncovered string }
	want := map[string]row{
		"spec":             {"cov-none", "0 / 1", "0 / 0", "spec"},
		"spec.config":      {"cov-full", "2 / 2", "1 / 1", ""},
		"spec.exporter":    {"cov-full", "1 / 1", "2 / 2", ""},
		"spec.image":       {"cov-full", "1 / 1", "1 / 1", ""},
		"spec.pdb":         {"cov-full", "1 / 1", "1 / 1", ""},
		"spec.persistence": {"cov-full", "1 / 1", "1 / 1", ""},
		"spec.ports":       {"cov-part", "1 / 7", "1 / 3", "spec.ports[*].appProtocol spec.ports[*].name spec.ports[*].nodePort spec.ports[*].port +2 more"},
		"spec.replicas":    {"cov-full", "1 / 1", "3 / 3", ""},
		"spec.service":     {"cov-full", "1 / 1", "1 / 1", ""},
		"spec.tls":         {"cov-none", "0 / 1", "0 / 1", "spec.tls.enabled"},
	}
	rows := find(byID(doc, "coverage-top"), func(n *html.Node) bool { _, ok := attr(n, "data-top"); return n.DataAtom == atom.Tr && ok })
	if len(rows) != len(want) {
		t.Errorf("%d top-level rows, want %d", len(rows), len(want))
	}
	var names []string
	for _, r := range rows {
		name, _ := attr(r, "data-top")
		names = append(names, name)
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected top-level row %q", name)
			continue
		}
		tds := find(r, isElem(atom.Td))
		got := row{strings.Join(strings.Fields(func() string { c, _ := attr(r, "class"); return c }()), " "), textOf(tds[1]), textOf(tds[3]), strings.Join(strings.Fields(textOf(tds[4])), " ")}
		if got != w {
			t.Errorf("row %s = %+v, want %+v", name, got, w)
		}
		if textOf(find(tds[0], isElem(atom.Code))[0]) != name {
			t.Errorf("row %s names %q", name, textOf(tds[0]))
		}
	}
	if got := strings.Join(names, ","); got != "spec,spec.config,spec.exporter,spec.image,spec.pdb,spec.persistence,spec.ports,spec.replicas,spec.service,spec.tls" {
		t.Errorf("rows in order %s, want sorted by path", got)
	}
	// The planned test cases no step ran are named on hover.
	for _, r := range rows {
		if name, _ := attr(r, "data-top"); name == "spec.ports" {
			cell := find(r, func(n *html.Node) bool { return hasClass(n, "cases") })
			if title, _ := attr(cell[0], "title"); title != "not run: ports-name, ports-port" {
				t.Errorf("spec.ports cases title %q", title)
			}
		}
	}
}

func TestTopLevelOf(t *testing.T) {
	for in, want := range map[string]string{
		"spec":                                  "spec",
		"spec.replicas":                         "spec.replicas",
		"spec.config.maxmemory":                 "spec.config",
		"spec.ports[*].name":                    "spec.ports",
		"spec.labels{*}":                        "spec.labels",
		`spec.nodeSelector["kubernetes.io/os"]`: "spec.nodeSelector",
		"data.key":                              "data",
	} {
		if got := topLevelOf(in); got != want {
			t.Errorf("topLevelOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPartialBanner checks the banner's words for each way a run ends.
func TestPartialBanner(t *testing.T) {
	tests := []struct {
		name, reason, budget string
		partial              bool
		want                 string // "" when no banner
		budgetCard           string
	}{
		{"budget", "budget", "40m0s", true, "Partial run: stopped by its 40m budget after 14 of 26 planned desired-state steps (24 transitions judged).", "40m (used 11m46s)"},
		{"budget in hours", "budget", "1h30m0s", true, "stopped by its 1h30m budget after 14 of 26", "1h30m (used 11m46s)"},
		{"signal", "signal", "", true, "Partial run: stopped by a signal (SIGINT or SIGTERM) after 14 of 26 planned desired-state steps", ""},
		{"unknown reason", "disk full", "", true, "stopped early (disk full) after 14 of 26", ""},
		{"complete within budget", "", "2h0m0s", false, "", "2h (used 11m46s)"},
		{"complete", "", "", false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sampleSummary()
			budget, _ := time.ParseDuration(tc.budget)
			if tc.budget == "" {
				budget = 0
			}
			s.Partial, s.StopReason, s.Budget = tc.partial, model.StopReason(tc.reason), model.Budget(budget)
			doc, _ := renderDoc(t, s)
			checkPartial(t, doc, s)
			b := byID(doc, "partial")
			if (b != nil) != (tc.want != "") {
				t.Fatalf("banner shown = %v, want %v", b != nil, tc.want != "")
			}
			if b != nil {
				if txt := strings.Join(strings.Fields(textOf(b)), " "); !strings.Contains(txt, tc.want) {
					t.Errorf("banner %q lacks %q", txt, tc.want)
				}
			}
			var card string
			for _, c := range find(doc, func(n *html.Node) bool { return hasClass(n, "stat") }) {
				if strings.HasSuffix(textOf(c), "time budget") {
					card = strings.TrimSuffix(textOf(c), "time budget")
				}
			}
			if card != tc.budgetCard {
				t.Errorf("time budget card %q, want %q", card, tc.budgetCard)
			}
			titles := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Title && n.Parent.DataAtom == atom.Head })
			if got := strings.HasSuffix(textOf(titles[0]), "— partial"); got != tc.partial {
				t.Errorf("page title %q: partial = %v", textOf(titles[0]), got)
			}
		})
	}
}

func TestStepOutcome(t *testing.T) {
	rate := 0.5
	tests := []struct {
		e       TimelineEntry
		stuck   bool
		class   string
		verdict string
	}{
		{TimelineEntry{}, false, "ok", "clean"},
		{TimelineEntry{Availability: &rate}, false, "ok", "clean"},
		{TimelineEntry{Findings: 2}, false, "alarm", "alarm (2 findings)"},
		{TimelineEntry{Findings: 1, Misoperation: true}, false, "misop", "alarm on a misoperation (1 finding)"},
		{TimelineEntry{Misoperation: true}, false, "misop-ok", "misoperation, passed"},
		{TimelineEntry{TimedOut: true, Findings: 1}, false, "timeout", "timed out (1 finding)"},
		{TimelineEntry{TimedOut: true}, true, "stuck", "stuck: ended early, it would never converge"},
		{TimelineEntry{Findings: 1}, true, "stuck", "stuck: ended early, it would never converge (1 finding)"},
	}
	for i, tc := range tests {
		if got := stepOutcome(tc.e, tc.stuck); got.Class != tc.class || got.Verdict != tc.verdict {
			t.Errorf("%d: stepOutcome = %+v, want %s %q", i, got, tc.class, tc.verdict)
		}
	}
}

func TestTickStep(t *testing.T) {
	tests := []struct {
		minutes float64
		max     int
		want    float64
	}{
		{1, 10, 0.25}, {3, 10, 0.5}, {11.8, 13, 1}, {11.8, 5, 5}, {40, 13, 5}, {480, 13, 60}, {3000, 10, 360}, {100000, 10, 10080},
	}
	for _, tc := range tests {
		if got := tickStep(tc.minutes, tc.max); got != tc.want {
			t.Errorf("tickStep(%v, %d) = %v, want %v", tc.minutes, tc.max, got, tc.want)
		}
	}
}

func TestFmtBudget(t *testing.T) {
	for in, want := range map[time.Duration]string{
		40 * time.Minute: "40m", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h", 90 * time.Second: "1m30s", 45 * time.Second: "45s",
	} {
		if got := fmtBudget(in); got != want {
			t.Errorf("fmtBudget(%v) = %q, want %q", in, got, want)
		}
	}
}

// bigCampaign is a campaign of workers × perWorker steps with faults,
// availability, timeouts and alarms; when resumed, the second half ran 20
// hours after the first (a budgeted nightly run continued the next night).
func bigCampaign(workers, perWorker int, resumed bool) Summary {
	start := t0
	s := Summary{Target: "big", Seed: 7, CampaignID: "c-big", Started: start, Workers: workers, StepsPlanned: workers * perWorker * 2, StepsDone: workers * perWorker}
	kinds := []model.StepKind{model.StepApply, model.StepApply, model.StepRollback, model.StepFault, model.StepApply, model.StepDifferential}
	var end time.Time
	for w := 0; w < workers; w++ {
		at := start.Add(time.Duration(w) * 3 * time.Second)
		for i := 0; i < perWorker; i++ {
			if resumed && i == perWorker/2 {
				at = at.Add(20 * time.Hour)
			}
			e := TimelineEntry{Worker: w, Index: i, Kind: kinds[(i+w)%len(kinds)], TestCase: fmt.Sprintf("case-%d-%d", w, i), Started: at}
			conv := time.Duration(5+(i*7+w*3)%50) * time.Second
			if i%17 == 5 {
				e.TimedOut = true
				conv = 5 * time.Minute
			} else {
				e.Converge = Duration(conv)
			}
			if i%9 == 4 {
				e.Findings = 1 + i%3
			}
			if i%3 == 0 {
				r := 0.5 + float64(i%6)/10
				e.Availability, e.Requests = &r, 40+i
			}
			if e.Kind == model.StepFault || i%11 == 2 {
				e.Faults = []FaultEntry{{Kind: "pod-kill", Targets: []string{"primary"}, Injected: at.Add(time.Second)}}
				if i%22 == 2 {
					e.Faults = append(e.Faults, FaultEntry{Kind: "partition", Persistent: true, Injected: at.Add(2 * time.Second), Removed: at.Add(10 * time.Second)})
				}
			}
			s.Timeline = append(s.Timeline, e)
			at = at.Add(conv + 12*time.Second)
		}
		if at.After(end) {
			end = at
		}
	}
	s.Finished = end
	if resumed {
		// This run, the second half, started half a minute before its first step.
		s.Started = end
		for _, e := range s.Timeline {
			if e.Index == perWorker/2 && e.Started.Before(s.Started) {
				s.Started = e.Started.Add(-30 * time.Second)
			}
		}
	}
	SortTimeline(s.Timeline)
	return s
}

// TestTimelineChartScales renders campaigns of a few hundred steps: one bar
// and title per step, bars ordered inside the plot, a bounded page, a chart
// that grows wider (and scrolls) when a lane has too many steps for the page,
// and a resumed campaign's idle night cut out of the axis.
func TestTimelineChartScales(t *testing.T) {
	tests := []struct {
		name               string
		workers, perWorker int
		resumed            bool
		wide               bool
		breaks             int
	}{
		{"3 workers × 120 steps", 3, 120, false, false, 0},
		{"one worker, 400 steps", 1, 400, false, true, 0},
		{"2 workers × 150 steps, resumed the next night", 2, 150, true, false, 1},
		{"24 steps, a few short ones in a long campaign", 2, 12, false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := bigCampaign(tc.workers, tc.perWorker, tc.resumed)
			if tc.perWorker < 30 {
				// Long steps, and a few of a second.
				for i := range s.Timeline {
					e := &s.Timeline[i]
					e.Started = s.Started.Add(time.Duration(e.Index)*20*time.Minute + time.Duration(e.Worker)*time.Second)
					e.TimedOut, e.Converge = false, Duration(15*time.Minute)
					if e.Index%4 == 1 {
						e.Converge = Duration(time.Second)
					}
					for j := range e.Faults {
						e.Faults[j].Injected = e.Started.Add(time.Second)
						if !e.Faults[j].Removed.IsZero() {
							e.Faults[j].Removed = e.Started.Add(10 * time.Second)
						}
					}
				}
				s.Finished = s.Started.Add(time.Duration(tc.perWorker) * 20 * time.Minute)
				SortTimeline(s.Timeline)
			}
			doc, page := renderDoc(t, s)
			checkTimelineChart(t, doc, s)
			chart := byID(doc, "timeline-chart")
			nFaults := 0
			for _, e := range s.Timeline {
				nFaults += len(e.Faults)
			}
			if n := len(find(chart, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "fmark") })); n != nFaults {
				t.Errorf("%d fault marks, want %d", n, nFaults)
			}
			// A lane of 400 steps cannot fit the page: the chart keeps room
			// for every step and scrolls.
			vb, _ := attr(chart, "viewBox")
			var width, height int
			if _, err := fmt.Sscanf(vb, "0 0 %d %d", &width, &height); err != nil {
				t.Fatalf("viewBox %q: %v", vb, err)
			}
			if tc.wide && !hasClass(chart, "wide") {
				t.Error("a chart of 400 steps in one lane is not wide")
			}
			if len(s.Timeline) < 30 && hasClass(chart, "wide") {
				t.Error("a chart of fewer than 30 steps is wide")
			}
			if hasClass(chart, "wide") {
				if w, _ := attr(chart, "width"); w != strconv.Itoa(width) || width < chartLeft+tc.perWorker*pxPerStep+chartRight || width > maxChartWidth {
					t.Errorf("wide chart width %q (viewBox %d), want room for %d steps, at most %d", w, width, tc.perWorker, maxChartWidth)
				}
			} else if width != chartWidth {
				t.Errorf("chart width %d, want the page's %d", width, chartWidth)
			}
			breaks := find(chart, func(n *html.Node) bool { return hasClass(n, "axisbreak") })
			if len(breaks) != tc.breaks {
				t.Fatalf("%d axis breaks, want %d", len(breaks), tc.breaks)
			}
			for _, b := range breaks {
				title, _ := svgTitle(b)
				m := regexp.MustCompile(`^no step ran for (\d+)h\d\dm .*stopped and resumed`).FindStringSubmatch(title)
				if h, _ := strconv.Atoi(m[1:][0]); m == nil || h < 18 || h > 20 {
					t.Errorf("axis break title %q: want the idle night (18-20h)", title)
				}
			}
			// The chart costs at most ~2 KB per step (bar, title, marks).
			if per := len(page) / len(s.Timeline); per > 2500 {
				t.Errorf("page is %d bytes for %d steps (%d per step)", len(page), len(s.Timeline), per)
			}
			labels := find(chart, func(n *html.Node) bool { return hasClass(n, "ticklabel") })
			plotW := float64(width - chartLeft - chartRight)
			if limit := int(plotW/minTickSpacing) + 2*(tc.breaks+1); len(labels) > limit {
				t.Errorf("%d tick labels on a %v-wide plot, want at most %d", len(labels), plotW, limit)
			}
		})
	}
}
