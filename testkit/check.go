package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/readiness"
	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// checker reads what a replay reached in its namespace and judges it.
type checker struct {
	client    dynamic.Interface
	mapper    meta.RESTMapper
	namespace string
	crd       replay.CRDRef
	// poll is the interval of the waits for deletions (1 s; tests shorten it).
	poll time.Duration
}

// newChecker connects to the cluster cfg reaches.
func newChecker(cfg *rest.Config, r Reproducer) (*checker, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &checker{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		namespace: r.Namespace, crd: r.CRD, poll: time.Second}, nil
}

// mapping resolves a kind to its resource, refreshing discovery once on a miss.
func (c *checker) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) {
		if rs, ok := c.mapper.(meta.ResettableRESTMapper); ok {
			rs.Reset()
			m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	return m, err
}

func (c *checker) pods() dynamic.ResourceInterface {
	return c.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(c.namespace)
}

func (c *checker) namespaces() dynamic.ResourceInterface {
	return c.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
}

// namespaceExists reports whether the replay's namespace exists.
func (c *checker) namespaceExists(ctx context.Context) (bool, error) {
	_, err := c.namespaces().Get(ctx, c.namespace, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("get namespace %s: %w", c.namespace, err)
}

// deleteNamespace deletes the namespace and waits, for at most timeout, until it is gone.
func (c *checker) deleteNamespace(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.namespaces().Delete(ctx, c.namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", c.namespace, err)
	}
	if err := c.waitGone(ctx, c.namespaces(), c.namespace); err != nil {
		return fmt.Errorf("namespace %s: %w", c.namespace, err)
	}
	return nil
}

// deleteCR deletes the custom resource name and waits, for at most timeout, until it is gone.
func (c *checker) deleteCR(ctx context.Context, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := c.mapping(schema.GroupVersionKind{Group: c.crd.Group, Version: c.crd.Version, Kind: c.crd.Kind})
	if err != nil {
		return fmt.Errorf("find the resource of %s (is its CRD installed?): %w", c.crd.Kind, err)
	}
	crs := c.client.Resource(m.Resource).Namespace(c.namespace)
	if err := crs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", c.crd.Kind, name, err)
	}
	if err := c.waitGone(ctx, crs, name); err != nil {
		return fmt.Errorf("%s %s: %w", c.crd.Kind, name, err)
	}
	return nil
}

func (c *checker) waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	for {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		t := time.NewTimer(c.poll / 2)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("still present after deletion: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// check judges the converged system against the assertion and returns one
// line per violation (none: the invariant holds). err is for a check that
// could not be made at all (the API server failing).
func (c *checker) check(ctx context.Context, a reports.Assertion) ([]string, error) {
	var out []string
	for _, vc := range a.Values {
		var seen []string
		reflected := false
		for _, f := range vc.Fields {
			obj, what, err := c.fieldObject(ctx, f)
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
		pods, err := c.pods().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods in %s: %w", c.namespace, err)
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
func (c *checker) fieldObject(ctx context.Context, f reports.FieldRef) (map[string]any, string, error) {
	k := f.Object
	what := k.Kind + " " + k.Name + " " + f.Path
	m, err := c.mapping(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	if err != nil {
		return nil, what + ": the cluster serves no such kind (" + err.Error() + ")", nil
	}
	var ri dynamic.ResourceInterface = c.client.Resource(m.Resource)
	if k.Namespace != "" {
		ri = c.client.Resource(m.Resource).Namespace(c.namespace)
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
			if n, ok := jsonv.AsInt(m["restartCount"]); ok && n > 0 {
				out = append(out, fmt.Sprintf("pod %s container %v restarted %d time(s), want none", u.GetName(), m["name"], n))
			}
		}
	}
	return out
}
