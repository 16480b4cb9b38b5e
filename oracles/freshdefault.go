package oracles

import (
	"context"
	"reflect"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Details of the evidence a consistency finding on a removed property carries:
// the property's own line, and the fields still holding its previous value
// (the whole field, or one configuration line in it).
const (
	desiredDetail = "desired "
	mappedDetail  = "; mapped to "
	removedDetail = "removed; previously "
	// The endings of a consistency finding's summary on a value set that
	// shows nowhere — no field holding another value in its place.
	noFieldReflects = " but no field of the state reflects it"
	noObjectChanged = " but no object of the state changed"
	stillDetail     = "still reflects the removed value"
	stillLineDetail = "this field still sets "
)

// IsRemoval reports whether f is a consistency finding on a removed property:
// its previous value still in effect in named fields, or (a flag) no object
// changed at all — the findings a fresh creation of the same desired state can
// answer (RemovalDefaulted).
func IsRemoval(f model.Finding) bool {
	return f.Oracle == NameConsistency && len(f.Evidence) > 0 && strings.HasPrefix(f.Evidence[0].Detail, removedDetail)
}

// stillFields are the evidence entries of a removal finding that name a field
// still holding the removed value (not the closest fields by name a flag's
// finding lists).
func stillFields(f model.Finding) []model.Evidence {
	var out []model.Evidence
	for _, ev := range f.Evidence[1:] {
		if ev.Object != "" && ev.Path != "" && (ev.Detail == stillDetail || strings.HasPrefix(ev.Detail, stillLineDetail)) {
			out = append(out, ev)
		}
	}
	return out
}

// RemovalDefaulted reports whether a removal finding (IsRemoval) is answered
// by fresh, a fresh creation of t.Desired rebased onto the namespace of
// t.Curr. When the finding names fields still holding the removed value, each
// must hold that same value in fresh; when it names none (a flag whose removal
// changed no object), fresh must equal t.Curr as the differential oracle
// compares them (after t.Masks and cfg's masks). Either way the state kept is
// what the operator gives this desired state without the property — its
// default, which a seed that set the property explicitly hid from the
// baseline comparison — and not a leftover of history. A field the fresh
// creation lacks or holds differently, or any difference, keeps the finding.
func RemovalDefaulted(ctx context.Context, cfg Config, f model.Finding, t *model.Transition, fresh *model.Snapshot) bool {
	if fresh == nil || t == nil || t.Curr == nil || !IsRemoval(f) {
		return false
	}
	fields := stillFields(f)
	if len(fields) == 0 {
		return CreationAgrees(ctx, cfg, t, fresh)
	}
	for _, ev := range fields {
		if !freshHolds(fresh, ev) {
			return false
		}
	}
	return true
}

// freshHolds reports whether fresh holds ev's value at ev's path: in the
// object ev names or, when fresh has no object of that name, in an object of
// the same kind — a state reached through history can keep the value in an
// object an earlier desired state named (cert-manager leaves the Secret of a
// previous secretName in place), which the fresh creation makes under the
// current name.
func freshHolds(fresh *model.Snapshot, ev model.Evidence) bool {
	p, err := jsonv.ParsePath(ev.Path)
	if err != nil {
		return false
	}
	holds := func(obj model.Object) bool {
		v, ok := jsonv.GetPath(map[string]any(obj), p)
		if !ok {
			return false
		}
		if key, line := strings.CutPrefix(ev.Detail, stillLineDetail); line {
			lv, found := textValue(v, key)
			return found && lv == ev.Actual
		}
		return sameValue(v, ev.Actual)
	}
	if obj, ok := fresh.Objects[ev.Object]; ok {
		return holds(obj)
	}
	k, ok := model.ParseObjectKey(ev.Object)
	if !ok {
		return false
	}
	for key, obj := range fresh.Objects {
		if other, parsed := model.ParseObjectKey(key); parsed && other.Kind == k.Kind && other.Group == k.Group && holds(obj) {
			return true
		}
	}
	return false
}

// IsUnreflected reports whether f is a consistency finding on a property set
// to a value that shows nowhere in the state — no field reflects it, or (a
// flag) no object changed — judged by name. Not a removal, not a property the
// target mapped to a field itself (a declared mapping is the user's word on
// where the value must show), and not a value overruled: a field that holds
// another value in its place (seeded bug 04 rewriting the user's
// maxmemory-policy) is the operator acting against the desired state, on a
// fresh creation too.
func IsUnreflected(f model.Finding) bool {
	if f.Oracle != NameConsistency || len(f.Evidence) == 0 {
		return false
	}
	d := f.Evidence[0].Detail
	return strings.HasPrefix(d, desiredDetail) && !strings.Contains(d, mappedDetail) &&
		(strings.HasSuffix(f.Summary, noFieldReflects) || strings.HasSuffix(f.Summary, noObjectChanged)) &&
		!podPassThrough(f.Evidence[0].Path)
}

// podPassThrough reports whether a property's path names a field of a pod's spec or of a container by its (non-generic) JSON
// name — `nodeSelector`, `tolerations`, `securityContext`, `volumes`: a value
// the operator is to pass to its pods, so one that shows nowhere, on a fresh
// creation too, was dropped (seeded bug 10 drops prefixed node selector keys),
// not a setting the operator ignores in this configuration. The names are read
// from client-go's PodSpec and Container.
func podPassThrough(prop string) bool {
	p, err := jsonv.ParsePath(prop)
	if err != nil {
		return false
	}
	names := podFieldNames()
	for _, k := range p.Keys() {
		if names[k] {
			return true
		}
	}
	return false
}

// CreationAgrees reports whether fresh, a fresh creation of t.Desired rebased
// onto the namespace of t.Curr, equals t.Curr as the differential oracle
// compares them (after t.Masks and cfg's masks). When it does, the state the
// transition reached is what the operator makes of this desired state from
// nothing: whatever a state oracle says of it is a property of the desired
// state, not of the way there — an unreflected value is one the operator
// ignores in this configuration on creation as well (a property gated on the
// operand's version, one that acts on objects the campaign never creates, a
// documented fallback), not a transition it failed.
func CreationAgrees(ctx context.Context, cfg Config, t *model.Transition, fresh *model.Snapshot) bool {
	if fresh == nil || t == nil || t.Curr == nil {
		return false
	}
	same := &model.Transition{Step: t.Step, Desired: t.Desired, Curr: t.Curr, Reference: fresh, Masks: t.Masks}
	return ctx.Err() == nil && len(NewDifferential(cfg).Check(ctx, same)) == 0
}

// podFieldNames are the non-generic JSON names of the fields of client-go's
// PodSpec and Container, read once: a fixed property of the API types.
var podFieldNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[corev1.PodSpec](), reflect.TypeFor[corev1.Container]()} {
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && !genericNames[normName(name)] {
				names[name] = true
			}
		}
	}
	return names
})
