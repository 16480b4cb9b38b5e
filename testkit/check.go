package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gauntlet-dev/gauntlet/reports"
)

// check judges the converged system against the assertion and returns one
// line per violation (none: the invariant holds). err is for a check that
// could not be made at all (the API server failing).
func (rp *replayer) check(ctx context.Context, a reports.Assertion) ([]string, error) {
	var out []string
	for _, f := range a.Fields {
		v, err := rp.checkField(ctx, f)
		if err != nil {
			return nil, err
		}
		if v != "" {
			out = append(out, v)
		}
	}
	if a.Health {
		pods, err := rp.pods().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods in %s: %w", rp.namespace, err)
		}
		for _, p := range pods.Items {
			out = append(out, podProblems(p.Object)...)
		}
	}
	return out, nil
}

// checkField reads the object a field assertion names (in the replay's
// namespace when it is namespaced) and compares the field with the expected
// value; a missing object or field is a violation.
func (rp *replayer) checkField(ctx context.Context, f reports.FieldAssertion) (string, error) {
	k := f.Object
	what := k.Kind + " " + k.Name
	m, err := rp.mapping(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	if err != nil {
		return fmt.Sprintf("%s: the cluster serves no such kind (%v); want %s at %s", what, err, f.Expected, f.Path), nil
	}
	var ri dynamic.ResourceInterface = rp.client.Resource(m.Resource)
	if k.Namespace != "" {
		ri = rp.client.Resource(m.Resource).Namespace(rp.namespace)
	}
	obj, err := ri.Get(ctx, k.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("%s does not exist; want %s at %s", what, f.Expected, f.Path), nil
	case err != nil:
		return "", fmt.Errorf("get %s: %w", what, err)
	}
	return fieldViolation(what, obj.Object, f)
}

// fieldViolation compares the field f names in obj with its expected value:
// "" when they are equal as JSON values, else what differs.
func fieldViolation(what string, obj map[string]any, f reports.FieldAssertion) (string, error) {
	got, ok := Lookup(obj, f.Segments)
	if !ok {
		return fmt.Sprintf("%s: %s is absent, want %s", what, FormatPath(f.Segments), f.Expected), nil
	}
	eq, gotJSON, err := EqualJSON(got, f.Expected)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, FormatPath(f.Segments), err)
	}
	if eq {
		return "", nil
	}
	return fmt.Sprintf("%s: %s = %s, want %s", what, FormatPath(f.Segments), gotJSON, f.Expected), nil
}

// EqualJSON reports whether got, encoded as JSON, is the same JSON value as
// want (numbers compared by their text after a round trip, so 3 from the API
// server equals 3 from the reproducer); gotJSON is got's encoding.
func EqualJSON(got any, want json.RawMessage) (equal bool, gotJSON string, err error) {
	b, err := json.Marshal(got)
	if err != nil {
		return false, "", fmt.Errorf("encode the value found: %w", err)
	}
	g, err := decodeJSON(b)
	if err != nil {
		return false, string(b), err
	}
	w, err := decodeJSON(want)
	if err != nil {
		return false, string(b), fmt.Errorf("the expected value: %w", err)
	}
	return reflect.DeepEqual(normalizeNumbers(g), normalizeNumbers(w)), string(b), nil
}

// normalizeNumbers rewrites json.Number leaves into one canonical text, so
// 3, 3.0 and 3e0 compare equal.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	}
	return v
}

// Lookup follows a path as reports.ParsePath splits it: a string is a map
// key, an int a list index, a reports.PathSelector the list element whose
// field Key prints as Value.
func Lookup(v any, path []any) (any, bool) {
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
		case reports.PathSelector:
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, e := range l {
				if m, ok := e.(map[string]any); ok && m[s.Key] != nil && fmt.Sprint(m[s.Key]) == s.Value {
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

// FormatPath writes a parsed path back: keys joined with ".", list indexes
// and selectors in brackets, keys that are not plain names quoted.
func FormatPath(path []any) string {
	var b strings.Builder
	for i, seg := range path {
		switch s := seg.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case reports.PathSelector:
			fmt.Fprintf(&b, "[%s=%s]", s.Key, s.Value)
		case string:
			if s == "" || strings.ContainsAny(s, ".[]\"' ") {
				fmt.Fprintf(&b, "[%q]", s)
				continue
			}
			if i > 0 {
				b.WriteString(".")
			}
			b.WriteString(s)
		default:
			fmt.Fprintf(&b, "[%v]", s)
		}
	}
	return b.String()
}

// podState is a pod's phase and whether its Ready condition is True.
func podState(pod map[string]any) (string, bool) {
	phase, _, _ := unstructured.NestedString(pod, "status", "phase")
	conds, _, _ := unstructured.NestedSlice(pod, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return phase, true
		}
	}
	return phase, false
}

// podProblems is what keeps a pod from being healthy: not Running and Ready
// (a Succeeded pod is fine; one being deleted is ignored), or a container
// that restarted.
func podProblems(pod map[string]any) []string {
	u := unstructured.Unstructured{Object: pod}
	if u.GetDeletionTimestamp() != nil {
		return nil
	}
	phase, ready := podState(pod)
	if phase == "Succeeded" {
		return nil
	}
	var out []string
	if phase != "Running" || !ready {
		out = append(out, fmt.Sprintf("pod %s is %s (ready: %v), want Running and Ready", u.GetName(), phase, ready))
	}
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		statuses, _, _ := unstructured.NestedSlice(pod, "status", field)
		for _, c := range statuses {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if n, ok := restarts(m["restartCount"]); ok && n > 0 {
				out = append(out, fmt.Sprintf("pod %s container %v restarted %d time(s), want none", u.GetName(), m["name"], n))
			}
		}
	}
	return out
}

// restarts reads a restartCount however it was decoded.
func restarts(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
