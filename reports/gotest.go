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
// the violated invariant:
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
}

type goStep struct {
	Recreate bool
	Desired  []string // quoted lines, joined with +
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
func TestReproduce{{.Ident}}(t *testing.T) {
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
	}{
		{{- range .Steps}}
		{
			recreate: {{.Recreate}},
			desired: {{range $i, $l := .Desired}}{{if $i}} +
				{{end}}{{$l}}{{end}},
		},
		{{- end}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(steps)+2)*r.convergeTimeout)
	defer cancel()
	r.connect(ctx, t, kubeconfig)
	for i, s := range steps {
		r.declare(ctx, t, i, s.desired, s.recreate)
	}

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
`
