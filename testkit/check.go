package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/readiness"
	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// check judges the converged system against the assertion and returns one
// line per violation (none: the invariant holds). err is for a check that
// could not be made at all (the API server failing).
func (rp *replayer) check(ctx context.Context, a reports.Assertion) ([]string, error) {
	var out []string
	for _, vc := range a.Values {
		var seen []string
		reflected := false
		for _, f := range vc.Fields {
			obj, what, err := rp.fieldObject(ctx, f)
			if err != nil {
				return nil, err
			}
			if obj == nil {
				seen = append(seen, what)
				continue
			}
			ok, found, err := reflects(obj, f, vc)
			if err != nil {
				return nil, err
			}
			if ok {
				reflected = true
				break
			}
			seen = append(seen, what+" "+found)
		}
		if !reflected {
			out = append(out, fmt.Sprintf("%s is reflected by none of the fields the alarm names: %s",
				desiredValue(vc), strings.Join(seen, "; ")))
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

// desiredValue names a value check's desired value: `spec.x = 3`, or "the
// desired value 3" when the evidence named no property.
func desiredValue(vc reports.ValueCheck) string {
	if vc.Property == "" {
		return "the desired value " + string(vc.Expected)
	}
	return vc.Property + " = " + string(vc.Expected)
}

// fieldObject reads the object a field reference names (in the replay's
// namespace when it is namespaced) and says which field it is. A missing
// object is nil, with what names it; err is for the API server failing.
func (rp *replayer) fieldObject(ctx context.Context, f reports.FieldRef) (map[string]any, string, error) {
	k := f.Object
	what := k.Kind + " " + k.Name + " " + f.Path
	m, err := rp.mapping(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	if err != nil {
		return nil, what + ": the cluster serves no such kind (" + err.Error() + ")", nil
	}
	var ri dynamic.ResourceInterface = rp.client.Resource(m.Resource)
	if k.Namespace != "" {
		ri = rp.client.Resource(m.Resource).Namespace(rp.namespace)
	}
	obj, err := ri.Get(ctx, k.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, what + ": " + k.Kind + " " + k.Name + " does not exist", nil
	case err != nil:
		return nil, "", fmt.Errorf("get %s %s: %w", k.Kind, k.Name, err)
	}
	if k.Group == "" {
		// The campaign's snapshots carry the decoded certificates and keys of
		// Secrets and ConfigMaps; evidence may name their fields.
		var certs x509view.Decoder
		certs.AddView(k.Kind, obj.Object)
	}
	return obj.Object, what, nil
}

// reflects judges one field of obj against a value check as the consistency
// oracle does (oracles.Reflects); found says what the field holds instead,
// for the message.
func reflects(obj map[string]any, f reports.FieldRef, vc reports.ValueCheck) (ok bool, found string, err error) {
	got, present := Lookup(obj, f.Segments)
	if !present {
		return false, "is absent", nil
	}
	var want any
	if err := utiljson.Unmarshal(vc.Expected, &want); err != nil {
		return false, "", fmt.Errorf("the expected value %s: %w", vc.Expected, err)
	}
	if oracles.Reflects(want, vc.Key, got) {
		return true, "", nil
	}
	if v, isText := oracles.TextValue(got, vc.Key); isText {
		return false, fmt.Sprintf("sets %s to %q", vc.Key, v), nil
	}
	b, err := json.Marshal(got)
	if err != nil {
		return false, "", fmt.Errorf("encode %s: %w", f.Path, err)
	}
	return false, "holds " + shorten(string(b), 200), nil
}

// shorten cuts s to about n bytes (on a rune boundary), marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Lookup follows a path as reports.ParsePath splits it: a string is a map
// key, an int a list index, a reports.PathSelector the list element whose
// field Key prints as Value (jsonv.GetPath).
func Lookup(v any, path []any) (any, bool) {
	p, ok := toPath(path)
	if !ok {
		return nil, false
	}
	return jsonv.GetPath(v, p)
}

// FormatPath writes a parsed path back in jsonv's dotted form (the one
// reports.ParsePath reads): keys joined with ".", list indexes and selectors in
// brackets, keys that are not plain names quoted.
func FormatPath(path []any) string {
	p, _ := toPath(path)
	return p.String()
}

// toPath converts reports.ParsePath's segments to a jsonv.Path; ok is false
// when a segment is of another type (it becomes a key of its printed value).
func toPath(path []any) (p jsonv.Path, ok bool) {
	ok = true
	p = make(jsonv.Path, 0, len(path))
	for _, seg := range path {
		switch s := seg.(type) {
		case int:
			if s < 0 {
				ok = false
			}
			p = append(p, jsonv.Segment{Kind: jsonv.SegIndex, Index: s})
		case reports.PathSelector:
			p = append(p, jsonv.Segment{Kind: jsonv.SegSelect, Key: s.Key, Value: s.Value})
		case string:
			p = append(p, jsonv.Segment{Kind: jsonv.SegKey, Key: s})
		default:
			ok = false
			p = append(p, jsonv.Segment{Kind: jsonv.SegKey, Key: fmt.Sprint(s)})
		}
	}
	return p, ok
}

// podProblems is what keeps a pod from being healthy: not Running and Ready
// (a Succeeded pod is fine; one being deleted is ignored), or a container
// that restarted.
func podProblems(pod map[string]any) []string {
	u := unstructured.Unstructured{Object: pod}
	if u.GetDeletionTimestamp() != nil {
		return nil
	}
	var out []string
	for _, p := range readiness.Check("", "Pod", pod) {
		out = append(out, fmt.Sprintf("pod %s is not ready (%s), want Running and Ready", u.GetName(), p.Detail))
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
