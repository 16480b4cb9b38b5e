package oracles

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// NameStaleView is the stale-view oracle's name.
const NameStaleView = "stale-view"

// StaleView judges the deletes the operator made while its view of the API
// server lagged (a stale-read fault held during the step): a delete the fresh
// view would not have made shows in the converged state as the same object
// back again, unchanged (re-created: the delete achieved nothing), or still
// there, terminating (a finalizer holds it: something still uses it, such as
// a claim a running pod mounts). Objects that another controller re-creates
// (a pod of a StatefulSet: a delete is how it is restarted) are not judged.
// It reads only the transition.
type StaleView struct{}

// Name implements Oracle.
func (StaleView) Name() string { return NameStaleView }

// Check implements Oracle.
func (StaleView) Check(_ context.Context, t *model.Transition) []model.Finding {
	v := t.OperatorView
	if v == nil || t.Curr == nil || !slices.Contains(v.Faults, model.FaultStaleRead) {
		return nil
	}
	crKind := ""
	if cr := t.Curr.Objects[t.Curr.CR]; cr != nil {
		crKind, _ = cr["kind"].(string)
	}
	var out []model.Finding
	seen := map[string]bool{}
	for _, w := range v.Writes {
		if w.Verb != "delete" || w.Subresource != "" || w.Name == "" {
			continue
		}
		key, cur := findWritten(t.Curr, w)
		if cur == nil || seen[key] {
			continue
		}
		if owner := controllerKind(cur); owner != "" && owner != crKind {
			continue
		}
		var why string
		switch {
		case jsonv.At(cur, "metadata", "deletionTimestamp") != nil:
			why = "it is still there, terminating: something still uses it"
		case t.Prev != nil && sameContent(t.Prev.Objects[key], cur):
			why = "the converged state holds it again, unchanged: the delete achieved nothing"
		default:
			continue
		}
		seen[key] = true
		out = append(out, model.Finding{Oracle: NameStaleView, Severity: model.SeverityError,
			Signature: model.Signature(NameStaleView, "delete", w.Group, w.Resource),
			Summary:   fmt.Sprintf("the operator deleted %s %s/%s while its view lagged (stale-read) and %s", w.Resource, w.Namespace, w.Name, why),
			Evidence:  []model.Evidence{{Object: key, Path: "metadata", Expected: "not deleted (the fresh state still needs it)", Actual: "deleted at " + w.Time.UTC().Format("15:04:05.000")}}})
	}
	return out
}

// findWritten is the object of the converged state a write named: same
// namespace and name, a kind whose plural is the write's resource, same group.
func findWritten(s *model.Snapshot, w model.ViewWrite) (string, model.Object) {
	keys := make([]string, 0, len(s.Objects))
	for k := range s.Objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := s.Objects[k]
		kind, _ := o["kind"].(string)
		api, _ := o["apiVersion"].(string)
		group, _, found := strings.Cut(api, "/")
		if !found {
			group = ""
		}
		ns, _ := jsonv.At(o, "metadata", "namespace").(string)
		name, _ := jsonv.At(o, "metadata", "name").(string)
		if name == w.Name && ns == w.Namespace && group == w.Group && resourceOf(kind) == w.Resource {
			return k, o
		}
	}
	return "", nil
}

// resourceOf is a kind's resource name as the API server forms it for the
// common kinds (lower case, "s" added, "y" to "ies", "s" to "ses").
func resourceOf(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"):
		return k + "es"
	case strings.HasSuffix(k, "y") && !strings.HasSuffix(k, "ay") && !strings.HasSuffix(k, "ey"):
		return strings.TrimSuffix(k, "y") + "ies"
	}
	return k + "s"
}

// controllerKind is the kind of the object's controlling owner ("" if none).
func controllerKind(o model.Object) string {
	refs, _ := jsonv.At(o, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		m, _ := r.(map[string]any)
		if c, _ := m["controller"].(bool); c {
			k, _ := m["kind"].(string)
			return k
		}
	}
	return ""
}

// sameContent reports whether two versions of an object agree on everything
// but metadata and status.
func sameContent(a, b model.Object) bool {
	if a == nil || b == nil {
		return false
	}
	strip := func(o model.Object) map[string]any {
		out := map[string]any{}
		for k, v := range o {
			if k != "metadata" && k != "status" {
				out[k] = v
			}
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}
