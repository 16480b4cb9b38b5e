package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"go/token"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// CRDRef names the custom resource type a reproducer declares.
type CRDRef struct {
	Group   string
	Version string
	Kind    string
	// Resource is the plural resource name ("valkeyclusters"); when empty the
	// test finds it through discovery.
	Resource string
}

// Reproducer is a minimized sequence of desired states that raises an alarm.
// WriteGoTest writes it as a Go regression test, which hands it to
// github.com/gauntlet-dev/gauntlet/testkit (where it is testkit.Reproducer) to
// replay and judge.
type Reproducer struct {
	// Name identifies the reproducer; the test is TestReproduce<Name in CamelCase>.
	// Names must be distinct among the files of one package.
	Name string
	// Package is the generated file's package name ("reproducers" when empty).
	Package string
	// Target names the operator under test as `gauntlet run --target` takes
	// it: a built-in target ("builtin:valkey") or a target file's path. A test
	// without KUBECONFIG deploys it on an embedded cluster of its own.
	Target string
	CRD    CRDRef
	// Namespace is where the CR is declared (the test's GAUNTLET_NAMESPACE
	// environment variable overrides it).
	Namespace string
	// Steps are the desired states, declared in order with server-side apply.
	Steps []model.Object
	// Recreate lists indexes into Steps whose CR is deleted and re-created
	// instead of updated (changes a CEL transition rule forbids).
	Recreate []int
	// Oracle, Signature and Summary are the alarm the sequence raises.
	Oracle    string
	Signature string
	Summary   string
	// Check describes the invariant in words; it goes into the test's comment
	// and failure messages.
	Check string
	// Evidence is the alarm's evidence; it decides what the test asserts
	// (see Assertion).
	Evidence []model.Evidence
	// ConvergeTimeout bounds each step's wait (DefaultConvergeTimeout when
	// zero); Quiet is how long the namespace's objects must stay unchanged to
	// count as converged (DefaultQuiet when zero).
	ConvergeTimeout time.Duration
	Quiet           time.Duration
	// Faults lists, by index into Steps, the faults each step ran with. The
	// test kit replays a pod-kill (PodKillFault) itself; a test whose
	// reproducer needs any other kind skips, saying so.
	Faults map[int][]ReproFault
	// ReplayDir is the reproducer's folder as `gauntlet reproduce` takes it
	// (<results>/alarms/N); a test that skips for a fault names it.
	ReplayDir string
}

// Defaults of a reproducer's timing.
const (
	DefaultConvergeTimeout = 5 * time.Minute
	DefaultQuiet           = 5 * time.Second
)

// WithDefaults returns r with zero timings set to their defaults.
func (r Reproducer) WithDefaults() Reproducer {
	if r.ConvergeTimeout <= 0 {
		r.ConvergeTimeout = DefaultConvergeTimeout
	}
	if r.Quiet <= 0 {
		r.Quiet = DefaultQuiet
	}
	return r
}

// Alarm is the alarm in one line: "<oracle> alarm <signature>: <summary>".
func (r Reproducer) Alarm() string {
	return fmt.Sprintf("%s alarm %s: %s", r.Oracle, r.Signature, r.Summary)
}

// PodKillFault is the fault kind the test kit replays on any cluster, with
// plain client-go: it deletes the pods with grace period 0.
const PodKillFault = "pod-kill"

// ReproFault is a fault one step of a reproducer runs with.
type ReproFault struct {
	// Kind is the campaign's fault kind: "pod-kill", "container-crash",
	// "pod-failure", "partition", "operator-crash", "operator-partition".
	Kind string
	// Pods are the names of the pods the recorded run hit ("cache-0"), looked
	// up in the test's namespace; a pod-kill needs at least one.
	Pods []string
	// Before is set for a fault injected before the step's desired state is
	// declared and held while it is (OAT's persistent fault, an operator crash
	// mid-reconcile); otherwise the fault strikes the state the step converged
	// to, and the system must converge again.
	Before bool
}

// ReproFaultFrom turns a fault as the campaign recorded it (model.Step.Faults)
// into a ReproFault; before is as ReproFault.Before. Pods are the pod names of
// its targets: "primary gauntlet-w0/vk-0", "gauntlet-w0/vk-0" and "vk-0" all
// name "vk-0". ok is false for a fault the back end could not inject
// (Unsupported): the recorded run went without it, so the reproducer must too.
func ReproFaultFrom(f model.Fault, before bool) (rf ReproFault, ok bool) {
	if f.Unsupported != "" {
		return ReproFault{}, false
	}
	rf = ReproFault{Kind: f.Kind, Before: before}
	for _, t := range f.Targets {
		fs := strings.Fields(t)
		if len(fs) == 0 {
			continue
		}
		last := fs[len(fs)-1]
		if i := strings.LastIndexByte(last, '/'); i >= 0 {
			last = last[i+1:]
		}
		if last != "" {
			rf.Pods = append(rf.Pods, last)
		}
	}
	return rf, true
}

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
var ErrNoInvariant = errors.New("nothing to assert: a Go test asserts the health oracle's alarms, and the consistency oracle's when their evidence names fields of the state that should reflect the desired value")

// Assertion is what a reproducer's test asserts once its last desired state
// converged: the health of the namespace's pods (health oracle), or desired
// values reflected by the state (consistency oracle).
type Assertion struct {
	// Check is the invariant in words: Reproducer.Check, or a default.
	Check string
	// Health asks that every pod in the namespace be Running and Ready (or
	// Succeeded), with no container restarted.
	Health bool
	// Values must each be reflected by one of their fields.
	Values []ValueCheck
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

// Assertion derives what r's test asserts from its oracle and evidence:
//
//   - health oracle: every pod in the namespace is Running and Ready, with no
//     container restarts;
//   - consistency oracle: the evidence on the CR names a property and its
//     desired value, the rest the state's fields where the value should show
//     (for each expected value, the fields evidence gives with it); the state
//     must reflect each such value in at least one of its fields — a test
//     passes once the operator puts the value anywhere the alarm looked;
//   - any other oracle, or consistency evidence naming no field: nothing a
//     plain client-go test could check the way the oracle did
//     (ErrNoInvariant; `gauntlet reproduce` replays those).
func (r Reproducer) Assertion() (Assertion, error) {
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
		return Assertion{}, ErrNoInvariant
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
		return Assertion{}, ErrNoInvariant
	}
	if a.Check == "" {
		a.Check = "the state reflects the desired value in one of the fields the alarm names"
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

// Validate reports what keeps r from being replayed and judged: a missing
// CRD version or kind, namespace or step, a desired state without
// metadata.name, a recreate or fault index outside the steps, a fault without
// a kind, a pod name that is not one, a pod-kill that names no pod or strikes
// before the first desired state exists, and an alarm with nothing to assert
// (ErrNoInvariant).
func (r Reproducer) Validate() error {
	if r.CRD.Version == "" || r.CRD.Kind == "" {
		return errors.New("the CRD's version and kind are required")
	}
	if r.Namespace == "" {
		return errors.New("the namespace is required")
	}
	if len(r.Steps) == 0 {
		return errors.New("no desired state to declare: a reproducer needs at least one step")
	}
	for i, obj := range r.Steps {
		if _, err := CleanDesired(obj, r.CRD); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	for _, i := range r.Recreate {
		if i < 0 || i >= len(r.Steps) {
			return fmt.Errorf("recreate index %d is outside the %d step(s)", i, len(r.Steps))
		}
	}
	if err := r.validateFaults(); err != nil {
		return err
	}
	_, err := r.Assertion()
	return err
}

func (r Reproducer) validateFaults() error {
	for _, i := range sortedKeys(r.Faults) {
		if i < 0 || i >= len(r.Steps) {
			return fmt.Errorf("faults given for step %d, outside the %d step(s)", i, len(r.Steps))
		}
		for j, f := range r.Faults[i] {
			if f.Kind == "" {
				return fmt.Errorf("step %d fault %d: the fault kind is empty", i, j)
			}
			for _, p := range f.Pods {
				if p == "" || strings.Contains(p, "/") {
					return fmt.Errorf("step %d fault %d: %q is not a pod name: give the name alone (\"cache-0\"), the test looks it up in its own namespace", i, j, p)
				}
			}
			if f.Kind != PodKillFault {
				continue
			}
			if len(f.Pods) == 0 {
				return fmt.Errorf("step %d fault %d: a pod-kill names no pod to delete", i, j)
			}
			if f.Before && i == 0 {
				return fmt.Errorf("step %d fault %d: a pod-kill before the first desired state has no pod to delete (the system does not exist yet)", i, j)
			}
		}
	}
	return nil
}

// sortedKeys returns a map's int keys in order.
func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// CleanDesired returns the desired state as a test declares it: apiVersion
// and kind filled in from crd when missing, status dropped, and metadata cut
// down to name, labels, annotations and finalizers (the namespace is the
// test's; server-set fields would be refused or ignored).
func CleanDesired(obj model.Object, crd CRDRef) (model.Object, error) {
	if obj == nil {
		return nil, errors.New("desired state is empty")
	}
	clean := model.Object{}
	for k, val := range obj {
		if k != "status" {
			clean[k] = val
		}
	}
	apiVersion := crd.Version
	if crd.Group != "" {
		apiVersion = crd.Group + "/" + crd.Version
	}
	if _, ok := clean["apiVersion"]; !ok {
		clean["apiVersion"] = apiVersion
	}
	if _, ok := clean["kind"]; !ok {
		clean["kind"] = crd.Kind
	}
	meta, _ := clean["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, errors.New("desired state has no metadata.name")
	}
	keep := map[string]any{}
	for _, k := range []string{"name", "labels", "annotations", "finalizers"} {
		if val, ok := meta[k]; ok {
			keep[k] = val
		}
	}
	clean["metadata"] = keep
	return clean, nil
}

func objectName(obj model.Object) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}

// GoTestFileName is the file name WriteGoTest's output should be saved under:
// "reproduce_<name>_test.go" in snake case.
func GoTestFileName(r Reproducer) string {
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
func WriteGoTest(w io.Writer, r Reproducer) error {
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
	// come before the CRD, and between the faults and the evidence.
	Head, Alarm [][2]string
	CRD         string
	Namespace   string
	Steps       []goStep
	Recreate    string
	Faults      []goStepFaults
	Evidence    []string
	// ConvergeTimeout and Quiet are written with goDuration; ReplayDir is quoted.
	ConvergeTimeout time.Duration
	Quiet           time.Duration
	ReplayDir       string
}

type goStep struct {
	Notes   []string // line comments, values quoted
	Desired []string // quoted lines, joined with +
}

type goStepFaults struct {
	Step   int
	Faults []string
}

func buildGoTestView(r Reproducer) (goTestView, error) {
	pkg := r.Package
	if pkg == "" {
		pkg = "reproducers"
	}
	if !token.IsIdentifier(pkg) || token.IsKeyword(pkg) || pkg == "_" {
		return goTestView{}, fmt.Errorf("package name %q is not a Go identifier: pass a name such as \"reproducers\"", pkg)
	}
	if err := r.Validate(); err != nil {
		return goTestView{}, err
	}
	a, _ := r.Assertion() // valid: Validate checked it
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
	namespace := goString(r.Namespace)
	v.Namespace = namespace

	recreate := map[int]bool{}
	var rec []string
	for _, i := range r.Recreate {
		if !recreate[i] {
			recreate[i] = true
			rec = append(rec, strconv.Itoa(i))
		}
	}
	if len(rec) > 0 {
		v.Recreate = "[]int{" + strings.Join(rec, ", ") + "}"
	}
	for i, obj := range r.Steps {
		clean, _ := CleanDesired(obj, r.CRD) // valid: Validate checked it
		lines, err := jsonLines(clean)
		if err != nil {
			return goTestView{}, fmt.Errorf("step %d: %w", i, err)
		}
		note := fmt.Sprintf("Step %d.", i)
		if recreate[i] {
			note = fmt.Sprintf("Step %d: the custom resource is deleted and re-created with it.", i)
		}
		s := goStep{Notes: []string{note}, Desired: lines}
		for _, f := range r.Faults[i] {
			when := "once its desired state converged"
			if f.Before {
				when = "before its desired state is declared"
			}
			n := "Fault " + strconv.Quote(f.Kind)
			if len(f.Pods) > 0 {
				n += fmt.Sprintf(" on pods %q", f.Pods)
			}
			s.Notes = append(s.Notes, n+", "+when+".")
		}
		v.Steps = append(v.Steps, s)
	}
	for _, i := range sortedKeys(r.Faults) {
		sf := goStepFaults{Step: i}
		for _, f := range r.Faults[i] {
			lit := "{Kind: " + goString(f.Kind)
			if len(f.Pods) > 0 {
				lit += ", Pods: " + goStrings(f.Pods)
			}
			if f.Before {
				lit += ", Before: true"
			}
			sf.Faults = append(sf.Faults, lit+"}")
		}
		if len(sf.Faults) > 0 {
			v.Faults = append(v.Faults, sf)
		}
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
		Steps: []testkit.Object{
			{{- range .Steps}}
			{{- range .Notes}}
			// {{.}}
			{{- end}}
			testkit.MustObject({{range $i, $l := .Desired}}{{if $i}} +
				{{end}}{{$l}}{{end}}),
			{{- end}}
		},
		{{- if .Recreate}}
		Recreate: {{.Recreate}},
		{{- end}}
		{{- if .Faults}}
		Faults: map[int][]testkit.Fault{
			{{- range .Faults}}
			{{.Step}}: {
				{{- range .Faults}}
				{{.}},
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
