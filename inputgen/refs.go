package inputgen

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// In-object references: names that must match another part of the same object. The API server
// rejects a pod whose container mounts a volume the pod does not declare, or whose container claims
// a resource the pod's resourceClaims do not name; a probe naming a port its container does not
// declare never succeeds. The CRD's schema cannot say so, so local validation accepts such states
// and an operator renders pods the API server refuses. References are found through the semantic
// mapping (the core type of the object holding the name) and field names, never per CRD.

// Core types that hold or declare in-object references.
const (
	typeContainer        = "k8s.io/api/core/v1.Container"
	typeEphemeral        = "k8s.io/api/core/v1.EphemeralContainer"
	typeVolumeMount      = "k8s.io/api/core/v1.VolumeMount"
	typeVolumeDevice     = "k8s.io/api/core/v1.VolumeDevice"
	typeVolume           = "k8s.io/api/core/v1.Volume"
	typeResourceClaim    = "k8s.io/api/core/v1.ResourceClaim"
	typePodResourceClaim = "k8s.io/api/core/v1.PodResourceClaim"
	typeContainerPort    = "k8s.io/api/core/v1.ContainerPort"
	typeHTTPGetAction    = "k8s.io/api/core/v1.HTTPGetAction"
	typeTCPSocketAction  = "k8s.io/api/core/v1.TCPSocketAction"
	typePodSpec          = "k8s.io/api/core/v1.PodSpec"
	typePodTemplateSpec  = "k8s.io/api/core/v1.PodTemplateSpec"
	typeStatefulSetSpec  = "k8s.io/api/apps/v1.StatefulSetSpec"
	typeDeploymentSpec   = "k8s.io/api/apps/v1.DeploymentSpec"
)

// refClass is one kind of in-object reference: the objects holding a name, the lists declaring the
// names it may take, and where those lists may sit.
type refClass struct {
	// name identifies the class in keys and test output.
	name string
	// what names the declared thing in messages ("volume of the pod"); undeclared says why
	// nothing can satisfy the reference when the schema has no list declaring such names.
	what       string
	undeclared string
	// holders are the core types of the objects holding the reference; field is its field.
	holders []string
	field   string
	// declTypes are the item types of lists that declare names (in their "name" field);
	// declLists are list names that declare names whatever their mapping, when their items
	// have a "name" field.
	declTypes []string
	declLists []string
	// claimTemplates: a StatefulSet's volumeClaimTemplates declare volumes (metadata.name), on
	// the scope or any object around it.
	claimTemplates bool
	// accept filters declared items (block devices need a claim-backed volume); nil accepts all.
	accept func(item map[string]any) bool
	// direct limits declaring lists to the scope's own fields (a container's ports); otherwise
	// lists inside the scope's nested objects count too (an operator's persistence.extraVolumes).
	direct bool
	// stopAt ends the search for a scope at an object of one of these types (a container
	// without ports does not see another container's).
	stopAt []string
	// declarable: a valid test case may declare a missing name (an emptyDir volume); claims need
	// a ResourceClaim object and ports a listening process, so they are not declared.
	declarable bool
	// unique: names may not repeat within the holder's list.
	unique bool
	// numberField, when set, is the declared items' number a reference the test case did not
	// write may take instead of a name (a container's containerPort).
	numberField string
	// stringsOnly: the field is a reference only when it is int-or-string and holds a string
	// (a named port); plain string fields of a look-alike object are not.
	stringsOnly bool
}

// refClasses lists the in-object reference classes, as data read by the generic code below.
var refClasses = []*refClass{
	{
		name: "volume", what: "volume of the pod",
		undeclared: "the schema declares no volumes next to the mount (the operator creates its own), and the seed and examples mount none of that name",
		holders:    []string{typeVolumeMount}, field: "name",
		declTypes: []string{typeVolume}, declLists: []string{"volumes"}, claimTemplates: true,
		declarable: true,
	},
	{
		name: "device", what: "claim-backed volume of the pod",
		undeclared: "the schema declares no volumes next to the device (the operator creates its own), and the seed and examples use none of that name",
		holders:    []string{typeVolumeDevice}, field: "name",
		declTypes: []string{typeVolume}, declLists: []string{"volumes"}, claimTemplates: true,
		accept: func(item map[string]any) bool {
			_, pvc := item["persistentVolumeClaim"]
			_, eph := item["ephemeral"]
			return pvc || eph
		},
		unique: true,
	},
	{
		name: "claim", what: "resource claim of the pod (pod.spec.resourceClaims)",
		undeclared: "the schema exposes no pod-level resourceClaims, so the API server rejects any claim in the pod the operator renders",
		holders:    []string{typeResourceClaim}, field: "name",
		declTypes: []string{typePodResourceClaim}, declLists: []string{"resourceClaims"},
		unique: true,
	},
	{
		name: "port", what: "port of the container",
		undeclared: "the schema declares no ports for this container (the operator sets them), and the seed and examples name no such port",
		holders:    []string{typeHTTPGetAction, typeTCPSocketAction}, field: "port",
		declTypes: []string{typeContainerPort},
		direct:    true, stopAt: []string{typeContainer, typeEphemeral},
		stringsOnly: true, numberField: "containerPort",
	},
}

// declList is a list property declaring names of a class, relative to a scope object.
type declList struct {
	// rel is the field path from the scope object to the list.
	rel  []string
	list *crd.Property
	// templates is true for volumeClaimTemplates (names in metadata.name).
	templates bool
}

// refSite is one reference found in a state.
type refSite struct {
	class *refClass
	// prop is the property holding the name; toks locate its value.
	prop  *crd.Property
	toks  []jsonv.Token
	value string
	// holder is the object holding the reference, at holderToks; siblings are the values of
	// the same field in the other elements of the holder's list (when the holder is an element).
	holderToks []jsonv.Token
	inList     bool
	siblings   []string
	// scope is the object whose lists declare the names (nil: none in the schema: the operator
	// creates what the reference names); scopeToks locates it, decls are its declaring lists.
	scope     *crd.Property
	scopeToks []jsonv.Token
	decls     []declList
	// declared are the names the state declares in scope.
	declared map[string]bool
}

// ptr returns the site's value pointer.
func (s *refSite) ptr() string { return jsonv.Pointer(s.toks) }

// key identifies the reference's property across states, for names the seed and examples use.
func (s *refSite) key() string { return s.class.name + "\x00" + s.prop.Path.String() }

// describe renders the dangling reference for descriptions and reasons.
func (s *refSite) describe() string {
	where := s.class.undeclared
	if s.scope != nil {
		var lists []string
		for _, d := range s.decls {
			lists = append(lists, d.list.Path.String())
		}
		where = "the object declares no such name in " + strings.Join(lists, ", ")
	}
	return fmt.Sprintf("%s %q names no %s: %s", pathOf(s.toks), s.value, s.class.what, where)
}

// pathOf renders concrete tokens as a dotted path with indices, e.g. spec.containers[0].name.
func pathOf(toks []jsonv.Token) string {
	var b strings.Builder
	for _, t := range toks {
		switch x := t.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", x)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(x)
		}
	}
	return b.String()
}

// refIndex finds the in-object references of one schema. It is safe for concurrent use.
type refIndex struct {
	schema *crd.Schema
	// provided are the names the seed and examples use without declaring them (key: class and
	// property): names of things the operator creates itself.
	provided map[string]map[string]bool
	decls    sync.Map // class name + "\x00" + property path -> []declList
}

// newRefIndex indexes a schema whose semantic mapping is done, learning the names the operator
// provides from the seed and the examples: a name they reference without declaring it.
func newRefIndex(s *crd.Schema, objs ...map[string]any) *refIndex {
	ix := &refIndex{schema: s, provided: map[string]map[string]bool{}}
	for _, o := range objs {
		for _, site := range ix.sites(o) {
			if site.declared[site.value] {
				continue
			}
			m := ix.provided[site.key()]
			if m == nil {
				m = map[string]bool{}
				ix.provided[site.key()] = m
			}
			m[site.value] = true
		}
	}
	return ix
}

// holderClass returns the class of references an object of p's type holds, or nil.
func holderClass(p *crd.Property) *refClass {
	if p == nil || p.Semantic == nil || p.Semantic.Type == "" {
		return nil
	}
	for _, c := range refClasses {
		for _, t := range c.holders {
			if p.Semantic.Type == t {
				return c
			}
		}
	}
	return nil
}

type refFrame struct {
	prop *crd.Property
	obj  map[string]any
	toks []jsonv.Token
}

// sites lists every reference in state (outside status), with the names its scope declares.
func (ix *refIndex) sites(state map[string]any) []*refSite {
	var out []*refSite
	var walk func(p *crd.Property, v any, toks []jsonv.Token, frames []refFrame, inList bool)
	walk = func(p *crd.Property, v any, toks []jsonv.Token, frames []refFrame, inList bool) {
		switch x := v.(type) {
		case map[string]any:
			frames = append(frames[:len(frames):len(frames)], refFrame{prop: p, obj: x, toks: toks})
			if c := holderClass(p); c != nil {
				if site := ix.site(c, p, x, toks, frames, inList); site != nil {
					out = append(out, site)
				}
			}
			for _, k := range jsonv.SortedKeys(x) {
				if len(toks) == 0 && k == "status" {
					continue
				}
				child := stepInto(p, k)
				if child == nil {
					continue
				}
				walk(child, x[k], append(toks[:len(toks):len(toks)], k), frames, false)
			}
		case []any:
			if p.Items == nil {
				return
			}
			for i, e := range x {
				walk(p.Items, e, append(toks[:len(toks):len(toks)], i), frames, true)
			}
		}
	}
	walk(ix.schema.Root, state, nil, nil, false)
	return out
}

// site builds the reference held by obj (of class c), or nil when it holds no name.
func (ix *refIndex) site(c *refClass, p *crd.Property, obj map[string]any, toks []jsonv.Token, frames []refFrame, inList bool) *refSite {
	fp := p.Field(c.field)
	if fp == nil {
		return nil
	}
	raw, ok := obj[c.field]
	if !ok {
		return nil
	}
	name, isStr := raw.(string)
	if !isStr || name == "" || (c.stringsOnly && !fp.IntOrString) {
		// Ports given as numbers are not references; empty names are the schema's business.
		return nil
	}
	s := &refSite{class: c, prop: fp, toks: append(toks[:len(toks):len(toks)], c.field), value: name,
		holderToks: toks, inList: inList, declared: map[string]bool{}}
	// The holder's list: siblings are the other elements' names.
	if inList && len(frames) >= 2 {
		if list, ok := jsonv.Get(frames[len(frames)-2].obj, jsonv.Pointer(toks[len(frames[len(frames)-2].toks):len(toks)-1])); ok {
			if l, ok := list.([]any); ok {
				idx, _ := toks[len(toks)-1].(int)
				for i, e := range l {
					if m, ok := e.(map[string]any); ok && i != idx {
						if n, ok := m[c.field].(string); ok {
							s.siblings = append(s.siblings, n)
						}
					}
				}
			}
		}
	}
	// The nearest enclosing object that declares names of the class is the scope.
	scopeAt := -1
	for i := len(frames) - 2; i >= 0; i-- {
		f := frames[i]
		if d := ix.declarers(c, f.prop); len(d) > 0 {
			scopeAt = i
			s.scope, s.scopeToks, s.decls = f.prop, f.toks, d
			collectDeclared(c, f.obj, d, s.declared)
			break
		}
		if typeIn(f.prop, c.stopAt) {
			break
		}
	}
	if scopeAt >= 0 && c.claimTemplates {
		// A StatefulSet's claim templates around the pod template declare volumes too.
		for i := scopeAt - 1; i >= 0; i-- {
			var tmpl []declList
			for _, d := range ix.declarers(c, frames[i].prop) {
				if d.templates && len(d.rel) == 1 {
					tmpl = append(tmpl, d)
				}
			}
			collectDeclared(c, frames[i].obj, tmpl, s.declared)
		}
	}
	return s
}

func typeIn(p *crd.Property, types []string) bool {
	if p == nil || p.Semantic == nil {
		return false
	}
	for _, t := range types {
		if p.Semantic.Type == t {
			return true
		}
	}
	return false
}

// collectDeclared adds the names the lists d of obj declare.
func collectDeclared(c *refClass, obj map[string]any, ds []declList, into map[string]bool) {
	for _, d := range ds {
		var cur any = obj
		for _, f := range d.rel {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = m[f]
		}
		list, _ := cur.([]any)
		for _, e := range list {
			item, ok := e.(map[string]any)
			if !ok {
				continue
			}
			var name string
			if d.templates {
				md, _ := item["metadata"].(map[string]any)
				name, _ = md["name"].(string)
			} else {
				if c.accept != nil && !c.accept(item) {
					continue
				}
				name, _ = item["name"].(string)
			}
			if name != "" {
				into[name] = true
			}
		}
	}
}

// ownScopes are the core types that are pods or containers of their own: a search for declaring
// lists does not enter them from outside, since what they declare belongs to their own pod (an
// exporter next to a pod template does not mount the template's volumes). In doubt the reference
// is unresolved, and a valid test case becomes a misoperation rather than a pod the API refuses.
var ownScopes = []string{typePodSpec, typePodTemplateSpec, typeStatefulSetSpec, typeDeploymentSpec, typeContainer, typeEphemeral}

// declarers returns the lists of the object p that declare names of class c: its own fields, and
// (unless the class is direct) lists inside its nested objects, neither inside lists nor inside
// objects of ownScopes.
func (ix *refIndex) declarers(c *refClass, p *crd.Property) []declList {
	if p == nil || p.Type != crd.TypeObject {
		return nil
	}
	key := c.name + "\x00" + p.Path.String()
	if v, ok := ix.decls.Load(key); ok {
		return v.([]declList)
	}
	var out []declList
	var visit func(o *crd.Property, rel []string, depth int)
	visit = func(o *crd.Property, rel []string, depth int) {
		for _, f := range o.Fields {
			r := append(rel[:len(rel):len(rel)], f.Name())
			switch {
			case f.Type == crd.TypeArray && f.Items != nil:
				if ok, tmpl := declaring(c, f); ok {
					out = append(out, declList{rel: r, list: f, templates: tmpl})
				}
			case f.Type == crd.TypeObject && !c.direct && depth < 4 && holderClass(f) == nil && !typeIn(f, ownScopes):
				visit(f, r, depth+1)
			}
		}
	}
	visit(p, nil, 0)
	ix.decls.Store(key, out)
	return out
}

// declaring reports whether the list f declares names of class c, and whether it does so as
// volume claim templates.
func declaring(c *refClass, f *crd.Property) (ok, templates bool) {
	it := f.Items
	if typeIn(it, c.declTypes) {
		return it.Field("name") != nil, false
	}
	for _, n := range c.declLists {
		if f.Name() == n && it.Field("name") != nil {
			return true, false
		}
	}
	if c.claimTemplates && f.Name() == "volumeClaimTemplates" {
		if it.Field("metadata") != nil {
			return true, true
		}
	}
	return false, false
}

// allowed reports whether a name is one the reference may take: declared in scope or provided by
// the operator (used so by the seed or the examples).
func (ix *refIndex) allowed(s *refSite, name string) bool {
	return s.declared[name] || ix.provided[s.key()][name]
}

// dangling lists the references of state whose names neither the object declares nor the operator
// provides.
func (ix *refIndex) dangling(state map[string]any) []*refSite {
	var out []*refSite
	for _, s := range ix.sites(state) {
		if !ix.allowed(s, s.value) {
			out = append(out, s)
		}
	}
	return out
}

// refOutcome says what resolveRefs did to a draft.
type refOutcome int

const (
	refsUntouched refOutcome = iota
	// refsRepaired: names were re-pointed, declared or their holders removed.
	refsRepaired
	// refsRelabelled: a reference dangles that no in-object change can satisfy: a misoperation.
	refsRelabelled
)

// resolveRefs makes the references a valid draft introduces resolve in every step: a dangling
// name is re-pointed to one the object declares (or the operator provides), else declared where
// the schema has a list for it, else its holder is dropped when the draft removed what it named;
// otherwise the draft becomes a misoperation whose description names the dangling reference.
// References already dangling in start are left alone; misoperation drafts are not changed. It
// returns what it did and, when it repaired, the draft relabelled instead (a fallback when the
// repaired states fail validation).
func (g *Generator) resolveRefs(p *crd.Property, d *draft, start map[string]any) (refOutcome, *draft) {
	if d.label != Valid {
		return refsUntouched, nil
	}
	before := map[string]string{}
	for _, s := range g.refs.dangling(start) {
		before[s.ptr()] = s.value
	}
	fresh := func(st map[string]any) []*refSite {
		var out []*refSite
		for _, s := range g.refs.dangling(st) {
			if v, ok := before[s.ptr()]; ok && v == s.value {
				continue
			}
			out = append(out, s)
		}
		return out
	}
	var first *refSite
	for _, st := range d.steps {
		if f := fresh(st); len(f) > 0 {
			first = f[0]
			break
		}
	}
	if first == nil {
		return refsUntouched, nil
	}
	relabelled := d.asMisoperation(first.describe())
	r := g.seedFor(p.Path.String(), d.generator+"\x00refs", 0)
	// One decision per reference, so every step resolves it the same way.
	chosen := map[string]any{}
	var notes []string
	steps := make([]map[string]any, len(d.steps))
	for i, orig := range d.steps {
		st := jsonv.CopyMap(orig)
		for n := 0; ; n++ {
			f := fresh(st)
			if len(f) == 0 {
				break
			}
			note, ok := "", false
			if n < 32 {
				note, ok = g.resolveRef(p, st, start, f[0], chosen, r)
			}
			if !ok {
				*d = *relabelled
				return refsRelabelled, nil
			}
			if note != "" && !containsString(notes, note) {
				notes = append(notes, note)
			}
		}
		steps[i] = st
	}
	d.steps = steps
	if len(notes) > 0 {
		d.description += " (" + strings.Join(notes, "; ") + ")"
	}
	return refsRepaired, relabelled
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// resolveRef resolves one dangling reference s in st and describes what it did; false when only a
// misoperation label fits. A name the test case writes itself (the reference is its target) is
// kept and declared where possible, else re-pointed to another declared name; a name it only
// filled in on the way is re-pointed first (a port may become the container's port number), then
// declared. A reference the case left alone whose name it stopped declaring loses its holder.
// chosen remembers each decision, so every step of a draft resolves the reference alike.
func (g *Generator) resolveRef(p *crd.Property, st, start map[string]any, s *refSite, chosen map[string]any, r *rand.Rand) (string, bool) {
	memo := s.ptr() + "\x00" + s.value
	startVal, inStart := jsonv.Get(start, s.ptr())
	target := s.prop == p
	choice, hadPrev := chosen[memo]
	prev, _ := choice.(string)
	if hadPrev && prev != "" && g.refs.allowed(s, prev) {
		if err := jsonv.Set(st, s.ptr(), prev); err == nil {
			return fmt.Sprintf("%s names %s %q, which the object declares", pathOf(s.toks), s.class.name, prev), true
		}
	}
	repoint := func() (string, bool) {
		if hadPrev {
			return "", false
		}
		name, ok := g.pickAllowed(s, target, inStart, startVal, r)
		if !ok {
			return "", false
		}
		if err := jsonv.Set(st, s.ptr(), name); err != nil {
			return "", false
		}
		chosen[memo] = name
		return fmt.Sprintf("%s names %s %q, which the object declares", pathOf(s.toks), s.class.name, name), true
	}
	number := func() (string, bool) {
		// A port filled in on the way to another field need not be a name: a number is no
		// reference.
		if target || s.class.numberField == "" || (hadPrev && prev != "") {
			return "", false
		}
		n, why := g.portNumber(st, start, s, r)
		if num, ok := choice.(int64); ok {
			n, why = num, "as in the previous step"
		}
		if err := jsonv.Set(st, s.ptr(), n); err != nil {
			return "", false
		}
		chosen[memo] = n
		return fmt.Sprintf("%s set to %d (%s) instead of a name no port carries", pathOf(s.toks), n, why), true
	}
	declare := func() (string, bool) {
		// Only where the schema has a list for it, and not in a list the test case changes.
		if !s.class.declarable || s.scope == nil {
			return "", false
		}
		name := s.value
		switch {
		case hadPrev:
			name = prev
		case len(validation.IsDNS1123Label(name)) == 0:
		case target:
			return "", false
		default:
			// A name the case did not write may be replaced by a fresh valid one.
			name = freshName(s, r)
		}
		for _, dl := range s.decls {
			if name == "" || dl.templates || dl.list.Path.HasPrefix(p.Path) || p.Path.HasPrefix(dl.list.Path) {
				continue
			}
			if note, ok := g.declare(st, s, dl, name, r); ok {
				if name != s.value {
					if err := jsonv.Set(st, s.ptr(), name); err != nil {
						return "", false
					}
				}
				chosen[memo] = name
				return note, true
			}
		}
		return "", false
	}
	order := []func() (string, bool){repoint, number, declare}
	if target {
		order = []func() (string, bool){declare, repoint}
	}
	for _, try := range order {
		if note, ok := try(); ok {
			return note, true
		}
	}
	// A reference the test case left alone, whose name it stopped declaring: drop its holder.
	if !target && inStart && startVal == s.value && s.inList && !p.Path.HasPrefix(s.prop.Parent.Path) {
		listToks := s.holderToks[:len(s.holderToks)-1]
		list, _ := jsonv.Get(st, jsonv.Pointer(listToks))
		l, _ := list.([]any)
		listProp := s.prop.Parent.Parent
		idx, _ := s.holderToks[len(s.holderToks)-1].(int)
		if listProp != nil && idx < len(l) && (listProp.MinItems == nil || int64(len(l)) > *listProp.MinItems) {
			nl := append(append([]any{}, l[:idx]...), l[idx+1:]...)
			if err := jsonv.Set(st, jsonv.Pointer(listToks), nl); err == nil {
				return fmt.Sprintf("removing %s, which named %s %q", pathOf(s.holderToks), s.class.name, s.value), true
			}
		}
	}
	return "", false
}

// pickAllowed draws a name the reference may take: declared in scope or provided by the operator,
// not the start value when the test case changes this very name, not a sibling's where names are
// unique, and valid for the property.
func (g *Generator) pickAllowed(s *refSite, target, inStart bool, startVal any, r *rand.Rand) (string, bool) {
	var cands []string
	for n := range s.declared {
		cands = append(cands, n)
	}
	for n := range g.refs.provided[s.key()] {
		if !s.declared[n] {
			cands = append(cands, n)
		}
	}
	sort.Strings(cands)
	var opts []string
	for _, n := range cands {
		if target && inStart && startVal == n {
			continue
		}
		if (s.class.unique || isListKey(s)) && containsString(s.siblings, n) {
			continue
		}
		if !g.fits(s.prop, n) {
			continue
		}
		opts = append(opts, n)
	}
	if len(opts) == 0 {
		return "", false
	}
	return opts[r.IntN(len(opts))], true
}

// freshName returns a new DNS-label name for something a test case declares on its own behalf,
// different from every name the scope declares.
func freshName(s *refSite, r *rand.Rand) string {
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	for {
		b := []byte("gauntlet-" + s.class.name + "-")
		for i := 0; i < 5; i++ {
			b = append(b, alnum[r.IntN(len(alnum))])
		}
		if !s.declared[string(b)] {
			return string(b)
		}
	}
}

// portNumber returns a number for a reference that may be one, and where it comes from: the
// number the start state declared under that very name (the test case removed or renamed the
// declaration, not what listens there), else the first number the scope's declaring lists hold
// in the class's number field (a container's containerPort), else a number the seed or examples
// use for the property, else a random one in the unprivileged range.
func (g *Generator) portNumber(st, start map[string]any, s *refSite, r *rand.Rand) (int64, string) {
	for _, dl := range s.decls {
		toks := append(append([]jsonv.Token{}, s.scopeToks...), stringsToTokens(dl.rel)...)
		v, _ := jsonv.Get(start, jsonv.Pointer(toks))
		list, _ := v.([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if n, ok := jsonv.AsInt(m[s.class.numberField]); ok && m["name"] == s.value && n > 0 && n < 1<<16 {
				return n, fmt.Sprintf("the port %q stood for", s.value)
			}
		}
	}
	for _, dl := range s.decls {
		toks := append(append([]jsonv.Token{}, s.scopeToks...), stringsToTokens(dl.rel)...)
		v, _ := jsonv.Get(st, jsonv.Pointer(toks))
		list, _ := v.([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if n, ok := jsonv.AsInt(m[s.class.numberField]); ok && n > 0 && n < 1<<16 {
				return n, "a port the container declares"
			}
		}
	}
	for _, pv := range g.pool.Values(s.prop.Path.String()) {
		if n, ok := jsonv.AsInt(pv.Value); ok && n > 0 && n < 1<<16 {
			return n, "the port the seed or examples use there"
		}
	}
	return 1024 + r.Int64N(9000), "a generated port"
}

// isListKey reports whether the reference's field is a key of its list-type=map list.
func isListKey(s *refSite) bool {
	if s.prop.Parent == nil || s.prop.Parent.Parent == nil {
		return false
	}
	for _, k := range s.prop.Parent.Parent.ListMapKeys {
		if k == s.prop.Name() {
			return true
		}
	}
	return false
}

// declare appends an element called name to the declaring list dl of s's scope in st.
func (g *Generator) declare(st map[string]any, s *refSite, dl declList, name string, r *rand.Rand) (string, bool) {
	toks := append(append([]jsonv.Token{}, s.scopeToks...), stringsToTokens(dl.rel)...)
	ptr := jsonv.Pointer(toks)
	cur, _ := jsonv.Get(st, ptr)
	list, _ := cur.([]any)
	if dl.list.MaxItems != nil && int64(len(list)) >= *dl.list.MaxItems {
		return "", false
	}
	c := &caseCtx{g: g, p: dl.list.Items, r: r}
	item, ok := c.minimal(dl.list.Items).(map[string]any)
	if !ok {
		return "", false
	}
	item["name"] = name
	if f := dl.list.Items.Field("emptyDir"); f != nil {
		item["emptyDir"] = map[string]any{}
	}
	// Materialise missing objects on the way to the list.
	for i := len(s.scopeToks) + 1; i < len(toks); i++ {
		p := jsonv.Pointer(toks[:i])
		if v, ok := jsonv.Get(st, p); !ok || v == nil {
			if err := jsonv.Set(st, p, map[string]any{}); err != nil {
				return "", false
			}
		}
	}
	if err := jsonv.Set(st, ptr, append(append([]any{}, list...), item)); err != nil {
		return "", false
	}
	return fmt.Sprintf("declaring %s %q in %s for %s", s.class.name, name, pathOf(toks), pathOf(s.toks)), true
}

func stringsToTokens(s []string) []jsonv.Token {
	out := make([]jsonv.Token, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
