package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"go/token"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/gauntlet-dev/gauntlet/model"
)

// CRDRef names the custom resource type a reproducer declares.
type CRDRef struct {
	Group   string
	Version string
	Kind    string
	// Resource is the plural resource name ("valkeyclusters"); when empty the
	// generated test finds it through discovery.
	Resource string
}

// Reproducer is a minimized sequence of desired states that raises an alarm,
// as WriteGoTest turns it into a standalone Go regression test.
type Reproducer struct {
	// Name identifies the reproducer; the test is TestReproduce<Name in CamelCase>.
	// Names must be distinct among the files of one package.
	Name string
	// Package is the generated file's package name ("reproducers" when empty).
	Package string
	CRD     CRDRef
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
	// Evidence is the alarm's evidence; it decides what the test asserts.
	Evidence []model.Evidence
	// ConvergeTimeout bounds each step's wait (5m when zero); Quiet is how long
	// the namespace's objects must stay unchanged to count as converged (5s when zero).
	ConvergeTimeout time.Duration
	Quiet           time.Duration
	// Faults lists, by index into Steps, the faults each step ran with. A
	// pod-kill (PodKillFault) is replayed by the test itself; any other kind
	// needs Gauntlet's fault back ends, so the generated test skips, saying so.
	Faults map[int][]ReproFault
	// ReplayDir is the reproducer's folder as `gauntlet reproduce` takes it
	// (<results>/alarms/N); a test that skips for a fault names it ("<dir>"
	// when empty).
	ReplayDir string
}

// PodKillFault is the one fault kind a generated test injects itself, with
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

// HealthOracle is the oracle name for which reproducers assert workload health.
const HealthOracle = "health"

// ErrNoInvariant is returned by WriteGoTest when neither the oracle nor the
// evidence gives the test something to assert, so it could not fail while the
// bug is there.
var ErrNoInvariant = errors.New("nothing to assert: the invariant needs evidence with a path and an expected value, or the health oracle")

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

// WriteGoTest writes r as a standalone, gofmt-formatted Go test file: plain
// testing and client-go's dynamic client, KUBECONFIG from the environment (the
// test skips when it is unset). It applies each desired state with server-side
// apply, waits for the CR's status.observedGeneration (when the operator
// publishes one) and for the namespace's objects to stop changing, then asserts
// the violated invariant.
//
// Faults: a pod-kill deletes the step's pods with grace period 0 (before the
// desired state is declared, or once it converged), waits until they are
// replaced and Running and Ready (bounded by the convergence timeout), then
// for the namespace to settle again. A reproducer with any other fault kind
// yields a test that skips at once, naming the fault and `gauntlet reproduce`:
// plain client-go cannot inject it, and a test that ran without it would pass
// without testing anything.
//
// The invariants:
//
//   - health oracle: every pod in the namespace is Running and Ready, with no
//     container restarts;
//   - any other oracle (consistency first among them): each piece of evidence
//     with a path and an expected value names a field of an object (the CR when
//     no object is named) that must hold the expected value.
//
// Every string from the campaign is written as a quoted Go literal (objects as
// JSON), so any value is safe in Go source. The helpers live on a type named
// after the test, so several generated files can share a package.
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
// campaign has been turned into a literal by goString or goPath.
type goTestView struct {
	Package   string
	Ident     string
	Type      string
	Comment   []string
	Group     string
	Version   string
	Kind      string
	Resource  string
	Namespace string
	Converge  string
	Quiet     string
	Alarm     string
	Steps     []goStep
	Fields    []goField
	Health    bool
	// Skip is the quoted t.Skip message of a test that needs a fault plain
	// client-go cannot inject; Kills is set when a step kills pods, and
	// FaultWaits is how many more convergence timeouts the test may take then.
	Skip       string
	Kills      bool
	FaultWaits int
}

type goStep struct {
	Recreate bool
	Desired  []string // quoted lines, joined with +
	// Notes describe the step's faults (line comments, values quoted);
	// KillBefore and KillAfter are []string literals ("" when empty).
	Notes      []string
	KillBefore string
	KillAfter  string
}

type goField struct {
	Comment    string
	Group      string
	Version    string
	Kind       string
	Namespaced string
	Name       string
	Path       string
	Expected   string
}

func buildGoTestView(r Reproducer) (goTestView, error) {
	pkg := r.Package
	if pkg == "" {
		pkg = "reproducers"
	}
	if !token.IsIdentifier(pkg) || token.IsKeyword(pkg) || pkg == "_" {
		return goTestView{}, fmt.Errorf("package name %q is not a Go identifier: pass a name such as \"reproducers\"", pkg)
	}
	if r.CRD.Version == "" || r.CRD.Kind == "" {
		return goTestView{}, errors.New("the CRD's version and kind are required")
	}
	if r.Namespace == "" {
		return goTestView{}, errors.New("the namespace is required")
	}
	if len(r.Steps) == 0 {
		return goTestView{}, errors.New("no desired state to declare: a reproducer needs at least one step")
	}
	ident := camel(r.Name)
	converge, quiet := r.ConvergeTimeout, r.Quiet
	if converge <= 0 {
		converge = 5 * time.Minute
	}
	if quiet <= 0 {
		quiet = 5 * time.Second
	}
	v := goTestView{
		Package:   pkg,
		Ident:     ident,
		Type:      "reproduce" + ident,
		Group:     goString(r.CRD.Group),
		Version:   goString(r.CRD.Version),
		Kind:      goString(r.CRD.Kind),
		Resource:  goString(r.CRD.Resource),
		Namespace: goString(r.Namespace),
		Converge:  goDuration(converge),
		Quiet:     goDuration(quiet),
		Alarm:     goString(fmt.Sprintf("%s alarm %s: %s", r.Oracle, r.Signature, r.Summary)),
	}
	v.Comment = []string{
		"Oracle:    " + strconv.Quote(r.Oracle),
		"Signature: " + strconv.Quote(r.Signature),
		"Summary:   " + strconv.Quote(r.Summary),
	}
	recreate := map[int]bool{}
	for _, i := range r.Recreate {
		if i < 0 || i >= len(r.Steps) {
			return goTestView{}, fmt.Errorf("recreate index %d is outside the %d step(s)", i, len(r.Steps))
		}
		recreate[i] = true
	}
	var crName string
	for i, obj := range r.Steps {
		desired, name, err := desiredLiteral(obj, r.CRD)
		if err != nil {
			return goTestView{}, fmt.Errorf("step %d: %w", i, err)
		}
		crName = name
		v.Steps = append(v.Steps, goStep{Recreate: recreate[i], Desired: desired})
	}
	if err := v.addFaults(r); err != nil {
		return goTestView{}, err
	}

	check := r.Check
	if r.Oracle == HealthOracle {
		v.Health = true
		if check == "" {
			check = "every pod in the namespace is Running and Ready, and no container restarted"
		}
		v.Comment = append(v.Comment, "Check:     "+strconv.Quote(check))
		return v, nil
	}
	for i, e := range r.Evidence {
		if e.Path == "" || e.Expected == nil {
			continue
		}
		f, err := fieldCheck(e, r.CRD, crName)
		if err != nil {
			return goTestView{}, fmt.Errorf("evidence %d: %w", i, err)
		}
		v.Fields = append(v.Fields, f)
	}
	if len(v.Fields) == 0 {
		return goTestView{}, ErrNoInvariant
	}
	if check == "" {
		check = "each field below holds the value the alarm expected"
	}
	v.Comment = append(v.Comment, "Check:     "+strconv.Quote(check))
	return v, nil
}

// addFaults validates r.Faults and fills in the steps' kills and notes, the
// skip message and the extra time budget.
func (v *goTestView) addFaults(r Reproducer) error {
	idx := make([]int, 0, len(r.Faults))
	for i := range r.Faults {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		if i < 0 || i >= len(r.Steps) {
			return fmt.Errorf("faults given for step %d, outside the %d step(s)", i, len(r.Steps))
		}
	}
	var needs []string
	for _, i := range idx {
		var before, after []string
		for j, f := range r.Faults[i] {
			if f.Kind == "" {
				return fmt.Errorf("step %d fault %d: the fault kind is empty", i, j)
			}
			for _, p := range f.Pods {
				if p == "" || strings.Contains(p, "/") {
					return fmt.Errorf("step %d fault %d: %q is not a pod name: give the name alone (\"cache-0\"), the test looks it up in its own namespace", i, j, p)
				}
			}
			when := "once its desired state converged"
			if f.Before {
				when = "before its desired state is declared"
			}
			note := "Fault " + strconv.Quote(f.Kind)
			if len(f.Pods) > 0 {
				note += fmt.Sprintf(" on pods %q", f.Pods)
			}
			v.Steps[i].Notes = append(v.Steps[i].Notes, note+", "+when+".")
			if f.Kind != PodKillFault {
				if !slices.Contains(needs, f.Kind) {
					needs = append(needs, f.Kind)
				}
				continue
			}
			if len(f.Pods) == 0 {
				return fmt.Errorf("step %d fault %d: a pod-kill names no pod to delete", i, j)
			}
			if f.Before && i == 0 {
				return fmt.Errorf("step %d fault %d: a pod-kill before the first desired state has no pod to delete (the system does not exist yet)", i, j)
			}
			if f.Before {
				before = append(before, f.Pods...)
			} else {
				after = append(after, f.Pods...)
			}
		}
		if len(before)+len(after) > 0 {
			v.Kills = true
			v.FaultWaits += len(before) + len(after) + 3 // each pod's lookup, two replacement waits, the settling
			v.Steps[i].KillBefore, v.Steps[i].KillAfter = goStrings(before), goStrings(after)
		}
	}
	if len(needs) > 0 {
		dir := r.ReplayDir
		if dir == "" {
			dir = "<dir>"
		}
		what := "the fault " + needs[0]
		if len(needs) > 1 {
			what = "the faults " + strings.Join(needs[:len(needs)-1], ", ") + " and " + needs[len(needs)-1]
		}
		v.Skip = goString("this reproducer needs " + what + ", which plain client-go cannot inject: replay it with `gauntlet reproduce " + dir + "`")
	}
	return nil
}

// goStrings is a []string literal ("" for none).
func goStrings(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = goString(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// desiredLiteral cleans a desired state (apiVersion and kind filled in; status
// and server-set metadata dropped), renders it as indented JSON and returns it
// as quoted Go string literals, one per line.
func desiredLiteral(obj model.Object, crd CRDRef) ([]string, string, error) {
	if obj == nil {
		return nil, "", errors.New("desired state is empty")
	}
	clean := map[string]any{}
	for k, val := range obj {
		if k == "status" {
			continue
		}
		clean[k] = val
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
		return nil, "", errors.New("desired state has no metadata.name")
	}
	keep := map[string]any{}
	for _, k := range []string{"name", "labels", "annotations", "finalizers"} {
		if val, ok := meta[k]; ok {
			keep[k] = val
		}
	}
	clean["metadata"] = keep // the namespace is set by the test
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(clean); err != nil {
		return nil, "", fmt.Errorf("encode desired state as JSON: %w", err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strconv.Quote(l)
	}
	return out, name, nil
}

func fieldCheck(e model.Evidence, crd CRDRef, crName string) (goField, error) {
	f := goField{Comment: strconv.Quote(evidenceLine(e))}
	if e.Object == "" {
		f.Group, f.Version, f.Kind = goString(crd.Group), goString(crd.Version), goString(crd.Kind)
		f.Namespaced, f.Name = "true", goString(crName)
	} else {
		k, ok := model.ParseObjectKey(e.Object)
		if !ok {
			return goField{}, fmt.Errorf("object %q is not a group/version/Kind/namespace/name key", e.Object)
		}
		f.Group, f.Version, f.Kind = goString(k.Group), goString(k.Version), goString(k.Kind)
		f.Namespaced, f.Name = strconv.FormatBool(k.Namespace != ""), goString(k.Name)
	}
	path, err := ParsePath(e.Path)
	if err != nil {
		return goField{}, err
	}
	f.Path = goPath(path)
	want, err := json.Marshal(e.Expected)
	if err != nil {
		return goField{}, fmt.Errorf("expected value at %s is not JSON: %w", e.Path, err)
	}
	f.Expected = goString(string(want))
	return f, nil
}

// PathSelector is a path segment that picks the element of a list whose
// field Key equals Value: "containers[name=valkey]".
type PathSelector struct{ Key, Value string }

// ParsePath splits a field path into segments: a string is a map key, an int a
// list index, a PathSelector a list element chosen by one of its fields. It
// reads "spec.template.spec.containers[0].image",
// `metadata.labels["app.kubernetes.io/name"]`, "metadata.labels[app.kubernetes.io/name]"
// and "spec.containers[name=valkey].image"; a leading "." or "$." is ignored.
// An RFC 6901 JSON pointer ("/spec/containers/0/image") is read too, its
// numeric tokens as list indexes, as the oracles write paths.
func ParsePath(p string) ([]any, error) {
	if strings.HasPrefix(p, "/") {
		var out []any
		for _, tok := range strings.Split(p[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			if n, err := strconv.Atoi(tok); err == nil && n >= 0 && strconv.Itoa(n) == tok {
				out = append(out, n)
			} else {
				out = append(out, tok)
			}
		}
		return out, nil
	}
	s := strings.TrimPrefix(strings.TrimPrefix(p, "$"), ".")
	if s == "" {
		return nil, fmt.Errorf("path %q is empty", p)
	}
	var out []any
	for len(s) > 0 {
		switch s[0] {
		case '.':
			s = s[1:]
			if s == "" || s[0] == '.' || s[0] == '[' {
				return nil, fmt.Errorf("path %q has an empty segment", p)
			}
		case '[':
			end := closingBracket(s)
			if end < 0 {
				return nil, fmt.Errorf("path %q has an unclosed [", p)
			}
			inner := s[1:end]
			s = s[end+1:]
			switch {
			case inner == "":
				return nil, fmt.Errorf("path %q has an empty []", p)
			case inner[0] == '"':
				k, err := strconv.Unquote(inner)
				if err != nil {
					return nil, fmt.Errorf("path %q: bad quoted key %s: %w", p, inner, err)
				}
				out = append(out, k)
			case inner[0] == '\'' && len(inner) >= 2 && inner[len(inner)-1] == '\'':
				out = append(out, inner[1:len(inner)-1])
			default:
				if n, err := strconv.Atoi(inner); err == nil && n >= 0 {
					out = append(out, n)
				} else if k, val, ok := strings.Cut(inner, "="); ok && k != "" {
					out = append(out, PathSelector{Key: k, Value: val})
				} else {
					out = append(out, inner)
				}
			}
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			out = append(out, s[:end])
			s = s[end:]
		}
	}
	return out, nil
}

// closingBracket finds the ] that closes the [ at s[0], skipping quoted text.
func closingBracket(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == '\\' && quote == '"':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == ']':
			return i
		}
	}
	return -1
}

// goPath writes a parsed path as a Go []any literal.
func goPath(path []any) string {
	parts := make([]string, len(path))
	for i, seg := range path {
		switch s := seg.(type) {
		case int:
			parts[i] = strconv.Itoa(s)
		case PathSelector:
			parts[i] = "[2]string{" + goString(s.Key) + ", " + goString(s.Value) + "}"
		default:
			parts[i] = goString(fmt.Sprint(s))
		}
	}
	return "[]any{" + strings.Join(parts, ", ") + "}"
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

var goTestTemplate = template.Must(template.New("gotest").Parse(goTestSource))

const goTestSource = `// Generated by gauntlet from a campaign alarm. Keep it in your suite: it fails
// while the bug is there and passes once it is fixed.

package {{.Package}}

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	{{- if .Kills}}
	"k8s.io/apimachinery/pkg/types"
	{{- end}}
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// TestReproduce{{.Ident}} replays the minimized reproducer of a Gauntlet alarm.
//
{{- range .Comment}}
// {{.}}
{{- end}}
//
// It needs a cluster where the operator under test runs, named by KUBECONFIG
// (the test is skipped when it is unset). GAUNTLET_NAMESPACE overrides the
// namespace; a namespace the test creates is deleted afterwards, and so is the
// custom resource.
{{- if .Kills}}
//
// Pod-kill faults are replayed on the pods the recorded run hit: deleted with
// grace period 0, then awaited until replaced and Running and Ready.
{{- end}}
func TestReproduce{{.Ident}}(t *testing.T) {
	{{- if .Skip}}
	t.Skip({{.Skip}})
	{{- end}}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: point it at a cluster where the operator under test runs to replay this reproducer")
	}
	r := &{{.Type}}{
		cr:              schema.GroupVersionKind{Group: {{.Group}}, Version: {{.Version}}, Kind: {{.Kind}}},
		resource:        {{.Resource}},
		namespace:       {{.Namespace}},
		convergeTimeout: {{.Converge}},
		quiet:           {{.Quiet}},
		alarm:           {{.Alarm}},
	}
	if ns := os.Getenv("GAUNTLET_NAMESPACE"); ns != "" {
		r.namespace = ns
	}
	steps := []struct {
		recreate bool
		desired  string
		{{- if .Kills}}
		// killBefore are pods deleted before the desired state is declared,
		// killAfter pods deleted once it converged.
		killBefore []string
		killAfter  []string
		{{- end}}
	}{
		{{- range .Steps}}
		{
			{{- range .Notes}}
			// {{.}}
			{{- end}}
			recreate: {{.Recreate}},
			desired: {{range $i, $l := .Desired}}{{if $i}} +
				{{end}}{{$l}}{{end}},
			{{- if .KillBefore}}
			killBefore: {{.KillBefore}},
			{{- end}}
			{{- if .KillAfter}}
			killAfter: {{.KillAfter}},
			{{- end}}
		},
		{{- end}}
	}
	{{- if .Kills}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(steps)+2+{{.FaultWaits}})*r.convergeTimeout)
	defer cancel()
	r.connect(ctx, t, kubeconfig)
	for i, s := range steps {
		before := r.killPods(ctx, t, i, s.killBefore)
		r.declare(ctx, t, i, s.desired, s.recreate)
		r.waitReplaced(ctx, t, i, before)
		after := r.killPods(ctx, t, i, s.killAfter)
		r.waitReplaced(ctx, t, i, after)
		if len(before)+len(after) > 0 {
			r.settle(ctx, t, i, s.desired)
		}
	}
	{{- else}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(steps)+2)*r.convergeTimeout)
	defer cancel()
	r.connect(ctx, t, kubeconfig)
	for i, s := range steps {
		r.declare(ctx, t, i, s.desired, s.recreate)
	}
	{{- end}}

	// The invariant the alarm found violated.
	{{- range .Fields}}
	// {{.Comment}}
	r.expectField(ctx, t, {{.Group}}, {{.Version}}, {{.Kind}}, {{.Namespaced}}, {{.Name}}, {{.Path}}, {{.Expected}})
	{{- end}}
	{{- if .Health}}
	r.expectHealthy(ctx, t)
	{{- end}}
}

// {{.Type}} holds TestReproduce{{.Ident}}'s cluster access and helpers.
type {{.Type}} struct {
	cr              schema.GroupVersionKind
	resource        string
	namespace       string
	convergeTimeout time.Duration
	quiet           time.Duration
	alarm           string

	client  dynamic.Interface
	mapper  meta.RESTMapper
	watched []schema.GroupVersionResource
	applied map[string]bool
}

// connect builds the clients, lists the namespaced resources whose objects
// count for convergence, and creates the namespace when it is missing.
func (r *{{.Type}}) connect(ctx context.Context, t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load KUBECONFIG %s: %v", kubeconfig, err)
	}
	if r.client, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	r.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("discover the cluster's resources: %v", err)
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !r.listable(res.Verbs) || r.volatile(gv.Group, res.Name) {
				continue
			}
			r.watched = append(r.watched, gv.WithResource(res.Name))
		}
	}
	r.applied = map[string]bool{}

	namespaces := r.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	_, err = namespaces.Get(ctx, r.namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ns := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "Namespace",
			"metadata":   map[string]any{"name": r.namespace},
		}}
		if _, err := namespaces.Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", r.namespace, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), r.convergeTimeout)
			defer cancel()
			if err := namespaces.Delete(ctx, r.namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete namespace %s: %v", r.namespace, err)
				return
			}
			if err := r.waitGone(ctx, namespaces, r.namespace); err != nil {
				t.Errorf("namespace %s: %v", r.namespace, err)
			}
		})
	case err != nil:
		t.Fatalf("get namespace %s: %v", r.namespace, err)
	}
}

func (r *{{.Type}}) listable(verbs metav1.Verbs) bool {
	for _, v := range verbs {
		if v == "list" {
			return true
		}
	}
	return false
}

// volatile resources change on their own (events, leader-election leases,
// deprecated endpoints) and would keep the namespace from ever looking quiet.
func (r *{{.Type}}) volatile(group, resource string) bool {
	switch group + "/" + resource {
	case "/events", "events.k8s.io/events", "coordination.k8s.io/leases", "/endpoints":
		return true
	}
	return false
}

// crClient returns the client for the custom resource in the namespace.
func (r *{{.Type}}) crClient(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	gvr := r.cr.GroupVersion().WithResource(r.resource)
	if r.resource == "" {
		m, err := r.mapper.RESTMapping(r.cr.GroupKind(), r.cr.Version)
		if err != nil {
			t.Fatalf("find the resource of %s (is its CRD installed?): %v", r.cr, err)
		}
		gvr = m.Resource
	}
	return r.client.Resource(gvr).Namespace(r.namespace)
}

// declare applies one desired state with server-side apply (deleting the CR
// first when recreate is set) and waits for convergence.
func (r *{{.Type}}) declare(ctx context.Context, t *testing.T, step int, desired string, recreate bool) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(desired), &obj); err != nil {
		t.Fatalf("step %d: decode the desired state: %v", step, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(r.namespace)
	crs := r.crClient(t)
	if recreate {
		if err := crs.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("step %d: delete %s %s to re-create it: %v", step, r.cr.Kind, u.GetName(), err)
		}
		if err := r.waitGone(ctx, crs, u.GetName()); err != nil {
			t.Fatalf("step %d: %s %s: %v", step, r.cr.Kind, u.GetName(), err)
		}
	}
	applied, err := crs.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "gauntlet-reproducer", Force: true})
	if err != nil {
		t.Fatalf("step %d: server-side apply of %s %s: %v (%s)", step, r.cr.Kind, u.GetName(), err, r.alarm)
	}
	if !r.applied[u.GetName()] {
		r.applied[u.GetName()] = true
		name := u.GetName()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), r.convergeTimeout)
			defer cancel()
			if err := crs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", r.cr.Kind, name, err)
				return
			}
			if err := r.waitGone(ctx, crs, name); err != nil {
				t.Errorf("%s %s: %v", r.cr.Kind, name, err)
			}
		})
	}
	r.waitConverged(ctx, t, step, crs, u.GetName(), applied.GetGeneration())
}

// waitConverged returns once the CR's status.observedGeneration has reached
// generation (if the operator publishes it) and the namespace's objects have
// not changed for the quiet window.
func (r *{{.Type}}) waitConverged(ctx context.Context, t *testing.T, step int, crs dynamic.ResourceInterface, name string, generation int64) {
	t.Helper()
	deadline := time.Now().Add(r.convergeTimeout)
	last, lastChange, published := "", time.Now(), false
	for {
		fp, err := r.fingerprint(ctx)
		if err != nil {
			t.Fatalf("step %d: list the namespace's objects: %v", step, err)
		}
		if fp != last {
			last, lastChange = fp, time.Now()
		}
		observed := int64(-1)
		if cr, err := crs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			if og, found, err := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); err == nil && found {
				published, observed = true, og
			}
		}
		if time.Since(lastChange) >= r.quiet && (!published || observed >= generation) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %d: %s %s did not converge within %v (observedGeneration %d, want %d; objects last changed %v ago): %s",
				step, r.cr.Kind, name, r.convergeTimeout, observed, generation, time.Since(lastChange).Round(time.Second), r.alarm)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("step %d: %v", step, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// fingerprint is every watched object's resource and resourceVersion.
func (r *{{.Type}}) fingerprint(ctx context.Context) (string, error) {
	var keys []string
	for _, gvr := range r.watched {
		l, err := r.client.Resource(gvr).Namespace(r.namespace).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("list %s: %w", gvr, err)
		}
		for _, o := range l.Items {
			keys = append(keys, gvr.String()+"/"+o.GetName()+"@"+o.GetResourceVersion())
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n"), nil
}

func (r *{{.Type}}) waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	for {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still present after deletion: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// expectField asserts that the object's field at path holds the expected
// value (JSON).
func (r *{{.Type}}) expectField(ctx context.Context, t *testing.T, group, version, kind string, namespaced bool, name string, path []any, expected string) {
	t.Helper()
	var want any
	if err := json.Unmarshal([]byte(expected), &want); err != nil {
		t.Fatalf("decode the expected value %s: %v", expected, err)
	}
	m, err := r.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, version)
	if err != nil {
		t.Errorf("find the resource of %s %s: %v (%s)", kind, name, err, r.alarm)
		return
	}
	var ri dynamic.ResourceInterface = r.client.Resource(m.Resource)
	if namespaced {
		ri = r.client.Resource(m.Resource).Namespace(r.namespace)
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("get %s %s: %v; want %s at %s (%s)", kind, name, err, expected, r.pathString(path), r.alarm)
		return
	}
	got, ok := r.lookup(obj.Object, path)
	if !ok {
		t.Errorf("%s %s: %s is absent, want %s (%s)", kind, name, r.pathString(path), expected, r.alarm)
		return
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("encode %s %s %s: %v", kind, name, r.pathString(path), err)
	}
	var gotNorm any
	if err := json.Unmarshal(gotJSON, &gotNorm); err != nil {
		t.Fatalf("decode %s %s %s: %v", kind, name, r.pathString(path), err)
	}
	if !reflect.DeepEqual(gotNorm, want) {
		t.Errorf("%s %s: %s = %s, want %s (%s)", kind, name, r.pathString(path), gotJSON, expected, r.alarm)
	}
}

// lookup follows path: a string is a map key, an int a list index, a
// [2]string{key, value} the list element whose field key equals value.
func (r *{{.Type}}) lookup(v any, path []any) (any, bool) {
	for _, seg := range path {
		switch s := seg.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[s]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || s < 0 || s >= len(l) {
				return nil, false
			}
			v = l[s]
		case [2]string:
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, e := range l {
				if m, ok := e.(map[string]any); ok && fmt.Sprint(m[s[0]]) == s[1] {
					v, found = e, true
					break
				}
			}
			if !found {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return v, true
}

func (r *{{.Type}}) pathString(path []any) string {
	var b strings.Builder
	for i, seg := range path {
		switch s := seg.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case [2]string:
			fmt.Fprintf(&b, "[%s=%s]", s[0], s[1])
		default:
			if i > 0 {
				b.WriteString(".")
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// expectHealthy asserts that every pod in the namespace is Running and Ready
// (or Succeeded) and that no container restarted.
func (r *{{.Type}}) expectHealthy(ctx context.Context, t *testing.T) {
	t.Helper()
	pods, err := r.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(r.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods in %s: %v", r.namespace, err)
	}
	for _, p := range pods.Items {
		if p.GetDeletionTimestamp() != nil {
			continue
		}
		phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		if phase == "Succeeded" {
			continue
		}
		ready := false
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				ready = true
			}
		}
		if phase != "Running" || !ready {
			t.Errorf("pod %s is %s (ready: %v), want Running and Ready (%s)", p.GetName(), phase, ready, r.alarm)
		}
		for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
			statuses, _, _ := unstructured.NestedSlice(p.Object, "status", field)
			for _, c := range statuses {
				m, ok := c.(map[string]any)
				if !ok {
					continue
				}
				if n, ok := m["restartCount"].(int64); ok && n > 0 {
					t.Errorf("pod %s container %v restarted %d time(s), want none (%s)", p.GetName(), m["name"], n, r.alarm)
				}
			}
		}
	}
}
{{- if .Kills}}

// {{.Type}}Kill is a pod the test deleted: its name and UID, and its
// controller with how many of the controller's pods were ready before.
type {{.Type}}Kill struct {
	name        string
	uid         string
	owner       *metav1.OwnerReference
	readyBefore int
}

// pods is the client for the pods of the test's namespace.
func (r *{{.Type}}) pods() dynamic.ResourceInterface {
	return r.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(r.namespace)
}

// killPods deletes the named pods with grace period 0, as the recorded run's
// pod-kill fault did, once each exists (waiting for it at most the
// convergence timeout).
func (r *{{.Type}}) killPods(ctx context.Context, t *testing.T, step int, names []string) []{{.Type}}Kill {
	t.Helper()
	pods := r.pods()
	var out []{{.Type}}Kill
	for _, name := range names {
		p := r.existingPod(ctx, t, step, name)
		k := {{.Type}}Kill{name: name, uid: string(p.GetUID()), owner: metav1.GetControllerOf(p)}
		if k.owner != nil {
			n, err := r.readyOwned(ctx, k.owner.UID)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			k.readyBefore = n
		} else {
			t.Logf("step %d: pod %s has no controller: nothing recreates it, so the test will not wait for it", step, name)
		}
		zero, uid := int64(0), p.GetUID()
		err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("step %d: delete pod %s with grace period 0 (the recorded run's pod-kill fault): %v", step, name, err)
		}
		t.Logf("step %d: pod-kill fault: deleted pod %s with grace period 0", step, name)
		out = append(out, k)
	}
	return out
}

// existingPod returns the named pod once it exists and is not being deleted.
func (r *{{.Type}}) existingPod(ctx context.Context, t *testing.T, step int, name string) *unstructured.Unstructured {
	t.Helper()
	pods := r.pods()
	deadline := time.Now().Add(r.convergeTimeout)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && p.GetDeletionTimestamp() == nil:
			return p
		case err != nil && !apierrors.IsNotFound(err):
			t.Fatalf("step %d: get pod %s to inject the pod-kill fault: %v", step, name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %d: pod %s, which the recorded run's pod-kill fault hit, is not running in namespace %s after %v: the reproducer's fault does not match this system's pods; replay it with gauntlet reproduce (%s)",
				step, name, r.namespace, r.convergeTimeout, r.alarm)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("step %d: waiting for pod %s: %v", step, name, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// waitReplaced returns once every killed pod has been replaced: recreated
// under its name and Running and Ready, or, when it does not come back under
// its name, once its controller has as many pods Running and Ready as it
// wants (spec.replicas, else as many as before the kill). A pod without a
// controller is not waited for.
func (r *{{.Type}}) waitReplaced(ctx context.Context, t *testing.T, step int, killed []{{.Type}}Kill) {
	t.Helper()
	if len(killed) == 0 {
		return
	}
	deadline := time.Now().Add(r.convergeTimeout)
	for {
		var pending []string
		for _, k := range killed {
			if why := r.replaced(ctx, k); why != "" {
				pending = append(pending, "pod "+k.name+" "+why)
			}
		}
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %d: %v after the pod-kill fault: %s (%s)", step, r.convergeTimeout, strings.Join(pending, "; "), r.alarm)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("step %d: waiting for the killed pods to be replaced: %v (%s)", step, ctx.Err(), strings.Join(pending, "; "))
		case <-time.After(time.Second):
		}
	}
}

// replaced says what a killed pod still lacks to count as replaced ("" once it is).
func (r *{{.Type}}) replaced(ctx context.Context, k {{.Type}}Kill) string {
	p, err := r.pods().Get(ctx, k.name, metav1.GetOptions{})
	switch {
	case err == nil && string(p.GetUID()) == k.uid:
		return "is still terminating"
	case err == nil && p.GetDeletionTimestamp() != nil:
		return "was recreated but its replacement is terminating"
	case err == nil:
		if phase, ready := r.podState(p); phase != "Running" || !ready {
			return fmt.Sprintf("was recreated but is %s (ready: %v), not Running and Ready", phase, ready)
		}
		return ""
	case !apierrors.IsNotFound(err):
		return "could not be read: " + err.Error()
	case k.owner == nil:
		return ""
	}
	want, err := r.wantedReplicas(ctx, k.owner)
	if err != nil {
		return "is gone and its controller could not be read: " + err.Error()
	}
	if want < 0 {
		want = k.readyBefore
	}
	ready, err := r.readyOwned(ctx, k.owner.UID)
	if err != nil {
		return "is gone and its controller's pods could not be listed: " + err.Error()
	}
	if ready < want {
		return fmt.Sprintf("is not recreated: its controller %s %s has %d of %d pods Running and Ready", k.owner.Kind, k.owner.Name, ready, want)
	}
	return ""
}

// wantedReplicas is the controller's spec.replicas: 0 when the controller is
// gone, -1 when it has no such field.
func (r *{{.Type}}) wantedReplicas(ctx context.Context, ref *metav1.OwnerReference) (int, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return 0, fmt.Errorf("controller %s %s: %w", ref.Kind, ref.Name, err)
	}
	m, err := r.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return 0, fmt.Errorf("find the resource of %s %s: %w", ref.Kind, ref.Name, err)
	}
	obj, err := r.client.Resource(m.Resource).Namespace(r.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && obj.GetUID() != ref.UID) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get %s %s: %w", ref.Kind, ref.Name, err)
	}
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found {
		return -1, nil
	}
	return int(n), nil
}

// readyOwned counts the Running and Ready pods the controller owns.
func (r *{{.Type}}) readyOwned(ctx context.Context, owner types.UID) (int, error) {
	l, err := r.pods().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list pods in %s: %w", r.namespace, err)
	}
	n := 0
	for i := range l.Items {
		p := &l.Items[i]
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != owner || p.GetDeletionTimestamp() != nil {
			continue
		}
		if phase, ready := r.podState(p); phase == "Running" && ready {
			n++
		}
	}
	return n, nil
}

// podState is the pod's phase and whether its Ready condition is True.
func (r *{{.Type}}) podState(p *unstructured.Unstructured) (string, bool) {
	phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return phase, true
		}
	}
	return phase, false
}

// settle waits, after a fault, for the CR's current generation to be observed
// and the namespace's objects to stop changing again.
func (r *{{.Type}}) settle(ctx context.Context, t *testing.T, step int, desired string) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(desired), &obj); err != nil {
		t.Fatalf("step %d: decode the desired state: %v", step, err)
	}
	name := (&unstructured.Unstructured{Object: obj}).GetName()
	crs := r.crClient(t)
	cr, err := crs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("step %d: get %s %s after the fault: %v (%s)", step, r.cr.Kind, name, err, r.alarm)
	}
	r.waitConverged(ctx, t, step, crs, name, cr.GetGeneration())
}
{{- end}}
`
