package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"go/token"
	"io"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
)

// The oracles whose alarms a Go test can assert.
const (
	// HealthOracle alarms assert workload health.
	HealthOracle = "health"
	// ConsistencyOracle alarms assert that the state reflects the desired values.
	ConsistencyOracle = "consistency"
)

// ErrNoInvariant is returned by WriteGoTest (and Reproducer.Validate) when
// the alarm gives a test nothing to assert, so it could not fail while the
// bug is there.
var ErrNoInvariant = errors.New("nothing to assert: the alarm names no oracle and signature for the test to judge the replay by")

// Assertion is what a reproducer's test asserts: once its last desired state
// converged, the health of the namespace's pods (health oracle) or desired
// values reflected by the state (consistency oracle); for any other alarm,
// that Gauntlet's oracles, judging every transition of the replay as the
// campaign did, no longer raise its signature (Judge).
type Assertion struct {
	// Check is the invariant in words: Reproducer.Check, or a default.
	Check string
	// Health asks that every pod in the namespace be Running and Ready (or
	// Succeeded), with no container restarted.
	Health bool
	// Values must each be reflected by one of their fields.
	Values []ValueCheck
	// Judge asks that the oracles judge the replay's transitions (the
	// system monitor's readings, the workload's history, the events, as
	// during the campaign) and that none raise Signature (an alarm of Oracle).
	Judge     bool
	Oracle    string
	Signature string
}

// ValueCheck is the consistency oracle's invariant for one desired value: at
// least one of Fields reflects Expected as the oracle judges it
// (oracles.Reflects): equal, or, in a configuration text or an argument
// list, the value Key is set to.
type ValueCheck struct {
	// Property is the CR property path that holds the desired value ("" when
	// the evidence does not name it); Key is its last key.
	Property string
	Key      string
	// Expected is the desired value, JSON-encoded.
	Expected json.RawMessage
	// Fields are the state's fields the alarm named as where the value should
	// show (the oracle's candidates), one of which must reflect it.
	Fields []FieldRef
}

// FieldRef is a field of a state object that evidence names.
type FieldRef struct {
	// Object holds the field. A namespaced object (Namespace set) is looked up
	// in the test's namespace, whatever namespace the recorded run used.
	Object model.ObjectKey
	// Path is the field path as recorded, Segments the same parsed by ParsePath.
	Path     string
	Segments []any
	// Evidence is the evidence in one line, for messages.
	Evidence string
}

// AssertionOf derives what r's test asserts from its oracle and evidence:
//
//   - health oracle: every pod in the namespace is Running and Ready, with no
//     container restarts;
//   - consistency oracle: the evidence on the CR names a property and its
//     desired value, the rest the state's fields where the value should show
//     (for each expected value, the fields evidence gives with it); the state
//     must reflect each such value in at least one of its fields — a test
//     passes once the operator puts the value anywhere the alarm looked;
//   - any other oracle (durability, split brain, recovery, ...), or
//     consistency evidence naming no field: what no check of the final state
//     can see (acknowledged writes lost, two primaries while a fault held), so
//     the test judges the replay with Gauntlet's oracles as the campaign did
//     and asserts that the alarm's signature does not fire (Judge);
//     ErrNoInvariant when the reproducer names no oracle or signature.
func AssertionOf(r replay.Reproducer) (Assertion, error) {
	a := Assertion{Check: r.Check}
	switch r.Oracle {
	case HealthOracle:
		a.Health = true
		if a.Check == "" {
			a.Check = "every pod in the namespace is Running and Ready, and no container restarted"
		}
		return a, nil
	case ConsistencyOracle:
	default:
		return judged(r)
	}
	byValue := map[string]int{} // expected JSON -> index into a.Values
	props := map[string]string{}
	for i, e := range r.Evidence {
		if e.Path == "" || e.Expected == nil {
			continue
		}
		want, err := json.Marshal(e.Expected)
		if err != nil {
			return Assertion{}, fmt.Errorf("evidence %d: expected value at %s is not JSON: %w", i, e.Path, err)
		}
		segs, err := ParsePath(e.Path)
		if err != nil {
			return Assertion{}, fmt.Errorf("evidence %d: %w", i, err)
		}
		k := model.ObjectKey{Group: r.CRD.Group, Version: r.CRD.Version, Kind: r.CRD.Kind}
		if e.Object != "" {
			var ok bool
			if k, ok = model.ParseObjectKey(e.Object); !ok {
				return Assertion{}, fmt.Errorf("evidence %d: object %q is not a group/version/Kind/namespace/name key", i, e.Object)
			}
		}
		if _, seen := byValue[string(want)]; !seen {
			byValue[string(want)] = len(a.Values)
			a.Values = append(a.Values, ValueCheck{Expected: want})
		}
		vc := &a.Values[byValue[string(want)]]
		if k.Group == r.CRD.Group && k.Kind == r.CRD.Kind {
			// The CR's own property: what the value is, not where it should show.
			if _, ok := props[string(want)]; !ok {
				props[string(want)] = e.Path
				vc.Property, vc.Key = e.Path, lastKey(segs)
			}
			continue
		}
		vc.Fields = append(vc.Fields, FieldRef{Object: k, Path: e.Path, Segments: segs, Evidence: evidenceLine(e)})
	}
	kept := a.Values[:0]
	for _, vc := range a.Values {
		if len(vc.Fields) > 0 {
			kept = append(kept, vc)
		}
	}
	a.Values = kept
	if len(a.Values) == 0 {
		return judged(r)
	}
	if a.Check == "" {
		a.Check = "the state reflects the desired value in one of the fields the alarm names"
	}
	return a, nil
}

// judged is the assertion that the replay, judged by the oracles, does not
// raise r's signature.
func judged(r replay.Reproducer) (Assertion, error) {
	if r.Oracle == "" || r.Signature == "" {
		return Assertion{}, ErrNoInvariant
	}
	a := Assertion{Check: r.Check, Judge: true, Oracle: r.Oracle, Signature: r.Signature}
	if a.Check == "" {
		a.Check = fmt.Sprintf("Gauntlet's oracles, judging the replay as the campaign did, raise no %s alarm %s", r.Oracle, r.Signature)
	}
	return a, nil
}

// lastKey is the last map key of a parsed path ("" when there is none).
func lastKey(segs []any) string {
	for i := len(segs) - 1; i >= 0; i-- {
		if s, ok := segs[i].(string); ok {
			return s
		}
	}
	return ""
}

// ValidateGoTest reports what keeps r from being a Go test: what keeps it
// from being replayed (replay.Reproducer.Validate) and an alarm with nothing
// to assert (ErrNoInvariant).
func ValidateGoTest(r replay.Reproducer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	_, err := AssertionOf(r)
	return err
}

// GoTestFileName is the file name WriteGoTest's output should be saved under:
// "reproduce_<name>_test.go" in snake case.
func GoTestFileName(r replay.Reproducer) string {
	parts := identParts(r.Name)
	for i := range parts {
		parts[i] = strings.ToLower(parts[i])
	}
	if len(parts) == 0 {
		parts = []string{"alarm"}
	}
	return "reproduce_" + strings.Join(parts, "_") + "_test.go"
}

// WriteGoTest writes r as a short, gofmt-formatted Go test file: one
// TestReproduce<Name> that declares r as a testkit.Reproducer literal and
// hands it to testkit.Run, which replays it and asserts r.Assertion (see the
// testkit package for where it runs: the KUBECONFIG cluster, else an embedded
// cluster with the target's operator deployed).
//
// Every string from the campaign is written as a quoted Go literal (desired
// states and evidence values as JSON decoded by testkit.MustObject and
// testkit.MustJSON), so any value is safe in Go source, and comments quote
// it too. WriteGoTest validates r first (Validate): nothing is written for a
// reproducer the test kit would refuse, and ErrNoInvariant says when there is
// nothing to assert.
func WriteGoTest(w io.Writer, r replay.Reproducer) error {
	v, err := buildGoTestView(r)
	if err != nil {
		return fmt.Errorf("reproducer %q: %w", r.Name, err)
	}
	var buf bytes.Buffer
	if err := goTestTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("reproducer %q: render Go test: %w", r.Name, err)
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return fmt.Errorf("reproducer %q: generated Go test does not parse (a bug in gauntlet's generator, please report it): %w", r.Name, err)
	}
	if _, err := w.Write(src); err != nil {
		return fmt.Errorf("reproducer %q: write Go test: %w", r.Name, err)
	}
	return nil
}

// goTestView holds only Go source fragments: every value that came from the
// campaign has been turned into a literal by goString or goJSON.
type goTestView struct {
	Package string
	Ident   string
	Comment []string
	// Head and Alarm are the literal's simple fields (key, value) that
	// come before the CRD, and after the steps before the evidence.
	Head, Alarm [][2]string
	CRD         string
	Namespace   string
	Seed        []string // quoted lines, joined with +
	Steps       []goStep
	Evidence    []string
	// ConvergeTimeout and Quiet are written with goDuration; ReplayDir is quoted.
	ConvergeTimeout time.Duration
	Quiet           time.Duration
	ReplayDir       string
}

type goStep struct {
	Notes   []string // line comments, values quoted
	Kind    string   // quoted
	Desired []string // quoted lines, joined with +
	// Recreate is set for a step that re-creates the custom resource.
	Recreate bool
	// Fault is a &testkit.FaultPlan{…} literal, or "".
	Fault string
}

func buildGoTestView(r replay.Reproducer) (goTestView, error) {
	pkg := r.Package
	if pkg == "" {
		pkg = "reproducers"
	}
	if !token.IsIdentifier(pkg) || token.IsKeyword(pkg) || pkg == "_" {
		return goTestView{}, fmt.Errorf("package name %q is not a Go identifier: pass a name such as \"reproducers\"", pkg)
	}
	if err := ValidateGoTest(r); err != nil {
		return goTestView{}, err
	}
	a, _ := AssertionOf(r) // valid: ValidateGoTest checked it
	r = r.WithDefaults()
	v := goTestView{Package: pkg, Ident: camel(r.Name), ConvergeTimeout: r.ConvergeTimeout, Quiet: r.Quiet}
	if r.ReplayDir != "" {
		v.ReplayDir = goString(r.ReplayDir)
	}
	v.Comment = []string{
		"Oracle:    " + strconv.Quote(r.Oracle),
		"Signature: " + strconv.Quote(r.Signature),
		"Summary:   " + strconv.Quote(r.Summary),
		"Check:     " + strconv.Quote(a.Check),
	}
	v.Head = append(v.Head, [2]string{"Name", goString(r.Name)})
	if r.Target != "" {
		v.Head = append(v.Head, [2]string{"Target", goString(r.Target)})
	}
	crd := "testkit.CRDRef{Group: " + goString(r.CRD.Group) + ", Version: " + goString(r.CRD.Version) + ", Kind: " + goString(r.CRD.Kind)
	if r.CRD.Resource != "" {
		crd += ", Resource: " + goString(r.CRD.Resource)
	}
	v.CRD = crd + "}"
	v.Namespace = goString(r.Namespace)
	seed, _ := replay.CleanDesired(r.Seed, r.CRD) // valid: Validate checked it
	lines, err := jsonLines(seed)
	if err != nil {
		return goTestView{}, fmt.Errorf("seed: %w", err)
	}
	v.Seed = lines
	for i, st := range r.Steps {
		clean, _ := replay.CleanDesired(st.Desired, r.CRD) // valid: Validate checked it
		lines, err := jsonLines(clean)
		if err != nil {
			return goTestView{}, fmt.Errorf("step %d: %w", i+1, err)
		}
		note := fmt.Sprintf("Step %d (%s).", i+1, strconv.Quote(string(st.Kind)))
		if st.Recreate {
			note = fmt.Sprintf("Step %d (%s): the custom resource is deleted and re-created with it.", i+1, strconv.Quote(string(st.Kind)))
		}
		gs := goStep{Notes: []string{note}, Kind: goString(string(st.Kind)), Desired: lines, Recreate: st.Recreate}
		if st.Fault != nil {
			gs.Fault = "&" + faultLiteral(*st.Fault)
			gs.Notes = append(gs.Notes, faultNote(st))
		}
		v.Steps = append(v.Steps, gs)
	}
	v.Alarm = append(v.Alarm,
		[2]string{"Oracle", goString(r.Oracle)},
		[2]string{"Signature", goString(r.Signature)},
		[2]string{"Summary", goString(r.Summary)})
	if r.Check != "" {
		v.Alarm = append(v.Alarm, [2]string{"Check", goString(r.Check)})
	}
	for i, e := range r.Evidence {
		var parts []string
		if e.Object != "" {
			parts = append(parts, "Object: "+goString(e.Object))
		}
		if e.Path != "" {
			parts = append(parts, "Path: "+goString(e.Path))
		}
		for _, kv := range []struct {
			key string
			val any
		}{{"Expected", e.Expected}, {"Actual", e.Actual}} {
			if kv.val == nil {
				continue
			}
			lit, err := goValue(kv.val)
			if err != nil {
				return goTestView{}, fmt.Errorf("evidence %d: %s value: %w", i, strings.ToLower(kv.key), err)
			}
			parts = append(parts, kv.key+": "+lit)
		}
		if e.Detail != "" {
			parts = append(parts, "Detail: "+goString(e.Detail))
		}
		if len(parts) > 0 {
			v.Evidence = append(v.Evidence, "{"+strings.Join(parts, ", ")+"}")
		}
	}
	return v, nil
}

// faultLiteral is a testkit.FaultPlan{…} composite literal of p.
func faultLiteral(p replay.FaultPlan) string {
	parts := []string{"Kind: " + goString(p.Kind), "Role: " + goString(p.Role), "Pick: " + strconv.Itoa(p.Pick)}
	if p.Persistent {
		parts = append(parts, "Persistent: true")
	}
	if p.Delay != 0 {
		parts = append(parts, "Delay: "+goDuration(p.Delay))
	}
	if p.Hold != 0 {
		parts = append(parts, "Hold: "+goDuration(p.Hold))
	}
	if p.Then != nil {
		parts = append(parts, "Then: &"+faultLiteral(*p.Then))
	}
	if p.After != 0 {
		parts = append(parts, "After: "+goDuration(p.After))
	}
	return "testkit.FaultPlan{" + strings.Join(parts, ", ") + "}"
}

// faultNote says in a comment what a step's fault does and whom the recorded
// run hit (values quoted).
func faultNote(st replay.Step) string {
	p := st.Fault
	when := "held while its desired state is declared"
	switch {
	case st.Kind == model.StepFault:
		when = "on the state its desired state converged to"
	case p.Kind == replay.FaultOperatorCrash:
		when = fmt.Sprintf("%v after its desired state is declared", p.Delay)
	case !replay.Lasting(p.Kind):
		when = "as its desired state is declared"
	}
	n := fmt.Sprintf("Fault %s on the %s, %s", strconv.Quote(p.Kind), strconv.Quote(p.Role), when)
	var hit []string
	for _, f := range st.Faults {
		hit = append(hit, f.Targets...)
	}
	if len(hit) > 0 {
		n += fmt.Sprintf("; the recorded run hit %q", hit)
	}
	return n + "."
}

// jsonLines renders v as indented JSON, one quoted Go string literal per line.
func jsonLines(v any) ([]string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode desired state as JSON: %w", err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strconv.Quote(l)
	}
	return out, nil
}

// goValue writes a JSON value as Go source: a string or a bool as its Go
// literal, anything else as testkit.MustJSON("<compact JSON>").
func goValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return goString(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	return "testkit.MustJSON(" + goString(strings.TrimSuffix(buf.String(), "\n")) + ")", nil
}

// goStrings is a []string literal.
func goStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = goString(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// PathSelector is a path segment that picks the element of a list whose
// field Key equals Value: "containers[name=valkey]".
type PathSelector struct{ Key, Value string }

// ParsePath splits a field path into segments: a string is a map key, an int a
// list index, a PathSelector a list element chosen by one of its fields. The
// grammar is internal/jsonv's (jsonv.ParsePath): it reads
// "spec.template.spec.containers[0].image",
// `metadata.labels["app.kubernetes.io/name"]`, `data['a.b']` and
// "spec.containers[name=valkey].image"; an RFC 6901 JSON pointer
// ("/spec/containers/0/image") is read too, its numeric tokens as list indexes,
// as the oracles write paths. A leading "." or "$." is ignored; the pattern
// segments of masks ([*], {*}, **, globs) come back as the keys they spell.
func ParsePath(p string) ([]any, error) {
	s := p
	if strings.HasPrefix(s, "$.") || strings.HasPrefix(s, "$[") {
		s = s[1:]
	}
	s = strings.TrimPrefix(s, ".")
	if s == "" {
		return nil, fmt.Errorf("path %q is empty", p)
	}
	fp, err := jsonv.ParsePath(s)
	if err != nil {
		return nil, err
	}
	pointer := strings.HasPrefix(s, "/")
	out := make([]any, 0, len(fp))
	for _, seg := range fp {
		switch seg.Kind {
		case jsonv.SegIndex:
			out = append(out, seg.Index)
		case jsonv.SegSelect:
			out = append(out, PathSelector{Key: seg.Key, Value: seg.Value})
		case jsonv.SegAnyIndex, jsonv.SegAnyKey:
			out = append(out, "*")
		case jsonv.SegDeep:
			out = append(out, "**")
		default:
			if n, err := strconv.Atoi(seg.Key); pointer && err == nil && n >= 0 && strconv.Itoa(n) == seg.Key {
				out = append(out, n)
			} else {
				out = append(out, seg.Key)
			}
		}
	}
	return out, nil
}

// goString is s as a Go string literal, safe for any input.
func goString(s string) string { return strconv.Quote(s) }

func goDuration(d time.Duration) string {
	switch {
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " * time.Minute"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " * time.Second"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + " * time.Millisecond"
	}
	return "time.Duration(" + strconv.FormatInt(int64(d), 10) + ")"
}

// identParts splits s into ASCII letter/digit runs.
func identParts(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	})
}

// camel turns a name into an exported-style identifier suffix ("Alarm" when empty).
func camel(s string) string {
	var b strings.Builder
	for _, p := range identParts(s) {
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	if b.Len() == 0 {
		return "Alarm"
	}
	return b.String()
}

var goTestTemplate = template.Must(template.New("gotest").Funcs(template.FuncMap{"duration": goDuration}).Parse(goTestSource))

const goTestSource = `// Generated by gauntlet from a campaign alarm. Keep it in your suite: it fails
// while the bug is there and passes once it is fixed.

package {{.Package}}

import (
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/testkit"
)

// TestReproduce{{.Ident}} replays the minimized reproducer of a Gauntlet alarm
// and asserts the invariant it violated.
//
{{- range .Comment}}
// {{.}}
{{- end}}
//
// With KUBECONFIG set, testkit.Run replays it on that cluster, where the
// operator under test must already run. Otherwise it brings up an embedded
// cluster (as root, with Gauntlet's control plane built by ` + "`make controlplane`" + `),
// deploys the target's operator there (GAUNTLET_TARGET and
// GAUNTLET_OPERATOR_BINARY point it at another target or operator build) and
// deletes the cluster afterwards. Where it cannot run it skips, saying why;
// in CI (CI=true or GAUNTLET_REQUIRE_E2E=1) it fails instead.
func TestReproduce{{.Ident}}(t *testing.T) {
	testkit.Run(t, testkit.Reproducer{
		{{- range .Head}}
		{{index . 0}}: {{index . 1}},
		{{- end}}
		CRD:       {{.CRD}},
		Namespace: {{.Namespace}},
		// The seed (D0), declared first.
		Seed: testkit.MustObject({{range $i, $l := .Seed}}{{if $i}} +
			{{end}}{{$l}}{{end}}),
		{{- if .Steps}}
		Steps: []testkit.Step{
			{{- range .Steps}}
			{{- range .Notes}}
			// {{.}}
			{{- end}}
			{
				Kind: {{.Kind}},
				Desired: testkit.MustObject({{range $i, $l := .Desired}}{{if $i}} +
					{{end}}{{$l}}{{end}}),
				{{- if .Recreate}}
				Recreate: true,
				{{- end}}
				{{- if .Fault}}
				Fault: {{.Fault}},
				{{- end}}
			},
			{{- end}}
		},
		{{- end}}
		{{- range .Alarm}}
		{{index . 0}}: {{index . 1}},
		{{- end}}
		{{- if .Evidence}}
		Evidence: []testkit.Evidence{
			{{- range .Evidence}}
			{{.}},
			{{- end}}
		},
		{{- end}}
		ConvergeTimeout: {{duration .ConvergeTimeout}},
		Quiet:           {{duration .Quiet}},
		{{- if .ReplayDir}}
		ReplayDir: {{.ReplayDir}},
		{{- end}}
	})
}
`
