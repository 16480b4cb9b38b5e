package oracles

import (
	"context"
	"fmt"
	"k8s.io/client-go/kubernetes/scheme"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Consistency is Acto's consistency oracle: every CR property the step changed
// must show in the state reached, seen from the platform.
//
// The properties judged are the leaves under the paths of Step.Changed (dotted
// paths, patterns with [*] and {*}, or JSON pointers; when Step.Changed is empty,
// every difference between PrevDesired and Desired) where the previous and the
// desired value differ semantically. A value the CR omits but the API server
// defaulted (it appears in the recorded CR) counts as that default. Properties
// under apiVersion, kind, metadata and status, and those matching Config.Skip,
// are not judged.
//
// For a property set to value d, the oracle searches the objects of the state
// reached (every object but the CR, events and Config.IgnoreKinds) for a field
// that now reflects d and did not before: equal, equal as a Kubernetes quantity
// ("1Gi" == "1073741824"), as an int-or-string or the string form of a number,
// bool or duration; a map or list containing d's entries (servers add
// defaults); or, in a string such as a configuration file in a ConfigMap, a
// "key value" (or key=value, key: value, --key=value) line giving d to the
// property's last key. When none is found the property is not reflected: a
// finding whose evidence gives the closest fields by name and what they hold
// ("still holds the previous value" for an ignored property, "holds another
// value" for one silently overruled). Two cases need no changed field: a
// property newly set, or changed from a value no field of the previous state
// showed (one the operator refused), to a value some field of the same name
// already held (a default already in effect, or the value kept), and a boolean, which passes when it had any effect
// on the objects (toggles add or remove objects and containers rather than
// copying the value). On a rollback after a step that had no effect (the state
// it reached is, outside status, Transition.Reference, the state before it: the
// operator refused its values, or Kubernetes refused what the operator asked,
// such as a claim's growth) no property needs a changed field: only mapped
// properties are judged, and Recovery judges the state against the reference.
//
// For a property removed (or emptied), the fields that reflected its previous
// value must change or disappear; if no field reflected it, the removal is not
// judged, and neither is one whose previous value those fields also held in
// Transition.Baseline, whose seed did not set the property (a default).
//
// Config.Mappings override the search for the properties they cover: the mapped
// field of the state reached must hold the desired value (or, for a removal, no
// longer hold the previous one), whether or not it changed.
//
// Signatures are the property path with list indices generalized (and map keys
// of Config.MapProperties, or where Step.Changed used {*}, as {*}) and whether the
// property was set or removed: one ignored property is one signature however many
// steps change it.
//
// Create it with NewConsistency.
type Consistency struct {
	mappings    []compiledMapping
	skip        []jsonv.Path
	skipRemoval []jsonv.Path
	defaults    []propDefault
	mapProps    []jsonv.Path
	noise       []maskRule
	ignoreKinds map[string]bool
	// kinds are the Kubernetes kinds client-go knows, by normalised name.
	kinds map[string]bool
}

// NewConsistency returns the consistency oracle configured by cfg.
func NewConsistency(cfg Config) *Consistency {
	c := &Consistency{skip: compilePaths(cfg.Skip), skipRemoval: compilePaths(cfg.SkipRemoval), mapProps: compilePaths(cfg.MapProperties), ignoreKinds: map[string]bool{},
		kinds: map[string]bool{}}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		c.kinds[normName(gvk.Kind)] = true
	}
	for p, v := range cfg.Defaults {
		if pp, err := jsonv.ParsePath(p); err == nil {
			c.defaults = append(c.defaults, propDefault{pp, v})
		}
	}
	for _, m := range cfg.Mappings {
		if cm, err := m.compile(); err == nil && !hasDeep(cm.prop) {
			c.mappings = append(c.mappings, cm)
		}
	}
	var noise []string
	for _, m := range DefaultMasks() {
		if m != MaskTimestamps {
			noise = append(noise, m)
		}
	}
	c.noise = compileMasks(noise, cfg.Masks)
	ignore := cfg.IgnoreKinds
	if ignore == nil {
		ignore = DefaultIgnoreKinds()
	}
	for _, k := range ignore {
		c.ignoreKinds[k] = true
	}
	return c
}

// Name is "consistency".
func (c *Consistency) Name() string { return NameConsistency }

func hasDeep(p jsonv.Path) bool {
	for _, s := range p {
		if s.Kind == jsonv.SegDeep {
			return true
		}
	}
	return false
}

// Check judges the properties t.Step changed against t.Prev and t.Curr.
func (c *Consistency) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Prev == nil || t.Curr == nil || ctx.Err() != nil {
		return nil
	}
	props := c.properties(t)
	if len(props) == 0 {
		return nil
	}
	ix := c.index(t)
	fs := newFindingSet(NameConsistency)
	for _, p := range props {
		if ctx.Err() != nil {
			break
		}
		c.judge(t, p, ix, fs)
	}
	return fs.list()
}

// property is one changed CR property (a concrete path).
type property struct {
	path            jsonv.Path
	sig             string
	prev, des       any
	hasPrev, hasDes bool
}

func (p property) set() bool { return p.hasDes && !isEmpty(p.des) }

func (c *Consistency) properties(t *model.Transition) []property {
	desired := t.Desired
	if desired == nil && t.Step != nil {
		desired = t.Step.Desired
	}
	if desired == nil {
		return nil
	}
	prevD := t.PrevDesired
	if prevD == nil {
		prevD = model.Object{}
	}
	var patterns []jsonv.Path
	if t.Step != nil {
		for _, ch := range t.Step.Changed {
			if p, err := jsonv.ParsePath(ch); err == nil {
				patterns = append(patterns, p)
			}
		}
	}
	if len(patterns) == 0 {
		patterns = []jsonv.Path{nil}
	}
	var currCR, prevCR model.Object
	currCR, prevCR = t.Curr.CRObject(), t.Prev.CRObject()
	seen := map[string]bool{}
	var out []property
	var descend func(at jsonv.Path, pv any, pok bool, dv any, dok bool)
	leaf := func(at jsonv.Path, pv any, pok bool, dv any, dok bool) {
		// A value the CR omits may have been defaulted by the API server.
		if !dok && currCR != nil {
			dv, dok = jsonv.GetPath(currCR, at)
		}
		if !pok && prevCR != nil {
			pv, pok = jsonv.GetPath(prevCR, at)
		}
		if pok && dok && sameValue(pv, dv) {
			return
		}
		if !pok && !dok {
			return
		}
		// An absent boolean is false; an absent or empty value is "nothing".
		if (!pok || isEmpty(pv)) && (!dok || isEmpty(dv) || dv == false) {
			return
		}
		if (!dok || isEmpty(dv)) && pv == false {
			return
		}
		s := at.String()
		if seen[s] || c.skipped(at) {
			return
		}
		seen[s] = true
		out = append(out, property{path: at, sig: c.sigPath(at, patterns), prev: pv, des: dv, hasPrev: pok, hasDes: dok})
	}
	descend = func(at jsonv.Path, pv any, pok bool, dv any, dok bool) {
		if len(at) > 0 {
			switch at[0].Key {
			case "apiVersion", "kind", "metadata", "status":
				return
			}
		}
		if pok && dok && jsonv.Equal(pv, dv) {
			return
		}
		pm, pIsMap := pv.(map[string]any)
		dm, dIsMap := dv.(map[string]any)
		switch {
		case pIsMap && dIsMap, pIsMap && !dok && len(pm) > 0, dIsMap && !pok && len(dm) > 0:
			keys := map[string]bool{}
			for k := range pm {
				keys[k] = true
			}
			for k := range dm {
				keys[k] = true
			}
			for _, k := range sortedKeys(keys) {
				a, aok := pm[k]
				b, bok := dm[k]
				descend(at.Child(k), a, aok, b, bok)
			}
			return
		}
		pl, pIsList := pv.([]any)
		dl, dIsList := dv.([]any)
		if pIsList && dIsList && len(pl) == len(dl) && allMaps(pl) && allMaps(dl) {
			for i := range pl {
				descend(at.Item(i), pl[i], true, dl[i], true)
			}
			return
		}
		leaf(at, pv, pok, dv, dok)
	}
	for _, pat := range patterns {
		paths := map[string]jsonv.Path{}
		for _, p := range jsonv.Expand(desired, pat) {
			paths[p.String()] = p
		}
		for _, p := range jsonv.Expand(prevD, pat) {
			paths[p.String()] = p
		}
		for _, k := range sortedKeys(paths) {
			p := paths[k]
			pv, pok := jsonv.GetPath(prevD, p)
			dv, dok := jsonv.GetPath(desired, p)
			if len(p) == 0 {
				descend(nil, pv, pok, dv, dok)
				continue
			}
			descend(p, pv, pok, dv, dok)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path.String() < out[j].path.String() })
	return out
}

func allMaps(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// sameValue is semantic equality of desired values (structures element-wise).
func sameValue(a, b any) bool {
	return jsonv.EqualWith(a, b, func(a, b any) bool { return !isStructure(a) && !isStructure(b) && equivalent(a, b) })
}

// propDefault is a property's effective value while it is unset (Config.Defaults).
type propDefault struct {
	path jsonv.Path
	val  any
}

// defaultOf is the effective value of property p while it is unset, if known.
func (c *Consistency) defaultOf(p jsonv.Path) (any, bool) {
	for _, d := range c.defaults {
		if jsonv.Match(d.path, p, false) {
			return d.val, true
		}
	}
	return nil, false
}

func (c *Consistency) skipped(p jsonv.Path) bool {
	for _, s := range c.skip {
		if jsonv.Match(s, p, true) {
			return true
		}
	}
	return false
}

// sigPath generalizes a property path for signatures.
func (c *Consistency) sigPath(p jsonv.Path, patterns []jsonv.Path) string {
	g := p.Generalized()
	for _, pat := range patterns {
		if hasDeep(pat) || !jsonv.Match(pat, p, true) {
			continue
		}
		for i, s := range pat {
			if i < len(g) && g[i].Kind == jsonv.SegKey && (s.Kind == jsonv.SegAnyKey || s.Glob) {
				g[i] = jsonv.Segment{Kind: jsonv.SegAnyKey}
			}
		}
	}
	for _, mp := range c.mapProps {
		if !hasDeep(mp) && len(p) > len(mp) && jsonv.Match(mp, p[:len(mp)], false) && g[len(mp)].Kind == jsonv.SegKey {
			g[len(mp)] = jsonv.Segment{Kind: jsonv.SegAnyKey}
		}
	}
	return g.String()
}

// node is one value of a state object.
type node struct {
	obj  string // key
	kind string
	name string
	path jsonv.Path
	val  any
}

func (n *node) where() string { return n.kind + " " + n.name + " " + n.path.String() }

// stateIndex holds the (masked) objects of both states, but the CR.
type stateIndex struct {
	prev, curr       map[string]model.Object
	prevNodes, nodes []*node
	anyChange        bool // some non-status field of some object changed
	// leftUnchanged: on a rollback, the state the failed step reached is,
	// outside status, the state before it (Transition.Reference): the values
	// being rolled back never took effect, so going back needs no change.
	leftUnchanged bool
	owned         map[string]bool // objects the CR controls, directly or not
	prevOwned     map[string]bool // the same in the previous state
}

func (c *Consistency) index(t *model.Transition) *stateIndex {
	ix := &stateIndex{prev: map[string]model.Object{}, curr: map[string]model.Object{}}
	c.load(t, t.Prev, ix.prev, &ix.prevNodes)
	c.load(t, t.Curr, ix.curr, &ix.nodes)
	ix.owned = ownedBy(t.Curr)
	if t.Prev != nil {
		ix.prevOwned = ownedBy(t.Prev)
	}
	ix.anyChange = changedOutsideStatus(ix.prev, ix.curr)
	if t.Step != nil && t.Step.Kind == model.StepRollback && t.Reference != nil {
		ref := map[string]model.Object{}
		c.load(t, t.Reference, ref, nil)
		ix.leftUnchanged = !changedOutsideStatus(ref, ix.prev)
	}
	return ix
}

// load puts the masked objects of s (but the CR, events and ignored kinds)
// into into and, unless nodes is nil, their leaves into nodes.
func (c *Consistency) load(t *model.Transition, s *model.Snapshot, into map[string]model.Object, nodes *[]*node) {
	for _, key := range s.Keys() {
		k, ok := model.ParseObjectKey(key)
		if !ok || key == s.CR || key == t.Curr.CR || c.ignoreKinds[k.Kind] {
			continue
		}
		raw := s.Objects[key]
		if raw == nil {
			continue
		}
		if _, has := raw["kind"]; !has {
			raw = withKindName(raw, k)
		}
		m := applyMasks(raw, c.noise)
		if m == nil {
			continue
		}
		into[key] = m
		if nodes != nil {
			walkNodes(m, func(p jsonv.Path, v any) {
				*nodes = append(*nodes, &node{obj: key, kind: k.Kind, name: k.Name, path: p, val: v})
			})
		}
	}
}

// changedOutsideStatus reports whether an object was added or removed between
// a and b, or a field of one outside its status changed.
func changedOutsideStatus(a, b map[string]model.Object) bool {
	for _, key := range sortedKeys(b) {
		p, ok := a[key]
		if !ok {
			return true
		}
		for _, ch := range diffObjects(p, b[key]) {
			if !strings.HasPrefix(ch.Path, "status") {
				return true
			}
		}
	}
	for key := range a {
		if _, ok := b[key]; !ok {
			return true
		}
	}
	return false
}

// ownedBy returns the keys of the objects whose chain of controller owners
// leads to the CR of s.
func ownedBy(s *model.Snapshot) map[string]bool {
	out := map[string]bool{}
	crk, ok := model.ParseObjectKey(s.CR)
	if !ok {
		return out
	}
	byName := map[string]string{} // "namespace/Kind/name" -> key
	for key := range s.Objects {
		if k, ok := model.ParseObjectKey(key); ok {
			byName[k.Namespace+"/"+k.Kind+"/"+k.Name] = key
		}
	}
	for key, o := range s.Objects {
		k, _ := model.ParseObjectKey(key)
		cur := o
		for depth := 0; depth < 6 && cur != nil; depth++ {
			kind, name := controllerOf(cur)
			if kind == "" {
				break
			}
			if kind == crk.Kind && name == crk.Name {
				out[key] = true
				break
			}
			cur = s.Objects[byName[k.Namespace+"/"+kind+"/"+name]]
		}
	}
	return out
}

// podCountReflects reports whether an integer desired value is the number of
// pods the CR controls, a number the step changed to it: an operator that
// runs its instances as pods of its own, with no workload object between
// (CloudNativePG's spec.instances), shows the count nowhere but in the CR's
// own status, which the oracle does not read. Pods being deleted do not count.
func (ix *stateIndex) podCountReflects(d any) bool {
	var want int64
	switch v := d.(type) {
	case int64:
		want = v
	case int:
		want = int64(v)
	case float64:
		if v != float64(int64(v)) {
			return false
		}
		want = int64(v)
	default:
		return false
	}
	count := func(objs map[string]model.Object, owned map[string]bool) int64 {
		var n int64
		for key, o := range objs {
			k, ok := model.ParseObjectKey(key)
			if !ok || k.Group != "" || k.Kind != "Pod" || !owned[key] {
				continue
			}
			if ts, _ := jsonv.At(o, "metadata", "deletionTimestamp").(string); ts != "" {
				continue
			}
			n++
		}
		return n
	}
	return want >= 0 && count(ix.curr, ix.owned) == want && count(ix.prev, ix.prevOwned) != want
}

// walkNodes calls fn for every value below the root (not the root itself).
func walkNodes(v any, fn func(p jsonv.Path, v any)) {
	var walk func(v any, at jsonv.Path)
	walk = func(v any, at jsonv.Path) {
		jsonv.ForEachChild(v, func(c any, seg jsonv.Segment) {
			p := append(at[:len(at):len(at)], seg)
			fn(p, c)
			walk(c, p)
		})
	}
	walk(v, nil)
}

// matchValue reports whether an observed value v reflects desired value d of a
// property whose last key is key; line is set when the match is a "key value"
// line of a string.
func matchValue(d any, key string, v any) (ok, line bool) {
	if l, isList := d.([]any); isList {
		if s, isStr := v.(string); isStr && joinedList(l, s) {
			return true, false
		}
	}
	if args, ok := stringList(v); ok && nameValueFlags(d, args) {
		return true, false
	}
	if isStructure(d) {
		return isStructure(v) && contains(d, v), false
	}
	if lv, found := argsValue(v, key); found {
		return equivalent(d, lv), true
	}
	if v == nil || isStructure(v) {
		return false, false
	}
	if equivalent(d, v) {
		return true, false
	}
	if flagHolds(d, v) {
		return true, false
	}
	if taggedWith(d, v) {
		// A version is as telling as a "key value" line: it needs no
		// field named like the property.
		return true, true
	}
	if s, isStr := v.(string); isStr && key != "" {
		if lv, found := lineValue(s, key); found {
			return equivalent(d, lv), true
		}
	}
	return false, false
}

// joinedList reports whether s is the comma-separated form of the list of
// scalars l, in any order ("a.example,b.example" for [a.example, b.example]):
// how operators often publish a list in an annotation or a flag (cert-manager's
// cert-manager.io/alt-names on the Secret it issues).
func joinedList(l []any, s string) bool {
	if len(l) == 0 || s == "" {
		return false
	}
	want := make([]string, len(l))
	for i, e := range l {
		switch e.(type) {
		case string, bool, int64, float64, int:
			want[i] = fmt.Sprint(e)
		default:
			return false
		}
	}
	got := strings.Split(s, ",")
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		got[i] = strings.TrimSpace(got[i])
	}
	sort.Strings(want)
	sort.Strings(got)
	return slices.Equal(want, got)
}

// textValue looks key up in a string (configuration lines, command line) or a
// list of strings (arguments).
func textValue(v any, key string) (string, bool) {
	if s, ok := v.(string); ok {
		return lineValue(s, key)
	}
	return argsValue(v, key)
}

func (ix *stateIndex) prevMatches(n *node, d any, key string) bool {
	p, ok := ix.prev[n.obj]
	if !ok {
		return false
	}
	v, ok := jsonv.GetPath(p, n.path)
	if !ok {
		return false
	}
	m, _ := matchValue(d, key, v)
	return m
}

func (ix *stateIndex) currMatches(n *node, d any, key string) bool {
	o, ok := ix.curr[n.obj]
	if !ok {
		return false
	}
	v, ok := jsonv.GetPath(o, n.path)
	if !ok {
		return false
	}
	m, _ := matchValue(d, key, v)
	return m
}

func (c *Consistency) judge(t *model.Transition, p property, ix *stateIndex, fs *findingSet) {
	for _, m := range c.mappings {
		if len(p.path) >= len(m.prop) && jsonv.Match(m.prop, p.path[:len(m.prop)], false) {
			c.judgeMapped(t, p, m, fs)
			return
		}
	}
	if ix.leftUnchanged {
		// The step rolled back had no effect (the operator refused its
		// values): nothing had to change, and whether the state is the one
		// before it is Recovery's judgement.
		return
	}
	key := p.path.Last()
	if d, ok := c.defaultOf(p.path); ok {
		// The operator's value while the property is unset: setting it to
		// that value, or removing it while it held that value, changes nothing.
		if (p.set() && (!p.hasPrev || isEmpty(p.prev)) && jsonv.Equal(d, p.des)) || (!p.set() && p.hasPrev && jsonv.Equal(d, p.prev)) {
			return
		}
	}
	if p.set() {
		if b, isBool := p.des.(bool); isBool {
			if ix.anyChange || len(ix.reflecting(p, key, true)) > 0 {
				return
			}
			if (!p.hasPrev || isEmpty(p.prev)) && ix.alreadyHeld(p, key) {
				return
			}
			if pauseSwitch(key) {
				// Pausing stops the operator acting on the object: nothing
				// changing is what it shows, and resuming with no change
				// pending changes nothing either.
				return
			}
			if !b && p.hasPrev && p.prev == true && !ix.featureShown(p.path) {
				return
			}
			c.report(t, p, ix, fs, "set", fmt.Sprintf("%s changed to %v"+noObjectChanged, p.path, b), nil)
			return
		}
		if len(ix.reflecting(p, key, false)) > 0 || ix.podCountReflects(p.des) {
			return
		}
		if c.kindAbsent(ix, p.path) {
			return
		}
		if !p.hasPrev || isEmpty(p.prev) || !ix.showed(p, p.prev, key) {
			// Newly set, or changed from a value the state never showed (the
			// operator refused it and kept what it had): the value may already
			// have been in effect (a default, or the value before the refused one).
			for _, n := range ix.nodes {
				if ok, line := matchValue(p.des, key, n.val); ok && ix.prevMatches(n, p.des, key) &&
					(line || affinity(p.path, n.path) > 0) {
					return
				}
			}
		}
		c.report(t, p, ix, fs, "set", "", nil)
		return
	}
	// Removed or emptied.
	if !p.hasPrev || isEmpty(p.prev) {
		return
	}
	for _, s := range c.skipRemoval {
		if jsonv.Match(s, p.path, true) {
			return
		}
	}
	if _, isBool := p.prev.(bool); isBool {
		if !ix.anyChange {
			c.report(t, p, ix, fs, "removed", fmt.Sprintf("%s was removed (it was %v) but no object of the state changed", p.path, p.prev), nil)
		}
		return
	}
	var still []*node
	reflected := false
	for _, n := range ix.prevNodes {
		ok, line := matchValue(p.prev, key, n.val)
		if !ok || (weak(p.prev) && !line && affinity(p.path, n.path) == 0) {
			continue
		}
		reflected = true
		if !ix.currMatches(n, p.prev, key) {
			return // a field that reflected the old value changed or disappeared
		}
		still = append(still, n)
	}
	if !reflected {
		return // nothing showed the old value: the removal cannot be judged
	}
	if defaultedOnRemoval(t, p, still) {
		return // the previous value is the default, which the removal brings back
	}
	c.report(t, p, ix, fs, "removed", "", still)
}

// defaultedOnRemoval reports whether every field that still holds a removed
// property's previous value held that same value in the baseline state (the
// seed's, which did not set the property): the previous value is the
// operator's default, and a removal rightly leaves it in effect. Objects the
// baseline did not have (pods of a scale-up since) are not compared, but at
// least one field must be.
func defaultedOnRemoval(t *model.Transition, p property, still []*node) bool {
	if t.Baseline == nil || t.BaselineDesired == nil || len(still) == 0 {
		return false
	}
	if v, ok := jsonv.GetPath(map[string]any(t.BaselineDesired), p.path); ok && !isEmpty(v) {
		return false
	}
	compared := 0
	for _, n := range still {
		obj, ok := t.Baseline.Objects[n.obj]
		if !ok {
			continue
		}
		compared++
		v, ok := jsonv.GetPath(map[string]any(obj), n.path)
		if !ok {
			return false
		}
		key := p.path.Last()
		if cv, found := textValue(n.val, key); found {
			// A configuration line in a larger text: compare that line's value.
			if bv, found := textValue(v, key); !found || bv != cv {
				return false
			}
			continue
		}
		if !sameValue(v, n.val) {
			return false
		}
	}
	return compared > 0
}

// reflecting returns the fields of the state reached that hold the desired value
// and did not before (with affinityOnly, only those whose name agrees).
func (ix *stateIndex) reflecting(p property, key string, affinityOnly bool) []*node {
	var out []*node
	for _, n := range ix.nodes {
		ok, line := matchValue(p.des, key, n.val)
		if !ok || (affinityOnly && !line && affinity(p.path, n.path) == 0) {
			continue
		}
		if !ix.prevMatches(n, p.des, key) || ix.listGrewWith(n, p) || ix.becameExactly(n, p.des) {
			out = append(out, n)
		}
	}
	return out
}

// alreadyHeld reports whether the fields a newly set property maps to held
// its value already, before the step and after it: at least one state field
// named like it (affinity) holds the desired value, and every such field
// does, in both states. Setting an operator's default explicitly changes
// nothing and is consistent, whoever set the value first (bundled operator,
// 6 workers: containerSecurityContext.readOnlyRootFilesystem set to true,
// its default, was "changed to true but no object of the state changed"
// while the StatefulSet and pods held true).
func (ix *stateIndex) alreadyHeld(p property, key string) bool {
	held := false
	for _, n := range ix.nodes {
		if affinity(p.path, n.path) == 0 {
			continue
		}
		ok, _ := matchValue(p.des, key, n.val)
		if !ok || !ix.prevMatches(n, p.des, key) {
			return false
		}
		held = true
	}
	return held
}

// featureShown reports whether the state before the step showed anything of
// the feature a flag switches: the flag's parent names it (the flag
// spec.podDisruptionBudget.enabled switches podDisruptionBudget), and an
// object of that kind, a field of that name, or a value naming it (a
// container called "exporter") shows it. A flag turned off whose feature the
// state did not show changes nothing, and rightly: the operator had not made
// it, for a reason of its own (bundled operator, 6 workers, seed 1:
// podDisruptionBudget.enabled true → false at replicas 1, where the operator
// makes no PodDisruptionBudget, was "changed to false but no object of the
// state changed"). A flag without a parent says nothing and counts as shown.
func (ix *stateIndex) featureShown(prop jsonv.Path) bool {
	keys := prop.Keys()
	if len(keys) < 2 {
		return true
	}
	feature := normName(keys[len(keys)-2])
	if feature == "" || feature == "spec" {
		return true
	}
	for _, n := range ix.prevNodes {
		if normName(n.kind) == feature {
			return true
		}
		for _, k := range n.path.Keys() {
			if normName(k) == feature {
				return true
			}
		}
		if s, ok := n.val.(string); ok && namesWord(s, feature) {
			return true
		}
	}
	return false
}

// kindAbsent reports whether prop sits in a block named after a Kubernetes
// kind (spec.podDisruptionBudget.maxUnavailable) of which neither state holds
// an object: the operator makes none in this state, by its own rule (one
// replica needs no PodDisruptionBudget), so a value for it has nothing to act
// on yet. Whether the object appears when it should is judged where the
// feature is switched on or the state grows.
func (c *Consistency) kindAbsent(ix *stateIndex, prop jsonv.Path) bool {
	keys := prop.Keys()
	if len(keys) < 2 {
		return false
	}
	kind := normName(keys[len(keys)-2])
	if !c.kinds[kind] {
		return false
	}
	for _, nodes := range [][]*node{ix.prevNodes, ix.nodes} {
		for _, n := range nodes {
			if normName(n.kind) == kind {
				return false
			}
		}
	}
	return true
}

// namesWord reports whether the text s holds the normalised name feature as a
// word, or as words joined by '-' or '_': "tls-port 6380" names tls,
// "exporter" names exporter, "pod-disruption-budget" names poddisruptionbudget.
func namesWord(s, feature string) bool {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_'
	}) {
		if normName(w) == feature {
			return true
		}
		for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '-' || r == '_' }) {
			if strings.ToLower(part) == feature {
				return true
			}
		}
	}
	return false
}

// becameExactly reports whether a list field that holds the desired list
// exactly held a different list before: containment matched the old value
// too (cert-manager seed 3: usages ["server auth"] → ["cert sign"] on a CA
// certificate, whose usages went from ["cert sign", "server auth"] to
// exactly ["cert sign"], was "overruled").
func (ix *stateIndex) becameExactly(n *node, d any) bool {
	if _, ok := d.([]any); !ok || !jsonv.Equal(n.val, d) {
		return false
	}
	po, ok := ix.prev[n.obj]
	if !ok {
		return false
	}
	pv, ok := jsonv.GetPath(po, n.path)
	return ok && !jsonv.Equal(pv, d)
}

// listGrewWith reports, for a list property, a state list that already contained
// the desired elements but changed length as the property did (elements removed
// from both, or added where the operator appends its own).
func (ix *stateIndex) listGrewWith(n *node, p property) bool {
	dl, ok := p.des.([]any)
	if !ok {
		return false
	}
	pl, _ := p.prev.([]any)
	vl, ok := n.val.([]any)
	if !ok {
		return false
	}
	po, ok := ix.prev[n.obj]
	if !ok {
		return false
	}
	pv, ok := jsonv.GetPath(po, n.path)
	if !ok {
		return false
	}
	pvl, ok := pv.([]any)
	if !ok {
		return false
	}
	delta := len(dl) - len(pl)
	return delta != 0 && len(vl)-len(pvl) == delta
}

type candidate struct {
	n     *node
	val   any
	line  bool
	score int
	owned bool
	like  int // common prefix with the desired (or previous) value
}

// genericNames are field names too common to tie a state field to a property
// when they are the only path segment the two share.
var genericNames = map[string]bool{
	"key": true, "name": true, "value": true, "type": true, "kind": true, "enabled": true,
	"optional": true, "mode": true, "path": true, "port": true, "items": true, "data": true,
}

// telling reports whether a candidate is strong enough evidence to say the
// state holds the property's value elsewhere (ignored or overruled): a
// configuration line setting the key, two or more trailing path segments in
// common, or one segment that is not a generic name.
func telling(c candidate, key string) bool {
	if c.line || c.score >= 2 {
		return true
	}
	// One shared name, and either side generic: "hostname" ends with the
	// metadata.name of every object, which says nothing of where it went.
	field := ""
	if ks := c.n.path.Keys(); len(ks) > 0 {
		field = ks[len(ks)-1]
	}
	return !genericNames[normName(key)] && !genericNames[normName(field)]
}

// candidates are the fields of the state reached closest to the property by
// name (and configuration lines setting its key), best first.
func (ix *stateIndex) candidates(p property, key string, max int) []candidate {
	ref := p.des
	if !p.set() {
		ref = p.prev
	}
	refStr, _ := scalarString(ref)
	var out []candidate
	for _, n := range ix.nodes {
		if lv, found := textValue(n.val, key); found {
			out = append(out, candidate{n: n, val: lv, line: true, score: 100, owned: ix.owned[n.obj], like: commonPrefix(refStr, lv)})
			continue
		}
		a := affinity(p.path, n.path)
		if a == 0 || isStructure(ref) != isStructure(n.val) {
			continue
		}
		vs, _ := scalarString(n.val)
		out = append(out, candidate{n: n, val: n.val, score: a, owned: ix.owned[n.obj], like: commonPrefix(refStr, vs)})
	}
	// Best first: objects the CR owns; closest by name; closest by value; objects
	// that declare rather than run (a StatefulSet before its pods); shortest path.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].owned != out[j].owned {
			return out[i].owned
		}
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		if out[i].like != out[j].like {
			return out[i].like > out[j].like
		}
		if pi, pj := out[i].n.kind == "Pod", out[j].n.kind == "Pod"; pi != pj {
			return pj
		}
		return len(out[i].n.path) < len(out[j].n.path)
	})
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// showed reports whether some field of the previous state reflected v (the
// property's previous desired value): a configuration line setting key, or a
// field related to the property by name.
func (ix *stateIndex) showed(p property, v any, key string) bool {
	for _, n := range ix.prevNodes {
		if ok, line := matchValue(v, key, n.val); ok && (line || affinity(p.path, n.path) > 0) {
			return true
		}
	}
	return false
}

func (c *Consistency) report(t *model.Transition, p property, ix *stateIndex, fs *findingSet, how, summary string, still []*node) {
	key := p.path.Last()
	crKey := t.Curr.CR
	ev := []model.Evidence{{Object: crKey, Path: p.path.String(), Expected: p.des, Actual: nil,
		Detail: fmt.Sprintf(desiredDetail+"%s; previously %s", renderOpt(p.des, p.hasDes), renderOpt(p.prev, p.hasPrev))}}
	if how == "removed" {
		ev[0].Detail = removedDetail + renderOpt(p.prev, p.hasPrev)
	}
	if summary == "" {
		if how == "removed" {
			where := ""
			if len(still) > 0 {
				where = " (" + still[0].where() + " still holds it)"
			}
			summary = fmt.Sprintf("%s was removed but the state still reflects its previous value %s%s", p.path, render(p.prev), where)
		} else {
			cands := ix.candidates(p, key, 3)
			if len(cands) > 0 && !telling(cands[0], key) {
				cands = nil // a lone generic name ("key", "name") is no evidence of where the value went
			}
			switch {
			case len(cands) > 0 && p.hasPrev && sameValue(p.prev, cands[0].val):
				summary = fmt.Sprintf("%s changed to %s but the state ignores it: %s still holds the previous value %s",
					p.path, render(p.des), cands[0].n.where(), render(cands[0].val))
			case len(cands) > 0:
				summary = fmt.Sprintf("%s changed to %s but the value was overruled: %s holds %s",
					p.path, render(p.des), cands[0].n.where(), render(cands[0].val))
			default:
				summary = fmt.Sprintf("%s changed to %s"+noFieldReflects, p.path, render(p.des))
			}
		}
	}
	if len(still) > 0 {
		for i, n := range still {
			if i == 3 {
				break
			}
			val, detail := n.val, stillDetail
			if lv, found := textValue(n.val, key); found {
				val, detail = lv, stillLineDetail+key
			}
			ev = append(ev, model.Evidence{Object: n.obj, Path: n.path.String(), Actual: val, Detail: detail})
		}
	} else {
		for _, cd := range ix.candidates(p, key, 3) {
			d := "closest field by name"
			path := cd.n.path.String()
			if cd.line {
				d = fmt.Sprintf("this field sets %s", key)
			}
			ev = append(ev, model.Evidence{Object: cd.n.obj, Path: path, Expected: p.des, Actual: cd.val, Detail: d})
		}
	}
	if _, isBool := p.des.(bool); isBool || how == "removed" && isBoolean(p.prev) {
		ev = append(ev, model.Evidence{Detail: "no non-status field of any object changed between the two states"})
	}
	fs.add(model.Finding{
		Signature: model.Signature(NameConsistency, p.sig, how),
		Summary:   summary,
		Evidence:  ev,
	})
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func isBoolean(v any) bool { _, ok := v.(bool); return ok }

func renderOpt(v any, ok bool) string {
	if !ok {
		return "unset"
	}
	return render(v)
}

// judgeMapped checks a property against a declared mapping.
func (c *Consistency) judgeMapped(t *model.Transition, p property, m compiledMapping, fs *findingSet) {
	rest := p.path[len(m.prop):]
	key := p.path.Last()
	type found struct {
		obj, path string
		val       any
	}
	var vals []found
	for _, okey := range objectsOfKind(t.Curr, m.kind) {
		obj := t.Curr.Objects[okey]
		k, _ := model.ParseObjectKey(okey)
		if m.name != "" {
			if r, err := parseMask(m.kind + "/" + m.name); err != nil || !r.appliesTo(k.Kind, k.Name) {
				continue
			}
		}
		for _, bp := range jsonv.Expand(obj, m.field) {
			base, _ := jsonv.GetPath(obj, bp)
			if len(rest) == 0 {
				vals = append(vals, found{okey, bp.String(), base})
				continue
			}
			if v, ok := jsonv.GetPath(base, rest); ok {
				vals = append(vals, found{okey, append(bp[:len(bp):len(bp)], rest...).String(), v})
				continue
			}
			// A configuration file or command line: look the property's key up in it.
			if lv, ok := textValue(base, key); ok {
				vals = append(vals, found{okey, bp.String(), lv})
			}
		}
	}
	mapping := fmt.Sprintf(strings.TrimPrefix(mappedDetail, "; ")+"%s %s %s", m.kind, orDefault(m.name, "*"), m.field.String())
	ev := []model.Evidence{{Object: t.Curr.CR, Path: p.path.String(), Expected: p.des,
		Detail: fmt.Sprintf("desired %s; previously %s; %s", renderOpt(p.des, p.hasDes), renderOpt(p.prev, p.hasPrev), mapping)}}
	for i, v := range vals {
		if i == 5 {
			break
		}
		ev = append(ev, model.Evidence{Object: v.obj, Path: v.path, Expected: p.des, Actual: v.val})
	}
	if p.set() {
		want, err := m.expected(p.des)
		if err != nil {
			fs.add(model.Finding{Severity: model.SeverityWarning, Signature: model.Signature(NameConsistency, p.sig, "mapping"),
				Summary: "the target's mapping could not be evaluated: " + err.Error(), Evidence: ev})
			return
		}
		for _, v := range vals {
			if ok, _ := matchValue(want, key, v.val); ok {
				return
			}
		}
		summary := fmt.Sprintf("%s changed to %s but its mapped field is missing (%s)", p.path, render(p.des), mapping)
		if len(vals) > 0 {
			summary = fmt.Sprintf("%s changed to %s but %s %s holds %s", p.path, render(p.des), m.kind, vals[0].path, render(vals[0].val))
			if m.expect != nil {
				summary += fmt.Sprintf(", expected %s (%s)", render(want), m.src.Expect)
			}
		}
		fs.add(model.Finding{Signature: model.Signature(NameConsistency, p.sig, "set"), Summary: summary, Evidence: ev})
		return
	}
	if !p.hasPrev || isEmpty(p.prev) {
		return
	}
	prevWant, err := m.expected(p.prev)
	if err != nil {
		return
	}
	for _, v := range vals {
		if ok, _ := matchValue(prevWant, key, v.val); ok {
			fs.add(model.Finding{
				Signature: model.Signature(NameConsistency, p.sig, "removed"),
				Summary:   fmt.Sprintf("%s was removed but %s %s still holds its previous value %s", p.path, m.kind, v.path, render(p.prev)),
				Evidence:  ev,
			})
			return
		}
	}
}

// pauseSwitch reports whether a boolean property's key is a pause switch by
// the Kubernetes API conventions (Deployment's `paused`, Job's and CronJob's
// `suspend`), which operators' CRDs follow for "stop reconciling this object".
func pauseSwitch(key string) bool {
	switch strings.ToLower(key) {
	case "paused", "pause", "suspend", "suspended":
		return true
	}
	return false
}
