package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// xmlNode is a generic element tree, decoded strictly, to check junit.xml
// against the rules of the common JUnit XML schema (Ant's JUnit.xsd).
type xmlNode struct {
	Name     string
	Attrs    map[string]string
	Children []*xmlNode
	Text     string
}

func parseXML(t *testing.T, b []byte) *xmlNode {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("junit.xml is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{Name: tok.Name.Local, Attrs: map[string]string{}}
			for _, a := range tok.Attr {
				n.Attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			} else if root != nil {
				t.Fatal("junit.xml has more than one root element")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(tok)
			} else if strings.TrimSpace(string(tok)) != "" {
				t.Fatalf("text outside the root element: %q", tok)
			}
		}
	}
	if root == nil {
		t.Fatal("junit.xml has no root element")
	}
	return root
}

var (
	xsdTimestamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)
	xsdDecimal   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
)

// checkJUnitSchema enforces the schema: required attributes and their types,
// element order inside testsuite, at most one failure/error per testcase, and
// counts that agree with the elements.
func checkJUnitSchema(t *testing.T, root *xmlNode) {
	t.Helper()
	if root.Name != "testsuites" {
		t.Fatalf("root is <%s>, want <testsuites>", root.Name)
	}
	intAttr := func(n *xmlNode, a string) int {
		v, ok := n.Attrs[a]
		if !ok {
			t.Fatalf("<%s %q> lacks required attribute %s", n.Name, n.Attrs["name"], a)
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			t.Fatalf("<%s> %s=%q is not a non-negative integer", n.Name, a, v)
		}
		return i
	}
	decAttr := func(n *xmlNode, a string) {
		if v, ok := n.Attrs[a]; !ok || !xsdDecimal.MatchString(v) {
			t.Fatalf("<%s %q> %s=%q is not a decimal", n.Name, n.Attrs["name"], a, v)
		}
	}
	var tests, failures int
	for _, s := range root.Children {
		if s.Name != "testsuite" {
			t.Fatalf("<testsuites> holds <%s>", s.Name)
		}
		for _, a := range []string{"name", "package", "hostname"} {
			if s.Attrs[a] == "" {
				t.Fatalf("testsuite lacks %s", a)
			}
		}
		intAttr(s, "id")
		if !xsdTimestamp.MatchString(s.Attrs["timestamp"]) {
			t.Fatalf("testsuite timestamp %q does not match the schema's pattern", s.Attrs["timestamp"])
		}
		decAttr(s, "time")
		// properties, testcase*, system-out, system-err — in that order.
		order := map[string]int{"properties": 0, "testcase": 1, "system-out": 2, "system-err": 3}
		last, cases, fails := -1, 0, 0
		seen := map[string]int{}
		for _, c := range s.Children {
			o, ok := order[c.Name]
			if !ok {
				t.Fatalf("testsuite %s holds <%s>", s.Attrs["name"], c.Name)
			}
			if o < last {
				t.Fatalf("testsuite %s: <%s> out of order", s.Attrs["name"], c.Name)
			}
			last = o
			seen[c.Name]++
			switch c.Name {
			case "properties":
				for _, p := range c.Children {
					if p.Name != "property" || p.Attrs["name"] == "" {
						t.Fatalf("bad property %+v", p)
					}
					if _, ok := p.Attrs["value"]; !ok {
						t.Fatalf("property %s lacks value", p.Attrs["name"])
					}
				}
			case "testcase":
				cases++
				if c.Attrs["name"] == "" || c.Attrs["classname"] == "" {
					t.Fatalf("testcase lacks name or classname: %v", c.Attrs)
				}
				decAttr(c, "time")
				if len(c.Children) > 1 {
					t.Fatalf("testcase %s has %d children, want at most one failure", c.Attrs["name"], len(c.Children))
				}
				for _, f := range c.Children {
					if f.Name != "failure" {
						t.Fatalf("testcase holds <%s>", f.Name)
					}
					if _, ok := f.Attrs["message"]; !ok {
						t.Fatal("failure lacks message")
					}
					if f.Attrs["type"] == "" {
						t.Fatal("failure lacks type")
					}
					fails++
				}
			}
		}
		for _, req := range []string{"properties", "system-out", "system-err"} {
			if seen[req] != 1 {
				t.Fatalf("testsuite %s has %d <%s>, the schema wants exactly one", s.Attrs["name"], seen[req], req)
			}
		}
		if intAttr(s, "tests") != cases || intAttr(s, "failures") != fails || intAttr(s, "errors") != 0 || intAttr(s, "skipped") != 0 {
			t.Fatalf("testsuite %s counts %v disagree with %d testcases and %d failures", s.Attrs["name"], s.Attrs, cases, fails)
		}
		tests += cases
		failures += fails
	}
	if intAttr(root, "tests") != tests || intAttr(root, "failures") != failures {
		t.Fatalf("testsuites counts %v disagree with %d tests and %d failures", root.Attrs, tests, failures)
	}
	decAttr(root, "time")
}

func TestWriteJUnit(t *testing.T) {
	s := sampleSummary()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Fatalf("no XML declaration: %.60s", buf.Bytes())
	}
	root := parseXML(t, buf.Bytes())
	checkJUnitSchema(t, root)

	suites := map[string]*xmlNode{}
	var names []string
	for _, s := range root.Children {
		suites[s.Attrs["name"]] = s
		names = append(names, s.Attrs["name"])
	}
	wantNames := []string{"consistency", "differential", "health", "recovery", "stability", MisoperationSuite}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("suites %v, want %v (one per oracle, then misoperations)", names, wantNames)
	}
	failuresOf := func(suite string) map[string]*xmlNode {
		out := map[string]*xmlNode{}
		for _, c := range suites[suite].Children {
			if c.Name == "testcase" && len(c.Children) == 1 {
				out[strings.Fields(c.Attrs["name"])[0]] = c.Children[0]
			}
		}
		return out
	}
	tests := []struct {
		suite     string
		cases     int
		failSteps []string
	}{
		// 24 steps, one of them a misoperation.
		{"consistency", 23, []string{"w0/s4", "w0/s5", "w0/s9", "w1/s6", "w1/s7"}},
		{"differential", 23, []string{"w1/s10"}},
		{"health", 23, nil},
		{"recovery", 23, []string{"w0/s5"}},
		{"stability", 23, []string{"w1/s8"}},
		{MisoperationSuite, 1, []string{"w0/s7"}},
	}
	for _, tc := range tests {
		if got := suites[tc.suite].Attrs["tests"]; got != strconv.Itoa(tc.cases) {
			t.Errorf("suite %s has %s tests, want %d", tc.suite, got, tc.cases)
		}
		fs := failuresOf(tc.suite)
		if len(fs) != len(tc.failSteps) {
			t.Errorf("suite %s fails %d steps, want %v", tc.suite, len(fs), tc.failSteps)
		}
		for _, st := range tc.failSteps {
			if fs[st] == nil {
				t.Errorf("suite %s: step %s does not fail", tc.suite, st)
			}
		}
	}
	// A failure names the group's signature and evidence; the same bug on four
	// steps shows the same type on each.
	exporter := s.Alarms[0]
	for _, st := range exporter.Steps {
		f := failuresOf("consistency")[st]
		if f.Attrs["type"] != exporter.Signature {
			t.Errorf("%s failure type %q, want %s", st, f.Attrs["type"], exporter.Signature)
		}
		if !strings.Contains(f.Text, "\nseen on 4 step(s)") {
			t.Errorf("%s failure text is not one line per fact:\n%s", st, f.Text)
		}
		for _, want := range []string{"seen on 4 step(s)", "spec.template.spec.containers", "oliver006/redis_exporter", "reproducer: alarms/1"} {
			if !strings.Contains(f.Text, want) {
				t.Errorf("%s failure text lacks %q:\n%s", st, want, f.Text)
			}
		}
	}
	// Nasty strings survive: every character XML can carry comes back intact
	// (NUL cannot appear in XML 1.0 and is replaced).
	nf := failuresOf("consistency")["w0/s9"]
	wantMsg := strings.ReplaceAll(s.Alarms[3].Summary, "\x00", "\uFFFD")
	if nf.Attrs["message"] != wantMsg {
		t.Errorf("nasty message came back as\n%q\nwant\n%q", nf.Attrs["message"], wantMsg)
	}
	if strings.Contains(buf.String(), "<script>") {
		t.Error("raw <script> in junit.xml")
	}
	for _, p := range suites["consistency"].Children[0].Children {
		if p.Attrs["name"] == "gauntlet.seed" && p.Attrs["value"] != "42" {
			t.Errorf("seed property %q", p.Attrs["value"])
		}
	}
}

func TestWriteJUnitEdgeCases(t *testing.T) {
	tests := []struct {
		name       string
		s          Summary
		wantSuites []string
		wantTests  int
		wantFails  int
	}{
		{"empty campaign", Summary{Target: "t"}, []string{"campaign"}, 0, 0},
		{"oracles but no steps", Summary{Target: "t", Oracles: []OracleCount{{Oracle: "health"}}}, []string{"health"}, 0, 0},
		{
			name: "groups for steps missing from the timeline",
			s: Summary{Target: "t", Oracles: []OracleCount{{Oracle: "health"}},
				Alarms: []AlarmGroup{{Signature: "s1", Oracle: "custom", Summary: "x", Steps: []string{"w0/s1", "w0/s2"}},
					{Signature: "s2", Oracle: "custom", Summary: "y", Steps: []string{"w0/s2"}}},
			},
			// custom: 2 steps, 2 failing (w0/s2 carries both groups in one failure); health: same 2 steps pass.
			wantSuites: []string{"custom", "health"}, wantTests: 4, wantFails: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJUnit(&buf, tc.s); err != nil {
				t.Fatal(err)
			}
			root := parseXML(t, buf.Bytes())
			checkJUnitSchema(t, root)
			var names []string
			for _, s := range root.Children {
				names = append(names, s.Attrs["name"])
			}
			if strings.Join(names, ",") != strings.Join(tc.wantSuites, ",") {
				t.Errorf("suites %v, want %v", names, tc.wantSuites)
			}
			if root.Attrs["tests"] != strconv.Itoa(tc.wantTests) || root.Attrs["failures"] != strconv.Itoa(tc.wantFails) {
				t.Errorf("tests=%s failures=%s, want %d and %d", root.Attrs["tests"], root.Attrs["failures"], tc.wantTests, tc.wantFails)
			}
		})
	}
}

func TestEscapeXMLTextRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\nb\tc", "a\nb\tc"},
		{"cr\r\nlf", "cr\r\nlf"},
		{"<&>\"'", "<&>\"'"},
		{"nul\x00 bell\x07", "nul\uFFFD bell\uFFFD"},
		{"bad utf8 \xff", "bad utf8 \uFFFD"},
		{"nonchar \uFFFE", "nonchar \uFFFD"},
		{"]]> 🚀 \u2028", "]]> 🚀 \u2028"},
	}
	for _, tc := range tests {
		doc := "<x>" + escapeXMLText(tc.in) + "</x>"
		var got struct {
			Text string `xml:",chardata"`
		}
		if err := xml.Unmarshal([]byte(doc), &got); err != nil {
			t.Errorf("escapeXMLText(%q) = %q: not XML: %v", tc.in, doc, err)
			continue
		}
		if got.Text != tc.want {
			t.Errorf("escapeXMLText(%q) round trip = %q, want %q", tc.in, got.Text, tc.want)
		}
	}
}
