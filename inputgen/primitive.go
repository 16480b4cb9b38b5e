package inputgen

import (
	"fmt"
	"iter"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// generatorsFor lists the primitive generators and semantic scenarios that apply to p.
func (g *Generator) generatorsFor(p *crd.Property) []namedGen {
	var out []namedGen
	last := p.Path[len(p.Path)-1].Kind
	switch {
	case p.Type == crd.TypeArray:
		out = append(out,
			namedGen{"array/append", genAppend},
			namedGen{"array/remove-last", genRemoveLast},
		)
		if last == crd.Field {
			out = append(out, namedGen{"array/remove", genRemoveField})
		}
	case p.IsMap() || p.IsFreeForm():
		prefix := "map"
		if p.IsFreeForm() {
			prefix = "free-form"
		}
		if p.Semantic != nil && p.Semantic.Hint == semantic.HintConfig {
			prefix = "config"
		}
		out = append(out,
			namedGen{prefix + "/add-key", genAddKey},
			namedGen{prefix + "/change-key", genChangeKey},
			namedGen{prefix + "/remove-key", genRemoveKey},
		)
		if last == crd.Field {
			out = append(out, namedGen{prefix + "/remove", genRemoveField})
		}
	case p.Type == crd.TypeObject:
		if last == crd.Field {
			out = append(out, namedGen{"object/add", genAddObject})
			// Removing a whole top-level section (spec) is not a meaningful desired-state change.
			if len(p.Path) > 1 {
				out = append(out, namedGen{"object/remove", genRemoveField})
			}
		}
	default:
		out = append(out, g.scalarGenerators(p)...)
		if last == crd.Field {
			out = append(out, namedGen{"scalar/remove", genRemoveField})
		}
		if p.Nullable {
			out = append(out, namedGen{"scalar/null", genNull})
		}
	}
	return coreRules(p, append(out, g.scenariosFor(p)...))
}

// coreRules wraps the generators of a property of a core type with what Kubernetes requires
// wherever the operator renders it: a change the API server refuses in any case is a
// misoperation, setting one of exclusive fields (an env var's value or source, a probe's
// handler, a volume's source) drops the others, and an init container given probes or lifecycle
// hooks becomes a sidecar.
func coreRules(p *crd.Property, gens []namedGen) []namedGen {
	// A list or map whose items are a core type (tolerations) is the core type's too.
	inCore := (p.Items != nil && p.Items.Semantic != nil && p.Items.Semantic.Root != "") ||
		(p.Values != nil && p.Values.Semantic != nil && p.Values.Semantic.Root != "")
	for q := p; q != nil && !inCore; q = q.Parent {
		inCore = q.Semantic != nil && q.Semantic.Root != ""
	}
	if !inCore {
		return gens
	}
	forbidden := coreForbidden(p)
	init := initContainerOf(p)
	// A claim's storage request is no container's: no cpu and memory scenarios.
	claim := p.Parent != nil && p.Parent.Field("accessModes") != nil && p.Path.Last() == "resources"
	out := make([]namedGen, 0, len(gens))
	for _, ng := range gens {
		fn := ng.fn
		if claim && strings.HasPrefix(ng.name, "resources/") {
			continue
		}
		out = append(out, namedGen{ng.name, func(c *caseCtx) (*draft, error) {
			d, err := fn(c)
			if err != nil || d.label != Valid {
				return d, err
			}
			if forbidden != "" {
				// Removals too: their setup state holds what is forbidden.
				return d.asMisoperation(forbidden), nil
			}
			if l := unnamedClaims(p); l != nil && len(d.steps) > 0 && countItems(d.steps[len(d.steps)-1], l.Path) > countItems(c.start, l.Path) {
				return d.asMisoperation("a new claim template needs a name, which the CRD's metadata schema prunes"), nil
			}
			if dup := c.g.duplicateName(p, d.steps); dup != "" {
				return nil, fmt.Errorf("%s: %s", p.Path, dup)
			}
			notes := keepOneOf(p, d.steps)
			consistent, why := keepConsistent(p, d.steps)
			if why != "" {
				return d.asMisoperation(why), nil
			}
			notes = append(append(notes, consistent...), c.completeNew(p, d.steps)...)
			if init != nil {
				sidecars, why := makeSidecars(init, d.steps)
				if why != "" {
					return d.asMisoperation(why), nil
				}
				notes = append(notes, sidecars...)
			}
			if len(notes) > 0 {
				d.description += " (as Kubernetes requires: " + strings.Join(notes, ", ") + ")"
			}
			if why := c.breaksCore(p, d.steps); why != "" {
				return d.asMisoperation(why), nil
			}
			return d, nil
		}})
	}
	return out
}

// makeSidecars sets restartPolicy: Always on every instance of the init container item that has
// probes or lifecycle hooks in the states (the API server refuses them on a plain init
// container) and notes where; it says why when the CRD cannot express it.
func makeSidecars(item *crd.Property, states []map[string]any) (notes []string, why string) {
	for _, st := range states {
		for ptr, m := range objectsAt(st, item.Path) {
			if m["restartPolicy"] == "Always" {
				continue
			}
			needs := false
			for _, k := range sidecarOnly {
				if x, set := m[k]; set && x != nil {
					needs = true
				}
			}
			if !needs {
				continue
			}
			if item.Field("restartPolicy") == nil {
				return nil, "an init container with probes or lifecycle hooks must be a sidecar (restartPolicy: Always), which the CRD cannot express"
			}
			if err := jsonv.Set(st, ptr+"/restartPolicy", "Always"); err != nil {
				return nil, err.Error()
			}
			if n := "setting " + ptr + "/restartPolicy to \"Always\""; !containsString(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	return notes, ""
}

// instances returns the JSON pointers of every value of state at the schema path (all items of
// lists, all entries of maps, in order).
func instances(state map[string]any, path crd.Path) []string {
	paths := jsonv.Expand(state, path)
	out := make([]string, len(paths))
	for i, p := range paths {
		toks, _ := p.Tokens()
		out[i] = jsonv.Pointer(toks)
	}
	return out
}

// objectsAt yields the pointer and the object of every instance of the schema path in state
// that is an object; the objects are state's own (changing one changes state).
func objectsAt(state map[string]any, path crd.Path) iter.Seq2[string, map[string]any] {
	return func(yield func(string, map[string]any) bool) {
		for _, ptr := range instances(state, path) {
			v, _ := jsonv.Get(state, ptr)
			if m, ok := v.(map[string]any); ok && !yield(ptr, m) {
				return
			}
		}
	}
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// scalarGenerators returns the generators for a scalar property by type and constraint.
func (g *Generator) scalarGenerators(p *crd.Property) []namedGen {
	if len(p.Enum) > 0 {
		vals := p.Enum
		if len(vals) > g.opts.MaxEnumCases {
			r := g.seedFor(p.Path.String(), "enum-subset", 0)
			idx := r.Perm(len(vals))[:g.opts.MaxEnumCases]
			sort.Ints(idx)
			sub := make([]any, len(idx))
			for i, j := range idx {
				sub[i] = vals[j]
			}
			vals = sub
		}
		out := make([]namedGen, 0, len(vals))
		for _, v := range vals {
			v := v
			name := nonIdent.ReplaceAllString(fmt.Sprint(v), "_")
			if name == "" {
				name = "empty"
			}
			out = append(out, namedGen{"enum/" + name, func(c *caseCtx) (*draft, error) { return genEnumValue(c, v) }})
		}
		return out
	}
	switch {
	case p.Type == crd.TypeBoolean:
		return []namedGen{{"boolean/flip", genFlip}}
	case p.IntOrString && isQuantity(p):
		return []namedGen{{"quantity/pool", genFromPool}, {"quantity/change", genChange}}
	case p.IntOrString:
		return []namedGen{{"int-or-string/pool", genFromPool}, {"int-or-string/int", genIntOrStringInt}, {"int-or-string/string", genIntOrStringString}}
	case p.Type == crd.TypeInteger || p.Type == crd.TypeNumber:
		out := []namedGen{{"number/pool", genFromPool}, {"number/change", genChange}}
		if p.Minimum != nil {
			out = append(out, namedGen{"number/min", genMin})
		}
		if p.Maximum != nil {
			out = append(out, namedGen{"number/max", genMax})
		}
		return out
	default:
		name := "string/generated"
		switch {
		case p.Pattern != "":
			name = "string/pattern"
		case p.Format != "":
			name = "string/format"
		}
		return []namedGen{{"string/pool", genFromPool}, {name, genChange}}
	}
}

// current returns the value at p in state (after materialising parents), and the effective
// value (the schema default when absent).
func (c *caseCtx) locate(st map[string]any) (ptr string, cur any, had bool, eff any, err error) {
	toks, err := c.ensure(st, c.p)
	if err != nil {
		return "", nil, false, nil, err
	}
	ptr = jsonv.Pointer(toks)
	if n := len(c.p.Path); n > 0 && c.p.Path[n-1].Kind == crd.Value && len(toks) > 0 {
		c.key, _ = toks[len(toks)-1].(string)
	}
	cur, had = jsonv.Get(st, ptr)
	eff = cur
	if !had && c.p.HasDefault {
		eff = c.p.Default
	}
	return ptr, cur, had, eff, nil
}

// setValue draws a state from start where p holds the value fn returns.
func (c *caseCtx) setValue(fn func(eff any, had bool) (any, error)) (map[string]any, any, error) {
	st := jsonv.CopyMap(c.start)
	ptr, _, had, eff, err := c.locate(st)
	if err != nil {
		return nil, nil, err
	}
	v, err := fn(eff, had)
	if err != nil {
		return nil, nil, err
	}
	if err := jsonv.Set(st, ptr, v); err != nil {
		return nil, nil, err
	}
	return st, v, nil
}

// single is a one-step draft.
func single(label Label, desc string, st map[string]any) *draft {
	return &draft{label: label, description: desc, steps: []map[string]any{st}}
}

func genEnumValue(c *caseCtx, v any) (*draft, error) {
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		if eff != nil && jsonv.Equal(eff, v) {
			return nil, errSkip
		}
		return jsonv.Copy(v), nil
	})
	if err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("set %s to enum value %s", c.p.Path, describeValue(v)), st), nil
}

// genFlip flips a boolean. A flag turned on is turned off again in a second step: cases
// accumulate, so otherwise nothing would ever disable what it enables.
func genFlip(c *caseCtx) (*draft, error) {
	var nv, old any
	var had bool
	st, _, err := c.setValue(func(eff any, present bool) (any, error) {
		b, _ := eff.(bool)
		old, nv, had = b, !b, present
		return nv, nil
	})
	if err != nil {
		return nil, err
	}
	d := single(Valid, fmt.Sprintf("flip %s to %v", c.p.Path, nv), st)
	if nv == true {
		ptr, _, _, _, err := c.locate(jsonv.CopyMap(st))
		if err != nil {
			return nil, err
		}
		back := old
		if !had {
			back = nil // absent before: absent again
		}
		off, err := c.undo(st, ptr, back)
		if err != nil {
			return nil, err
		}
		d.turnOffAgain(off, fmt.Sprintf(", then back to %v", old), fmt.Sprintf("back to %v", old))
	}
	return d, nil
}

// undo returns st with what the case set at ptr taken back, and only that, so the step does not
// undo what earlier cases set beside it: the outermost object the case created (absent from the
// start state) is removed, else ptr is set to old (removed when old is nil).
func (c *caseCtx) undo(st map[string]any, ptr string, old any) (map[string]any, error) {
	off := jsonv.CopyMap(st)
	toks, err := jsonv.SplitPointer(ptr)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(toks); i++ {
		anc := jsonv.Pointer(stringTokens(toks[:i]))
		if v, ok := jsonv.Get(c.start, anc); !ok || v == nil {
			return off, jsonv.Remove(off, anc)
		}
	}
	if old == nil {
		return off, jsonv.Remove(off, ptr)
	}
	return off, jsonv.Set(off, ptr, old)
}

func stringTokens(s []string) []jsonv.Token {
	out := make([]jsonv.Token, len(s))
	for i, t := range s {
		out[i] = t
	}
	return out
}

// turnOffAgain appends the step to the state off (what the case turned on, turned off again).
func (d *draft) turnOffAgain(off map[string]any, undo, stepDesc string) {
	for len(d.stepDescs) < len(d.steps) {
		d.stepDescs = append(d.stepDescs, "")
	}
	if len(d.steps) == 1 && d.stepDescs[0] == "" {
		d.stepDescs[0] = d.description
	}
	d.steps = append(d.steps, off)
	d.stepDescs = append(d.stepDescs, stepDesc)
	d.description += undo
	d.undo = undo
}

// genFromPool sets a value taken from the pool (examples, target, LLM) that differs from the
// current one.
func genFromPool(c *caseCtx) (*draft, error) {
	var nv any
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		var cands []any
		if c.key != "" && c.p.Parent != nil {
			// A map value: values seen under the same key first (cpu with cpu values).
			_, keyed := c.g.pool.Keys(c.p.Parent.Path.String())
			for _, v := range keyed[c.key] {
				if c.g.fits(c.p, v.Value) {
					cands = append(cands, v.Value)
				}
			}
			if len(cands) == 0 && isResourceList(c.p.Parent) {
				return nil, errSkip
			}
		}
		if len(cands) == 0 {
			cands = c.candidates(c.p)
		}
		var opts []any
		for _, v := range cands {
			if eff == nil || !jsonv.Equal(v, eff) {
				opts = append(opts, v)
			}
		}
		if len(opts) == 0 {
			return nil, errSkip
		}
		nv = jsonv.Copy(opts[c.r.IntN(len(opts))])
		return nv, nil
	})
	if err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("set %s to %s from the value pool", c.p.Path, describeValue(nv)), st), nil
}

// fits pre-checks the constraints of p that are cheap to test (type, enum, pattern, lengths,
// numeric bounds) on a candidate value; full validation happens later.
func (g *Generator) fits(p *crd.Property, v any) bool {
	if !fitsType(p, v) {
		return false
	}
	if len(p.Enum) > 0 {
		found := false
		for _, e := range p.Enum {
			if jsonv.Equal(e, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if s, ok := v.(string); ok {
		if !g.patternOK(p, s) {
			return false
		}
		n := int64(utf8.RuneCountInString(s))
		if (p.MinLength != nil && n < *p.MinLength) || (p.MaxLength != nil && n > *p.MaxLength) {
			return false
		}
		if p.IntOrString && isQuantity(p) {
			if _, err := resource.ParseQuantity(s); err != nil {
				return false
			}
		}
	}
	if f, ok := jsonv.AsFloat(v); ok && (p.Type == crd.TypeInteger || p.Type == crd.TypeNumber) {
		if p.Minimum != nil && (f < *p.Minimum || (p.ExclusiveMinimum && f == *p.Minimum)) {
			return false
		}
		if p.Maximum != nil && (f > *p.Maximum || (p.ExclusiveMaximum && f == *p.Maximum)) {
			return false
		}
	}
	return true
}

func kindPrefix(p *crd.Property) string {
	switch {
	case p.IntOrString && isQuantity(p):
		return "quantity"
	case p.IntOrString:
		return "int-or-string"
	case p.Type == crd.TypeInteger || p.Type == crd.TypeNumber:
		return "number"
	case p.Type == crd.TypeBoolean:
		return "boolean"
	}
	return "string"
}

// genChange sets a generated value (by type, format, pattern, bounds) different from the current.
func genChange(c *caseCtx) (*draft, error) {
	var nv any
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		v, err := c.scalar(c.p, eff)
		nv = v
		return v, err
	})
	if err != nil {
		return nil, err
	}
	label := Valid
	desc := fmt.Sprintf("set %s to generated value %s", c.p.Path, describeValue(nv))
	switch known := knownValues(c.p); {
	case kindPrefix(c.p) == "string" && c.p.Semantic != nil && c.p.Semantic.Hint == semantic.HintImage && !containsValue(c.candidates(c.p), nv):
		label = Misoperation
		desc = fmt.Sprintf("set %s to an image that does not exist (%s)", c.p.Path, describeValue(nv))
	case clusterRef(c.p) != "" && !containsValue(c.candidates(c.p), nv):
		label = Misoperation
		desc = fmt.Sprintf("set %s to %s, a %s the test cluster does not have", c.p.Path, describeValue(nv), clusterRef(c.p))
	case len(known) > 0 && !containsValue(stringsToAny(known), nv):
		label = Misoperation
		what := c.p.Semantic.Type[strings.LastIndex(c.p.Semantic.Type, "/")+1:]
		if i := strings.IndexByte(what, '#'); i >= 0 {
			// A free string of a core type Kubernetes restricts (a topology key, a field path).
			what = what[:i] + " " + c.p.Path.Last()
		}
		desc = fmt.Sprintf("set %s to %s, which is not a valid %s (known values: %s)", c.p.Path, describeValue(nv),
			what, strings.Join(known, ", "))
	}
	return single(label, desc, st), nil
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func genIntOrStringInt(c *caseCtx) (*draft, error) {
	var nv any
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		if c.domain(c.p) == domPort {
			v, err := c.port(c.p, eff)
			nv = v
			return v, err
		}
		v, err := c.integer(c.p, eff)
		nv = v
		return v, err
	})
	if err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("set %s to integer %v", c.p.Path, nv), st), nil
}

func genIntOrStringString(c *caseCtx) (*draft, error) {
	var nv any
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		if c.domain(c.p) == domPort {
			// A port by name: one the seed's containers declare.
			v, err := c.portName(c.p, eff)
			nv = v
			return v, err
		}
		if c.p.Pattern != "" {
			v, err := c.fromPattern(c.p, eff)
			nv = v
			return v, err
		}
		v := fmt.Sprintf("%d%%", 10*(1+c.r.IntN(9)))
		if eff != nil && jsonv.Equal(v, eff) {
			v = "100%"
		}
		nv = v
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("set %s to string %s", c.p.Path, describeValue(nv)), st), nil
}

func genMin(c *caseCtx) (*draft, error) { return genBound(c, "number/min", true) }
func genMax(c *caseCtx) (*draft, error) { return genBound(c, "number/max", false) }

func genBound(c *caseCtx, name string, lower bool) (*draft, error) {
	var nv any
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		var v any
		if c.p.Type == crd.TypeInteger {
			var n int64
			var ok bool
			if lower {
				n, ok = minInt(c.p)
			} else {
				n, ok = maxInt(c.p)
			}
			if !ok {
				return nil, errSkip
			}
			v = n
		} else {
			if lower {
				f := *c.p.Minimum
				if c.p.ExclusiveMinimum {
					f += 0.01
				}
				v = f
			} else {
				f := *c.p.Maximum
				if c.p.ExclusiveMaximum {
					f -= 0.01
				}
				v = f
			}
		}
		if eff != nil && jsonv.Equal(v, eff) {
			return nil, errSkip
		}
		nv = v
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	label := Valid
	desc := fmt.Sprintf("set %s to its %s bound %v", c.p.Path, map[bool]string{true: "lower", false: "upper"}[lower], nv)
	if !lower && c.p.Semantic != nil && c.p.Semantic.Hint == semantic.HintReplicas {
		if n, ok := jsonv.AsInt(nv); ok && n > 50 {
			label = Misoperation
			desc += " (more replicas than a small cluster holds)"
		}
	}
	return single(label, desc, st), nil
}

// genRemoveField deletes an optional property that is present, returning it to its default.
func genRemoveField(c *caseCtx) (*draft, error) {
	if c.p.Required {
		return nil, errSkip
	}
	st := jsonv.CopyMap(c.start)
	ptr, _, had, _, err := c.locate(st)
	if err != nil {
		return nil, err
	}
	if !had {
		return nil, errSkip
	}
	if err := jsonv.Remove(st, ptr); err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("remove %s", c.p.Path)
	if c.p.HasDefault {
		desc += fmt.Sprintf(" (back to its default %s)", describeValue(c.p.Default))
	}
	return single(Valid, desc, st), nil
}

func genNull(c *caseCtx) (*draft, error) {
	st, _, err := c.setValue(func(eff any, had bool) (any, error) {
		if had && eff == nil {
			return nil, errSkip
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("set nullable %s to null", c.p.Path), st), nil
}

// genAddObject adds an absent object with its required fields.
func genAddObject(c *caseCtx) (*draft, error) {
	st := jsonv.CopyMap(c.start)
	ptr, cur, had, _, err := c.locate(st)
	if err != nil {
		return nil, err
	}
	if had && cur != nil {
		return nil, errSkip
	}
	v := c.rich(c.p)
	if m, ok := v.(map[string]any); ok {
		if t := enableToggle(c.p); t != nil && effectiveOf(t, m[t.Name()]) == false {
			// Adding the section of a feature turns the feature on.
			m[t.Name()] = true
		}
	}
	if m, ok := v.(map[string]any); ok && !effectiveDiff(map[string]bool{}, c.p, nil, m) {
		// Only defaults (or nothing): the operator would read no change.
		c.enrich(c.p, m)
	}
	if !effectiveDiff(map[string]bool{}, c.p, nil, v) {
		return nil, fmt.Errorf("no value of %s differs from its defaults", c.p.Path)
	}
	if err := jsonv.Set(st, ptr, v); err != nil {
		return nil, err
	}
	for _, f := range c.nested {
		// What enrich added deeper gets what Kubernetes requires of it, as an append would.
		if _, why := keepConsistent(f, []map[string]any{st}); why != "" {
			return nil, fmt.Errorf("%s: %s", f.Path, why)
		}
	}
	d := single(Valid, fmt.Sprintf("add %s with %s", c.p.Path, describeValue(v)), st)
	off, err := c.undo(st, ptr, nil)
	if err != nil {
		return nil, err
	}
	d.turnOffAgain(off, ", then remove it again", "remove "+c.p.Path.String())
	return d, nil
}

// genAppend appends a new element to a list (creating the list when absent).
func genAppend(c *caseCtx) (*draft, error) {
	st := jsonv.CopyMap(c.start)
	ptr, cur, _, _, err := c.locate(st)
	if err != nil {
		return nil, err
	}
	list, _ := cur.([]any)
	if c.p.MaxItems != nil && int64(len(list)) >= *c.p.MaxItems {
		return nil, errSkip
	}
	item := c.newItem(c.p, list)
	if collides(c.p, list, item) {
		return nil, fmt.Errorf("no distinct element for %s", c.p.Path)
	}
	list = append(append([]any{}, list...), item)
	if err := jsonv.Set(st, ptr, list); err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("append %s to %s", describeValue(item), c.p.Path), st), nil
}

// genRemoveLast removes the last element of a non-empty list (keeping minItems).
func genRemoveLast(c *caseCtx) (*draft, error) {
	st := jsonv.CopyMap(c.start)
	ptr, cur, _, _, err := c.locate(st)
	if err != nil {
		return nil, err
	}
	list, _ := cur.([]any)
	if len(list) == 0 || (c.p.MinItems != nil && int64(len(list)) <= *c.p.MinItems) {
		return nil, errSkip
	}
	if err := jsonv.Set(st, ptr, append([]any{}, list[:len(list)-1]...)); err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("remove the last of %d elements of %s", len(list), c.p.Path), st), nil
}

// mapOf returns the map at p (materialising parents), creating it empty when absent.
func (c *caseCtx) mapOf(st map[string]any) (string, map[string]any, error) {
	ptr, cur, _, _, err := c.locate(st)
	if err != nil {
		return "", nil, err
	}
	m, ok := cur.(map[string]any)
	if !ok {
		m = map[string]any{}
	} else {
		m = jsonv.CopyMap(m)
	}
	return ptr, m, nil
}

// mapValue returns a value for key in the map (or free-form object) p: from the pool when seen,
// else generated for the value schema.
func (c *caseCtx) mapValue(key string, avoid any) any {
	_, vals := c.g.pool.Keys(c.p.Path.String())
	var opts []any
	for _, v := range vals[key] {
		if avoid == nil || !jsonv.Equal(v.Value, avoid) {
			opts = append(opts, v.Value)
		}
	}
	if len(opts) > 0 {
		return jsonv.Copy(opts[c.r.IntN(len(opts))])
	}
	if c.p.Values != nil {
		vp := c.p.Values
		if vp.Type == crd.TypeObject || vp.Type == crd.TypeArray {
			return c.minimal(vp)
		}
		if isQuantity(vp) || isResourceList(c.p) {
			if q, err := c.quantity(vp, key, avoid); err == nil {
				return q
			}
		}
		if cands := c.candidates(vp); len(cands) > 0 && avoid == nil {
			return jsonv.Copy(cands[c.r.IntN(len(cands))])
		}
		if v, err := c.scalar(vp, avoid); err == nil {
			return v
		}
		return c.fill(vp)
	}
	if isResourceList(c.p) {
		// A free-form resource list: a quantity for the resource.
		if q, err := c.quantity(c.p, key, avoid); err == nil {
			return q
		}
	}
	// Free-form: keep the type of the value being replaced.
	switch avoid.(type) {
	case bool:
		return !avoid.(bool)
	case int64, float64:
		n, _ := jsonv.AsFloat(avoid)
		return int64(n) + 1 + int64(c.r.IntN(9))
	case string:
		if v, ok := c.likeValue(avoid.(string)); ok {
			return v
		}
	}
	return "gauntlet-" + c.word(5)
}

func genAddKey(c *caseCtx) (*draft, error) {
	st := jsonv.CopyMap(c.start)
	ptr, m, err := c.mapOf(st)
	if err != nil {
		return nil, err
	}
	if c.p.MaxProperties != nil && int64(len(m)) >= *c.p.MaxProperties {
		return nil, errSkip
	}
	k := c.newKey(c.p, m)
	m[k] = c.mapValue(k, nil)
	if err := jsonv.Set(st, ptr, m); err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("add key %q = %s to %s", k, describeValue(m[k]), c.p.Path), st), nil
}

// freeKeys copies the start state and returns the copy, the pointer to the
// property's map in it, the map, and its keys that name no declared field
// (sorted), the keys a map case may change or remove.
func (c *caseCtx) freeKeys() (st map[string]any, ptr string, m map[string]any, keys []string, err error) {
	st = jsonv.CopyMap(c.start)
	ptr, m, err = c.mapOf(st)
	if err != nil {
		return nil, "", nil, nil, err
	}
	for _, k := range jsonv.SortedKeys(m) {
		if c.p.Field(k) == nil {
			keys = append(keys, k)
		}
	}
	return st, ptr, m, keys, nil
}

func genChangeKey(c *caseCtx) (*draft, error) {
	st, ptr, m, keys, err := c.freeKeys()
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errSkip
	}
	k := keys[c.r.IntN(len(keys))]
	old := m[k]
	nv := c.mapValue(k, old)
	if jsonv.Equal(nv, old) {
		return nil, fmt.Errorf("no different value for key %q of %s", k, c.p.Path)
	}
	m[k] = nv
	if err := jsonv.Set(st, ptr, m); err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("change key %q of %s from %s to %s", k, c.p.Path, describeValue(old), describeValue(nv)), st), nil
}

func genRemoveKey(c *caseCtx) (*draft, error) {
	st, ptr, m, keys, err := c.freeKeys()
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 || (c.p.MinProperties != nil && int64(len(m)) <= *c.p.MinProperties) {
		return nil, errSkip
	}
	k := keys[c.r.IntN(len(keys))]
	delete(m, k)
	if err := jsonv.Set(st, ptr, m); err != nil {
		return nil, err
	}
	return single(Valid, fmt.Sprintf("remove key %q from %s", k, c.p.Path), st), nil
}
