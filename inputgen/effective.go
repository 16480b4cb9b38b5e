package inputgen

import (
	"maps"
	"regexp"
	"slices"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// effectiveChanges lists the properties whose effective value differs between two desired states:
// a value counts as what the operator reads, so an absent property is its schema default, an
// absent object is its default (or the defaults of its fields), and setting a property to its
// default or to what it already was changes nothing. A property is listed with its ancestors.
func (g *Generator) effectiveChanges(a, b map[string]any) []string {
	set := map[string]bool{}
	spec := g.schema.Root.Field("spec")
	if spec == nil {
		return nil
	}
	av, _ := jsonv.Get(a, "/spec")
	bv, _ := jsonv.Get(b, "/spec")
	effectiveDiff(set, spec, av, bv)
	return slices.Sorted(maps.Keys(set))
}

// effectiveOf is v, or what an absent v means: node's default, false for a boolean without one
// (an operator reads an absent flag as off).
func effectiveOf(node *crd.Property, v any) any {
	switch {
	case v != nil:
		return v
	case node.HasDefault:
		return node.Default
	case node.Type == crd.TypeBoolean:
		return false
	}
	return nil
}

// effectiveDiff marks node (and reports true) when the effective values a and b differ, marking
// every property below node whose effective value differs as well.
func effectiveDiff(set map[string]bool, node *crd.Property, a, b any) bool {
	a, b = effectiveOf(node, a), effectiveOf(node, b)
	changed := false
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	switch {
	case (aIsMap || a == nil) && (bIsMap || b == nil) && (aIsMap || bIsMap) && !node.IsFreeForm() && !node.EmbeddedResource:
		if t := enableToggle(node); t != nil && effectiveOf(t, am[t.Name()]) == false && effectiveOf(t, bm[t.Name()]) == false {
			// A feature off before and after: what it would be configured with is not read.
			break
		}
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, f := range node.Fields {
			if f.HasDefault {
				keys[f.Name()] = true
			}
		}
		for k := range keys {
			child := node.Field(k)
			if child == nil {
				child = node.Values
			}
			if child == nil {
				if !jsonv.Equal(am[k], bm[k]) {
					changed = true
				}
				continue
			}
			_, inA := am[k]
			_, inB := bm[k]
			if node.Field(k) == nil && inA != inB {
				// A map entry added or removed is a change whatever its value.
				changed = true
				set[child.Path.String()] = true
				markValue(set, child, am[k])
				markValue(set, child, bm[k])
				continue
			}
			if effectiveDiff(set, child, am[k], bm[k]) {
				changed = true
			}
		}
	case (aIsList || a == nil) && (bIsList || b == nil) && (aIsList || bIsList) && node.Items != nil:
		if len(al) != len(bl) {
			changed = true
		}
		for i := 0; i < max(len(al), len(bl)); i++ {
			var x, y any
			if i < len(al) {
				x = al[i]
			}
			if i < len(bl) {
				y = bl[i]
			}
			if x == nil || y == nil {
				// A new (or removed) element: every property it holds that is not its default.
				if effectiveDiff(set, node.Items, x, y) {
					changed = true
				} else if x != nil || y != nil {
					set[node.Items.Path.String()] = true
				}
				continue
			}
			if effectiveDiff(set, node.Items, x, y) {
				changed = true
			}
		}
	default:
		changed = !jsonv.Equal(a, b)
	}
	if changed {
		set[node.Path.String()] = true
	}
	return changed
}

// enableToggle returns the boolean field that switches the object node's feature on (enabled,
// enable, fooEnabled), or nil.
func enableToggle(node *crd.Property) *crd.Property {
	for _, f := range node.Fields {
		if f.Type == crd.TypeBoolean && enableRE.MatchString(f.Name()) {
			return f
		}
	}
	return nil
}

var enableRE = regexp.MustCompile(`^enabled?$`)
