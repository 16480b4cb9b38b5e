package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// JUnitFile is junit.xml's file name inside a results folder.
const JUnitFile = "junit.xml"

// MisoperationSuite names the JUnit test suite that holds misoperation steps.
const MisoperationSuite = "misoperations"

// The JUnit document, in the element order of the common JUnit XML schema
// (Ant's JUnit.xsd, which Jenkins, GitLab and the GitHub test reporters read):
// testsuites > testsuite (properties, testcase*, system-out, system-err).
type junitTestsuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	ID         int             `xml:"id,attr"`
	Package    string          `xml:"package,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  xmlText         `xml:"system-out"`
	SystemErr  xmlText         `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",innerxml"`
}

// WriteJUnit writes s as junit.xml for CI.
//
// Layout: one <testsuite> per oracle (CI front ends list suites first and the
// oracle is what tells a reader the kind of failure: "consistency" vs "health"),
// plus a "misoperations" suite, so misoperation alarms are reported apart from
// bugs. Each suite has one <testcase> per transition (step) it judged, named
// "w0/s3 apply <test case>" with classname "gauntlet.<oracle>", so pass counts
// are real transition counts and a failure names the step. A step that failed
// an oracle carries one <failure> whose type is the alarm group's signature (the
// same bug on many steps shows the same type, and the message says how many
// steps share it) and whose text holds the evidence and the reproducer path.
// Times are convergence times in seconds.
func WriteJUnit(w io.Writer, s Summary) error {
	doc := buildJUnit(s)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	return nil
}

type junitStep struct {
	id       string
	label    string
	converge time.Duration
}

func buildJUnit(s Summary) junitTestsuites {
	// Every step, from the timeline and from the groups (a summary may carry
	// groups for steps whose timeline entry is missing).
	steps := map[string]*junitStep{}
	misopStep := map[string]bool{}
	for _, e := range s.Timeline {
		label := e.ID() + " " + string(e.Kind)
		if e.TestCase != "" {
			label += " " + e.TestCase
		}
		switch {
		case e.TimedOut:
			label += " (timed out)"
		case e.Stuck:
			label += " (stuck)"
		}
		steps[e.ID()] = &junitStep{id: e.ID(), label: label, converge: e.Converge.D()}
		if e.Misoperation {
			misopStep[e.ID()] = true
		}
	}
	for _, gs := range [][]AlarmGroup{s.Alarms, s.Misoperations} {
		for _, g := range gs {
			for _, id := range g.Steps {
				if steps[id] == nil {
					steps[id] = &junitStep{id: id, label: id}
				}
				if g.Misoperation {
					misopStep[id] = true
				}
			}
		}
	}
	var bugSteps, misSteps []*junitStep
	for id, st := range steps {
		if misopStep[id] {
			misSteps = append(misSteps, st)
		} else {
			bugSteps = append(bugSteps, st)
		}
	}
	byStep := func(v []*junitStep) {
		sort.Slice(v, func(i, j int) bool { return compareSteps(v[i].id, v[j].id) < 0 })
	}
	byStep(bugSteps)
	byStep(misSteps)

	oracles := map[string]bool{}
	for _, o := range s.Oracles {
		oracles[o.Oracle] = true
	}
	for _, g := range s.Alarms {
		oracles[g.Oracle] = true
	}
	names := slices.Sorted(maps.Keys(oracles))

	ts := s.Started.UTC().Format("2006-01-02T15:04:05")
	props := []junitProperty{
		{Name: "gauntlet.campaign", Value: s.CampaignID},
		{Name: "gauntlet.target", Value: s.Target},
		{Name: "gauntlet.seed", Value: strconv.FormatInt(s.Seed, 10)},
		{Name: "gauntlet.workers", Value: strconv.Itoa(s.Workers)},
		{Name: "gauntlet.stepsPlanned", Value: strconv.Itoa(s.StepsPlanned)},
		{Name: "gauntlet.stepsDone", Value: strconv.Itoa(s.StepsDone)},
	}
	if s.Shard != nil {
		props = append(props, junitProperty{Name: "gauntlet.shard", Value: s.Shard.String()})
	}
	if m := s.Merged; m != nil {
		props = append(props, junitProperty{Name: "gauntlet.shards", Value: shardList(m.Present) + " of " + strconv.Itoa(m.Count)})
		if len(m.Missing) > 0 {
			props = append(props, junitProperty{Name: "gauntlet.shardsMissing", Value: shardList(m.Missing)})
		}
	}
	doc := junitTestsuites{Name: "gauntlet " + s.Target}
	// The document's time is the campaign's wall-clock time when known, else
	// the sum of the steps' convergence times.
	var total time.Duration
	addSuite := func(name, classname string, st []*junitStep, groups []AlarmGroup, out string) {
		failing := map[string][]AlarmGroup{}
		for _, g := range groups {
			for _, id := range g.Steps {
				failing[id] = append(failing[id], g)
			}
		}
		suite := junitSuite{
			Name:       name,
			ID:         len(doc.Suites),
			Package:    "gauntlet",
			Hostname:   "localhost",
			Timestamp:  ts,
			Properties: props,
			SystemOut:  xmlText{escapeXMLText(out)},
		}
		var sum time.Duration
		for _, step := range st {
			c := junitCase{Name: step.label, Classname: classname, Time: seconds(step.converge)}
			if gs := failing[step.id]; len(gs) > 0 {
				c.Failure = junitFailureFor(step.id, gs)
				suite.Failures++
			}
			sum += step.converge
			suite.Cases = append(suite.Cases, c)
		}
		suite.Tests = len(suite.Cases)
		suite.Time = seconds(sum)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Suites = append(doc.Suites, suite)
	}
	for _, st := range steps {
		total += st.converge
	}
	for _, o := range names {
		var gs []AlarmGroup
		for _, g := range s.Alarms {
			if g.Oracle == o {
				gs = append(gs, g)
			}
		}
		addSuite(o, "gauntlet."+o, bugSteps, gs, suiteOut(s, o, gs))
	}
	if len(misSteps) > 0 || len(s.Misoperations) > 0 {
		addSuite(MisoperationSuite, "gauntlet."+MisoperationSuite, misSteps, s.Misoperations,
			"Misoperations are schema-valid but semantically wrong desired states, declared on purpose: the operator must not break the system and must recover after rollback. They are reported apart from bugs.\n")
	}
	if len(doc.Suites) == 0 {
		addSuite("campaign", "gauntlet.campaign", bugSteps, nil, "No oracle ran.\n")
	}
	doc.Time = seconds(total)
	if !s.Finished.IsZero() && s.Finished.After(s.Started) {
		doc.Time = seconds(s.Finished.Sub(s.Started))
	}
	return doc
}

// shardList formats shard numbers as "1,2,3".
func shardList(ks []int) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = strconv.Itoa(k)
	}
	return strings.Join(parts, ",")
}

// xmlText is element content written as escaped by escapeXMLText.
type xmlText struct {
	Inner string `xml:",innerxml"`
}

// escapeXMLText escapes s for element content, keeping newlines and tabs as
// they are (encoding/xml writes them as character references, which makes a
// failure's text one long line). Characters XML 1.0 cannot carry (NUL and
// other C0 controls, lone surrogates, U+FFFE/U+FFFF) become U+FFFD.
func escapeXMLText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '\r':
			b.WriteString("&#xD;")
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError || (r >= 0xD800 && r <= 0xDFFF):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func suiteOut(s Summary, oracle string, gs []AlarmGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "oracle %s: %d alarm group(s)\n", oracle, len(gs))
	for _, g := range gs {
		fmt.Fprintf(&b, "- %s: %s (%d finding(s) on %d step(s), first %s)\n", g.Signature, g.Summary, g.Count, len(g.Steps), first(g.Steps))
	}
	return b.String()
}

func junitFailureFor(step string, gs []AlarmGroup) *junitFailure {
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].Signature < gs[j].Signature })
	f := &junitFailure{Message: gs[0].Summary, Type: gs[0].Signature}
	if len(gs) > 1 {
		f.Message += fmt.Sprintf(" (and %d more alarm(s) on this step)", len(gs)-1)
	}
	var b strings.Builder
	for i, g := range gs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s [%s] %s\n", g.Oracle, g.Signature, g.Summary)
		fmt.Fprintf(&b, "seen on %d step(s): %s\n", len(g.Steps), strings.Join(g.Steps, ", "))
		for _, e := range g.Evidence {
			b.WriteString("  " + evidenceLine(e) + "\n")
		}
		if g.Reproducer != "" {
			fmt.Fprintf(&b, "reproducer: %s", g.Reproducer)
			if g.ReproducerSteps > 0 {
				fmt.Fprintf(&b, " (%d step(s)", g.ReproducerSteps)
				if g.Confirmed {
					b.WriteString(", confirmed")
				}
				b.WriteString(")")
			}
			b.WriteString("\n")
		}
		if g.GoTest != "" {
			fmt.Fprintf(&b, "go test: %s\n", g.GoTest)
		}
	}
	f.Body = escapeXMLText(b.String())
	return f
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
