package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// pwn would mark the page if any campaign string were rendered as markup.
const pwn = `<script>document.documentElement.setAttribute("data-pwned","1")</script><img src=x onerror="document.documentElement.setAttribute('data-pwned','2')">`

// goldenSummary reads the golden summary.json (the file TestSummaryGolden pins)
// and plants pwn in every kind of string the page shows.
func goldenSummary(t *testing.T) Summary {
	t.Helper()
	b, err := os.ReadFile(summaryGolden)
	if err != nil {
		t.Fatal(err)
	}
	s, err := UnmarshalSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	s.Target = "valkey " + pwn
	// Stopped by a 12-minute budget: the banner, the budget card and the
	// chart's budget line show.
	s.Partial, s.StopReason, s.Budget = true, model.StopBudget, model.Budget(12*time.Minute)
	s.Alarms[1].Summary += pwn
	s.Alarms[1].Evidence[0].Detail = pwn
	s.Alarms[1].Reproducer = "alarms/2" + pwn
	s.Timeline[3].TestCase = pwn
	s.Coverage.Properties[0].Path += pwn
	for i := range s.Timeline {
		e := &s.Timeline[i]
		switch e.ID() {
		case "w0/s7":
			e.MisoperationReason += pwn
		case "w0/s9":
			e.Faults[0].Targets = append(e.Faults[0].Targets, pwn)
		case "w1/s5":
			e.Faults[0].Unsupported += pwn
			e.Faults[0].Kind += pwn
		}
	}
	return s
}

func renderGolden(t *testing.T) ([]byte, Summary) {
	t.Helper()
	s := goldenSummary(t)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, s, sampleDetails()); err != nil {
		t.Fatal(err)
	}
	if *reportOut != "" {
		if err := os.WriteFile(*reportOut, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes(), s
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	for _, c := range strings.Fields(v) {
		if c == class {
			return true
		}
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(m *html.Node) {
		if m.Type == html.TextNode {
			b.WriteString(m.Data)
		}
	})
	return b.String()
}

func find(root *html.Node, pred func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	walk(root, func(n *html.Node) {
		if n.Type == html.ElementNode && pred(n) {
			out = append(out, n)
		}
	})
	return out
}

func byID(root *html.Node, id string) *html.Node {
	ns := find(root, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == id })
	if len(ns) != 1 {
		return nil
	}
	return ns[0]
}

func isElem(a atom.Atom) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.DataAtom == a }
}

// checkReportStructure checks a rendered (or browser-dumped) report.
func checkReportStructure(t *testing.T, doc *html.Node, s Summary) {
	t.Helper()
	titles := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Title && n.Parent.DataAtom == atom.Head })
	if len(titles) != 1 || !strings.Contains(textOf(titles[0]), "seed 42") || !strings.Contains(textOf(titles[0]), s.Target) {
		t.Errorf("title = %q, want the target and seed", textOf(titles[0]))
	}
	for _, id := range []string{"alarms", "misoperations", "coverage", "timeline", "oracles", "timeline-chart", "timeline-table"} {
		if byID(doc, id) == nil {
			t.Errorf("no single element with id %q", id)
		}
	}
	// Alarm groups in order, misoperations in their own section.
	groups := func(section string) []*html.Node {
		sec := byID(doc, section)
		if sec == nil {
			return nil
		}
		return find(sec, func(n *html.Node) bool { return n.DataAtom == atom.Article && hasClass(n, "group") })
	}
	bugs, misops := groups("alarms"), groups("misoperations")
	if len(bugs) != len(s.Alarms) || len(misops) != len(s.Misoperations) {
		t.Fatalf("rendered %d alarm and %d misoperation groups, want %d and %d", len(bugs), len(misops), len(s.Alarms), len(s.Misoperations))
	}
	for i, g := range s.Alarms {
		if sig, _ := attr(bugs[i], "data-signature"); sig != g.Signature {
			t.Errorf("alarm %d signature %q, want %q", i+1, sig, g.Signature)
		}
		h3 := find(bugs[i], isElem(atom.H3))
		if len(h3) != 1 || textOf(h3[0]) != strings.ReplaceAll(g.Summary, "\x00", "\uFFFD") {
			t.Errorf("alarm %d heading %q, want the summary %q as text", i+1, textOf(h3[0]), g.Summary)
		}
		if !strings.Contains(textOf(bugs[i]), g.Steps[0]) {
			t.Errorf("alarm %d does not name its first step %s", i+1, g.Steps[0])
		}
	}
	if !hasClass(misops[0], "misop") {
		t.Error("misoperation group lacks the misop class")
	}
	// Diff views: the exporter group shows a line diff with added lines, the
	// differential group a line diff of the config text, scalars inline.
	diffs := find(bugs[0], func(n *html.Node) bool { return n.DataAtom == atom.Pre && hasClass(n, "diff") })
	if len(diffs) != 1 || len(find(diffs[0], func(n *html.Node) bool { return hasClass(n, "add") })) == 0 {
		t.Error("alarm 1 has no diff with added lines")
	}
	var confDiff *html.Node
	for _, b := range bugs {
		if strings.Contains(textOf(b), "valkey.conf") {
			confDiff = b
		}
	}
	if confDiff == nil {
		t.Fatal("no differential group")
	}
	dels := find(confDiff, func(n *html.Node) bool { return hasClass(n, "del") && n.DataAtom == atom.Span })
	if len(dels) != 1 || !strings.Contains(textOf(dels[0]), "maxmemory-policy noeviction") {
		t.Errorf("config diff removed lines = %d, want the one noeviction line", len(dels))
	}
	// Coverage table and bar.
	cov := byID(doc, "coverage")
	rows := find(cov, func(n *html.Node) bool {
		return n.DataAtom == atom.Tr && (hasClass(n, "covered") || hasClass(n, "uncovered"))
	})
	if len(rows) != len(s.Coverage.Properties) {
		t.Errorf("coverage rows %d, want %d", len(rows), len(s.Coverage.Properties))
	}
	if un := find(cov, func(n *html.Node) bool { return hasClass(n, "uncovered") }); len(un) != 1 || !strings.Contains(textOf(un[0]), "spec.tls.enabled") {
		t.Errorf("uncovered rows: %d, want spec.tls.enabled", len(un))
	}
	// Timeline chart: one linked bar per step, each link resolving to a row.
	chart := byID(doc, "timeline-chart")
	bars := find(chart, func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "bar") })
	if len(bars) != len(s.Timeline) {
		t.Errorf("chart has %d bars, want %d", len(bars), len(s.Timeline))
	}
	for _, b := range bars {
		href, _ := attr(b.Parent, "href")
		if !strings.HasPrefix(href, "#step-") || byID(doc, strings.TrimPrefix(href, "#")) == nil {
			t.Errorf("bar links to %q, which is no step row", href)
		}
	}
	trs := find(byID(doc, "timeline-table"), func(n *html.Node) bool {
		v, _ := attr(n, "id")
		return n.DataAtom == atom.Tr && strings.HasPrefix(v, "step-")
	})
	if len(trs) != len(s.Timeline) {
		t.Errorf("timeline table has %d step rows, want %d", len(trs), len(s.Timeline))
	}
	checkFaultsAndAvailability(t, doc, s)
	checkTimelineChart(t, doc, s)
	checkPartial(t, doc, s)
	checkCoverageTotals(t, doc, s)
	// Self-contained: one inline script, one inline style, nothing fetched.
	if n := len(find(doc, isElem(atom.Script))); n != 1 {
		t.Errorf("%d <script> elements, want exactly the report's own (campaign strings must be escaped)", n)
	}
	if n := len(find(doc, isElem(atom.Img))); n != 0 {
		t.Errorf("%d <img> elements: campaign strings must be escaped", n)
	}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		for _, a := range n.Attr {
			switch {
			case a.Key == "src" || n.DataAtom == atom.Link || strings.HasPrefix(a.Key, "on"):
				t.Errorf("<%s %s=%q> loads or runs something", n.Data, a.Key, a.Val)
			case a.Key == "href" && !strings.HasPrefix(a.Val, "#"):
				t.Errorf("<%s href=%q> leaves the page", n.Data, a.Val)
			}
		}
	})
	for _, id := range []string{"alarms", "misoperations", "coverage", "timeline", "oracles"} {
		if len(find(doc, func(n *html.Node) bool { v, _ := attr(n, "href"); return v == "#"+id })) == 0 {
			t.Errorf("no link to #%s", id)
		}
	}
}

func TestWriteHTMLStructure(t *testing.T) {
	page, s := renderGolden(t)
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	checkReportStructure(t, doc, s)

	// The Content-Security-Policy allows exactly the inline style and script.
	var csp string
	for _, m := range find(doc, isElem(atom.Meta)) {
		if v, _ := attr(m, "http-equiv"); v == "Content-Security-Policy" {
			csp, _ = attr(m, "content")
		}
	}
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return base64.StdEncoding.EncodeToString(h[:]) }
	style := find(doc, isElem(atom.Style))
	script := find(doc, isElem(atom.Script))
	if len(style) != 1 || len(script) != 1 {
		t.Fatalf("%d styles and %d scripts", len(style), len(script))
	}
	for _, want := range []string{"default-src 'none'", "'sha256-" + hash(textOf(style[0])) + "'", "'sha256-" + hash(textOf(script[0])) + "'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	// No external address anywhere in the page.
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).Find(page); m != nil {
		t.Errorf("page mentions an external address: %s", m)
	}
}

func TestWriteHTMLEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, Summary{Target: "t"}, Details{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"No alarm: every transition passed every oracle.", "No step was recorded.", "No alarm on a misoperation."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
	for _, unwanted := range []string{"fault steps", "lowest availability"} {
		if strings.Contains(buf.String(), unwanted) {
			t.Errorf("a report without faults or workload shows %q", unwanted)
		}
	}
}

// TestReportInChromium opens the report in headless Chromium and checks, in the
// DOM the browser built, that the alarm groups rendered, that the report's
// script ran under its Content-Security-Policy, and that no campaign string
// ran as code.
func TestReportInChromium(t *testing.T) {
	testenv.SkipShort(t)
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		testenv.Unavailable(t, "Chromium is not installed (Debian: apt-get install -y chromium, or `make deps`): the headless browser check of report.html needs it")
	}
	page, s := renderGolden(t)
	page = withProbe(t, page)
	dir := t.TempDir()
	file := filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-breakpad", "--disable-crash-reporter",
		"--enable-logging=stderr", "--v=0", // console messages go to stderr
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--virtual-time-budget=2000", "--dump-dom", "file://"+file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// Chromium's helpers share its process group: make sure none outlives it.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("%s --dump-dom: %v\n%s", browser, err, stderr.String())
	}
	dom := stdout.Bytes()
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	root := find(doc, isElem(atom.Html))
	if len(root) != 1 {
		t.Fatalf("dumped DOM has %d <html> elements:\n%.400s", len(root), dom)
	}
	ready, _ := attr(root[0], "data-report-ready")
	if want := len(s.Alarms) + len(s.Misoperations); ready != strconv.Itoa(want) {
		t.Errorf("data-report-ready=%q, want %d: the report's script did not run (CSP hash mismatch?) or saw other groups\n%s", ready, want, stderr.String())
	}
	if v, ok := attr(root[0], "data-pwned"); ok {
		t.Fatalf("a campaign string ran as code in the browser (data-pwned=%s)", v)
	}
	// The page logs nothing: no script error, no CSP violation, no warning.
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("browser console: %s", l)
		}
	}
	checkProbe(t, root[0], s)
	for _, n := range find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == probeID }) {
		n.Parent.RemoveChild(n)
	}
	checkReportStructure(t, doc, s)
}

// probeID is the id of the script TestReportInChromium adds to the page.
const probeID = "gauntlet-test-probe"

// probeJS measures the rendered page in the browser and writes what it saw to
// <html data-probe>: the timeline's and its parts' boxes, the fills the
// stylesheet gave each outcome, and the boxes of the partial banner and the
// top-level coverage table.
const probeJS = `(function () {
  "use strict";
  function box(el) {
    if (!el) return [0, 0];
    var r = el.getBoundingClientRect();
    return [r.width, r.height];
  }
  function count(sel) {
    var n = 0, shown = 0;
    document.querySelectorAll(sel).forEach(function (el) {
      n++;
      var b = box(el);
      if (b[0] > 0 && b[1] > 0) shown++;
    });
    return [n, shown];
  }
  var out = {
    chart: box(document.getElementById("timeline-chart")),
    lanes: [], fills: {},
    bars: count("#timeline-chart rect.bar"),
    marks: count("#timeline-chart g.fmark polygon.marker"),
    avail: count("#timeline-chart g.availmark rect.availok"),
    partial: box(document.getElementById("partial")),
    coverage: box(document.getElementById("coverage-top"))
  };
  document.querySelectorAll("#timeline-chart g.lane").forEach(function (g) { out.lanes.push(box(g)); });
  ["ok", "alarm", "misop", "misop-ok", "timeout"].forEach(function (c) {
    var b = document.querySelector("#timeline-chart rect.bar." + c);
    if (b) out.fills[c] = getComputedStyle(b).fill;
  });
  document.documentElement.setAttribute("data-probe", JSON.stringify(out));
})();`

// withProbe adds probeJS to the page, allowed by its hash in the page's
// Content-Security-Policy (which still refuses anything else).
func withProbe(t *testing.T, page []byte) []byte {
	t.Helper()
	h := sha256.Sum256([]byte(probeJS))
	src := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "' "
	p := string(page)
	i := strings.Index(p, "script-src ")
	j := strings.LastIndex(p, "</body>")
	if i < 0 || j < 0 {
		t.Fatal("page has no script-src directive or no </body>")
	}
	return []byte(p[:i] + src + p[i+len("script-src "):j] + `<script id="` + probeID + `">` + probeJS + "</script>\n" + p[j:])
}

// checkProbe checks what probeJS measured: the timeline drew with a real size,
// every bar, fault mark and availability mark is visible, each lane has
// height, outcomes have distinct stylesheet colours, and the banner and
// coverage table take room.
func checkProbe(t *testing.T, root *html.Node, s Summary) {
	t.Helper()
	raw, ok := attr(root, "data-probe")
	if !ok {
		t.Fatal("the test probe did not run (its CSP hash?)")
	}
	var p struct {
		Chart, Partial, Coverage [2]float64
		Lanes                    [][2]float64
		Bars, Marks, Avail       [2]int
		Fills                    map[string]string
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatalf("data-probe %q: %v", raw, err)
	}
	if p.Chart[0] < 300 || p.Chart[1] < 50 {
		t.Errorf("timeline chart renders %vx%v px", p.Chart[0], p.Chart[1])
	}
	workers := map[int]bool{}
	var faults, measured int
	for _, e := range s.Timeline {
		workers[e.Worker] = true
		faults += len(e.Faults)
		if e.Availability != nil {
			measured++
		}
	}
	if len(p.Lanes) != len(workers) {
		t.Errorf("browser drew %d lanes, want %d", len(p.Lanes), len(workers))
	}
	for i, l := range p.Lanes {
		if l[0] <= 0 || l[1] < 20 {
			t.Errorf("lane %d renders %vx%v px", i, l[0], l[1])
		}
	}
	for _, c := range []struct {
		what string
		got  [2]int
		want int
	}{{"bars", p.Bars, len(s.Timeline)}, {"fault marks", p.Marks, faults}, {"availability marks", p.Avail, measured}} {
		if c.got[0] != c.want || c.got[1] != c.want {
			t.Errorf("browser has %d %s, %d of them visible; want %d", c.got[0], c.what, c.got[1], c.want)
		}
	}
	seen := map[string]string{}
	for class, fill := range p.Fills {
		if fill == "" || fill == "rgb(0, 0, 0)" || fill == "none" {
			t.Errorf("%s bars are filled %q: the stylesheet did not apply", class, fill)
		}
		if other, dup := seen[fill]; dup {
			t.Errorf("%s and %s bars share the colour %s", class, other, fill)
		}
		seen[fill] = class
	}
	for _, e := range s.Timeline {
		if class, _ := wantVerdict(e); p.Fills[class] == "" {
			t.Errorf("no fill measured for %s bars (%s)", class, e.ID())
		}
	}
	if s.Partial && (p.Partial[0] <= 0 || p.Partial[1] <= 0) {
		t.Errorf("partial banner renders %vx%v px", p.Partial[0], p.Partial[1])
	}
	if p.Coverage[0] <= 0 || p.Coverage[1] <= 0 {
		t.Errorf("coverage table renders %vx%v px", p.Coverage[0], p.Coverage[1])
	}
}

// checkFaultsAndAvailability checks the OAT layer's columns, chart marks,
// summary cards and misoperation reasons.
func checkFaultsAndAvailability(t *testing.T, doc *html.Node, s Summary) {
	t.Helper()
	table := byID(doc, "timeline-table")
	if table == nil {
		t.Fatal("no timeline table")
	}
	var heads []string
	for _, th := range find(table, isElem(atom.Th)) {
		heads = append(heads, textOf(th))
	}
	if got := strings.Join(heads, "|"); !strings.Contains(got, "|faults|availability|") {
		t.Errorf("timeline columns %q lack faults and availability", got)
	}
	row := func(id string) *html.Node {
		r := byID(doc, stepAnchor(id))
		if r == nil {
			t.Fatalf("no timeline row for %s", id)
		}
		return r
	}
	cell := func(r *html.Node, class string) *html.Node {
		cs := find(r, func(n *html.Node) bool { return n.DataAtom == atom.Td && hasClass(n, class) })
		if len(cs) != 1 {
			t.Fatalf("row %s has %d cells of class %s", func() string { v, _ := attr(r, "id"); return v }(), len(cs), class)
		}
		return cs[0]
	}
	faulted := 0
	for _, e := range s.Timeline {
		r := row(e.ID())
		faults := find(cell(r, "faults"), func(n *html.Node) bool { return n.DataAtom == atom.Div && hasClass(n, "fault") })
		if len(faults) != len(e.Faults) {
			t.Errorf("%s shows %d faults, want %d", e.ID(), len(faults), len(e.Faults))
		}
		if hasClass(r, "faulted") != (len(e.Faults) > 0) {
			t.Errorf("%s faulted class = %v with %d faults", e.ID(), hasClass(r, "faulted"), len(e.Faults))
		}
		if len(e.Faults) > 0 {
			faulted++
		}
		av := cell(r, "avail")
		switch {
		case e.Availability == nil:
			if strings.TrimSpace(textOf(av)) != "" {
				t.Errorf("%s shows availability %q without a workload", e.ID(), textOf(av))
			}
		default:
			want := fmtPercent(*e.Availability) + " (" + strconv.Itoa(e.Requests) + " req.)"
			if textOf(av) != want {
				t.Errorf("%s availability %q, want %q", e.ID(), textOf(av), want)
			}
			if hasClass(av, "low") != (*e.Availability < 0.8) {
				t.Errorf("%s availability %v highlighted = %v", e.ID(), *e.Availability, hasClass(av, "low"))
			}
		}
	}
	if faulted != s.FaultSteps {
		t.Errorf("%d rows with faults, summary counts %d", faulted, s.FaultSteps)
	}
	// The held partition, the unsupported fault (warning style), the kill.
	if txt := textOf(cell(row("w0/s9"), "faults")); !strings.Contains(txt, "partition") || !strings.Contains(txt, "held across the desired state (8s)") || !strings.Contains(txt, "replica gauntlet-w0/vk-2") {
		t.Errorf("w0/s9 faults read %q", txt)
	}
	unsup := find(cell(row("w1/s5"), "faults"), func(n *html.Node) bool { return hasClass(n, "unsup") })
	if len(unsup) != 1 || !strings.HasPrefix(textOf(unsup[0]), "unsupported: pod-failure: the cluster back end cannot inject pod-failure") {
		t.Errorf("w1/s5: no unsupported warning")
	}
	if txt := textOf(cell(row("w0/s6"), "faults")); !strings.Contains(txt, "pod-kill") || strings.Contains(txt, "held") || strings.Contains(txt, "declared") {
		t.Errorf("w0/s6 faults read %q", txt)
	}
	if txt := textOf(cell(row("w1/s4"), "faults")); !strings.Contains(txt, "operator-crash") || !strings.Contains(txt, "struck while the desired state was declared") {
		t.Errorf("w1/s4 faults read %q", txt)
	}
	// The harness's misoperation reason, in the row and in the misoperation group.
	var reason string
	for _, e := range s.Timeline {
		if e.ID() == "w0/s7" {
			reason = e.MisoperationReason
		}
	}
	rs := find(row("w0/s7"), func(n *html.Node) bool { return hasClass(n, "reason") })
	if reason == "" || len(rs) != 1 || textOf(rs[0]) != reason {
		t.Errorf("w0/s7 shows no misoperation reason %q", reason)
	}
	mis := byID(doc, "misoperations")
	if rs := find(mis, func(n *html.Node) bool { return hasClass(n, "reason") }); len(rs) != 1 || textOf(rs[0]) != reason {
		t.Errorf("misoperation group does not show the harness's reason")
	}
	// The chart: one mark per fault, linked to its step; a band for the held
	// partition; faulted bars outlined; the unsupported fault marked as such.
	chart := byID(doc, "timeline-chart")
	marks := find(chart, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "fmark") })
	total := 0
	for _, e := range s.Timeline {
		total += len(e.Faults)
	}
	if len(marks) != total || total == 0 {
		t.Errorf("chart has %d fault marks, want %d", len(marks), total)
	}
	for _, m := range marks {
		href, _ := attr(m.Parent, "href")
		if !strings.HasPrefix(href, "#step-") || byID(doc, strings.TrimPrefix(href, "#")) == nil {
			t.Errorf("fault mark links to %q, which is no step row", href)
		}
		if len(find(m, func(n *html.Node) bool { return n.Data == "polygon" && hasClass(n, "marker") })) != 1 {
			t.Error("fault mark without its triangle")
		}
	}
	if n := len(find(chart, func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "band") })); n != 1 {
		t.Errorf("chart has %d held-fault bands, want 1 (the partition)", n)
	}
	if n := len(find(chart, func(n *html.Node) bool { return hasClass(n, "fmark") && hasClass(n, "unsupported") })); n != s.FaultsUnsupported {
		t.Errorf("chart marks %d unsupported faults, want %d", n, s.FaultsUnsupported)
	}
	if n := len(find(chart, func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "bar") && hasClass(n, "faulted") })); n != s.FaultSteps {
		t.Errorf("chart outlines %d bars, want %d fault steps", n, s.FaultSteps)
	}
	// Summary cards.
	cards := map[string]*html.Node{}
	for _, c := range find(doc, func(n *html.Node) bool { return hasClass(n, "stat") }) {
		for _, l := range find(c, func(n *html.Node) bool { return hasClass(n, "label") }) {
			cards[textOf(l)] = c
		}
	}
	if c := cards["fault steps"]; c == nil || !strings.Contains(textOf(c), "5 (1 unsupported)") {
		t.Error("no fault steps card reading 5 (1 unsupported)")
	}
	c := cards["lowest availability"]
	if c == nil || !strings.Contains(textOf(c), "62.5% at w1/s9") || !hasClass(c, "bad") {
		t.Fatal("no lowest availability card reading 62.5% at w1/s9, marked bad")
	}
	if href, _ := attr(c, "href"); href != "#"+stepAnchor("w1/s9") {
		t.Errorf("lowest availability card links to %q", href)
	}
}

func TestFmtPercent(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1, "100.0%"}, {0, "0.0%"}, {0.625, "62.5%"}, {0.29, "29.0%"}, {0.8, "80.0%"},
		{0.99996, "99.9%"}, // never 100% while a request failed
		{0.7, "70.0%"},
	}
	for _, tc := range tests {
		if got := fmtPercent(tc.in); got != tc.want {
			t.Errorf("fmtPercent(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
