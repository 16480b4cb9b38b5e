package inputgen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Dependency says that changes inside a sub-tree are only meaningful when predicates hold, e.g.
// spec.tls.* only with spec.tls.enabled true. Enabled-style toggles are inferred; targets declare
// the rest.
type Dependency struct {
	// Subtree is a property path in string form, e.g. "spec.persistence"; the dependency applies to
	// it and every property below it.
	Subtree string `json:"subtree"`
	// When lists the predicates that must hold.
	When []Predicate `json:"when"`
	// Setup makes the predicates true; when empty it is derived from When (equals -> set,
	// absent -> remove, exists -> set a minimal valid value, notEquals on a boolean -> set the
	// other value).
	Setup []Change `json:"setup,omitempty"`
	// Inferred is true for toggles found by inference.
	Inferred bool `json:"inferred,omitempty"`
	// Toggle is the property path of the inferred toggle (its own changes are not guarded).
	Toggle string `json:"toggle,omitempty"`
	// Rule is the x-kubernetes-validations rule an inferred guard comes from: the sub-tree may
	// only be set when the rule's condition holds.
	Rule string `json:"rule,omitempty"`
	// StrictlyBelow limits the dependency to properties below Subtree (for a toggle that lives
	// inside the sub-tree, adding or removing the sub-tree itself is not guarded).
	StrictlyBelow bool `json:"strictlyBelow,omitempty"`
}

// dependencies validates the target's dependencies and adds inferred toggles.
func (g *Generator) dependencies() ([]Dependency, error) {
	var out []Dependency
	for i, d := range g.opts.Dependencies {
		if g.schema.Lookup(d.Subtree) == nil {
			return nil, fmt.Errorf("dependency %d: sub-tree %q is not a property of %s", i+1, d.Subtree, g.schema.Kind)
		}
		if len(d.When) == 0 {
			return nil, fmt.Errorf("dependency %d (%s): no predicate: declare at least one", i+1, d.Subtree)
		}
		for _, p := range d.When {
			if _, err := jsonv.SplitPointer(p.Path); err != nil {
				return nil, fmt.Errorf("dependency %d (%s): %w", i+1, d.Subtree, err)
			}
			switch p.Op {
			case PredEquals, PredNotEquals, PredExists, PredAbsent:
			default:
				return nil, fmt.Errorf("dependency %d (%s): unknown predicate op %q (use equals, notEquals, exists or absent)", i+1, d.Subtree, p.Op)
			}
		}
		if len(d.Setup) == 0 {
			setup, err := g.deriveSetup(d.When)
			if err != nil {
				return nil, fmt.Errorf("dependency %d (%s): %w", i+1, d.Subtree, err)
			}
			d.Setup = setup
		}
		out = append(out, d)
	}
	if !g.opts.DisableToggleInference {
		out = append(out, g.inferToggles()...)
	}
	guards, st := g.inferRuleGuards()
	g.guardStats = st
	out = append(out, guards...)
	g.implied = g.inferImplications()
	for i := range out {
		out[i].Setup = g.withImplied(out[i].Setup)
	}
	return out, nil
}

// inferToggles finds objects (outside lists) guarded by a boolean field named enabled/enable
// (switched on) or disabled/disable (switched off), or by a sibling boolean <name>Enabled or
// enable<Name>.
func (g *Generator) inferToggles() []Dependency {
	var out []Dependency
	for _, p := range g.schema.Properties() {
		if p.Type != crd.TypeObject || p.InsideList() {
			continue
		}
		for _, f := range p.Fields {
			if f.Semantic == nil || f.Semantic.Hint != semantic.HintToggle {
				continue
			}
			var want bool
			switch f.Name() {
			case "enabled", "enable":
				want = true
			case "disabled", "disable":
				want = false
			default:
				continue
			}
			d := g.toggleDep(p, f, want)
			d.StrictlyBelow = true
			out = append(out, d)
		}
		if p.Parent == nil {
			continue
		}
		name := p.Name()
		title := strings.ToUpper(name[:1]) + name[1:]
		for _, sib := range []string{name + "Enabled", "enable" + title, name + "Enable"} {
			if f := p.Parent.Field(sib); f != nil && f.Type == crd.TypeBoolean {
				out = append(out, g.toggleDep(p, f, true))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Subtree < out[j].Subtree })
	return out
}

func (g *Generator) toggleDep(obj, toggle *crd.Property, want bool) Dependency {
	ptr, _ := pointerOf(toggle.Path)
	pred := Predicate{Path: ptr, Op: PredEquals, Value: want, Reason: "toggle " + toggle.Path.String() + " guards " + obj.Path.String()}
	if toggle.HasDefault {
		pred.Default = toggle.Default
	} else {
		pred.Default = false
	}
	return Dependency{
		Subtree:  obj.Path.String(),
		When:     []Predicate{pred},
		Setup:    []Change{{Op: OpSet, Path: ptr, Value: want}},
		Inferred: true,
		Toggle:   toggle.Path.String(),
	}
}

// deriveSetup turns predicates into the changes that make them true.
func (g *Generator) deriveSetup(preds []Predicate) ([]Change, error) {
	var out []Change
	for _, p := range preds {
		switch p.Op {
		case PredEquals:
			out = append(out, Change{Op: OpSet, Path: p.Path, Value: p.Value})
		case PredAbsent:
			out = append(out, Change{Op: OpRemove, Path: p.Path})
		case PredNotEquals:
			b, ok := p.Value.(bool)
			if !ok {
				return nil, fmt.Errorf("cannot derive a setup for %s notEquals %v: declare the setup", p.Path, p.Value)
			}
			out = append(out, Change{Op: OpSet, Path: p.Path, Value: !b})
		case PredExists:
			prop := g.propertyAtPointer(p.Path)
			if prop == nil {
				return nil, fmt.Errorf("cannot derive a setup for %s exists: no such property; declare the setup", p.Path)
			}
			c := &caseCtx{g: g, p: prop, r: g.seedFor(prop.Path.String(), "setup", 0)}
			out = append(out, Change{Op: OpSet, Path: p.Path, Value: c.fill(prop)})
		}
	}
	return out, nil
}

// propertyAtPointer maps a concrete JSON pointer to its schema property.
func (g *Generator) propertyAtPointer(ptr string) *crd.Property {
	toks, err := jsonv.SplitPointer(ptr)
	if err != nil {
		return nil
	}
	node := g.schema.Root
	for _, t := range toks {
		var next *crd.Property
		if f := node.Field(t); f != nil {
			next = f
		} else if node.Items != nil && isIndex(t) {
			next = node.Items
		} else {
			next = node.Values
		}
		if next == nil {
			return nil
		}
		node = next
	}
	return node
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// predicatesFor collects the predicates (and their setup) that guard p. A setup that sets a
// field guarded in turn (backup needs persistence, persistence needs a StatefulSet) is preceded
// by that field's own predicates and setup.
func (g *Generator) predicatesFor(p *crd.Property) ([]Predicate, []Change, error) {
	return g.predicatesWithin(p, map[string]bool{})
}

func (g *Generator) predicatesWithin(p *crd.Property, visiting map[string]bool) ([]Predicate, []Change, error) {
	path := p.Path.String()
	if visiting[path] {
		return nil, nil, nil
	}
	visiting[path] = true
	defer delete(visiting, path)
	preds, setup, err := g.ownPredicates(p)
	if err != nil || len(setup) == 0 {
		return preds, setup, err
	}
	var allPreds []Predicate
	var allSetup []Change
	for _, ch := range setup {
		if ch.Op != OpSet {
			continue
		}
		target := g.propertyAtPointer(ch.Path)
		if target == nil {
			continue
		}
		ip, is, err := g.predicatesWithin(target, visiting)
		if err != nil {
			return nil, nil, err
		}
		allPreds = append(allPreds, ip...)
		allSetup = append(allSetup, is...)
	}
	return append(allPreds, preds...), append(allSetup, setup...), nil
}

// ownPredicates collects the predicates (and their setup) of the dependencies whose sub-tree
// holds p.
func (g *Generator) ownPredicates(p *crd.Property) ([]Predicate, []Change, error) {
	var preds []Predicate
	var setup []Change
	path := p.Path.String()
	for _, d := range g.deps {
		sub, err := crd.ParsePath(d.Subtree)
		if err != nil {
			return nil, nil, fmt.Errorf("dependency sub-tree %q: %w", d.Subtree, err)
		}
		if !p.Path.HasPrefix(sub) || (d.StrictlyBelow && len(p.Path) == len(sub)) {
			continue
		}
		if d.Toggle != "" && (path == d.Toggle || strings.HasPrefix(path, d.Toggle+".")) {
			continue
		}
		preds = append(preds, d.When...)
		setup = append(setup, d.Setup...)
	}
	return preds, setup, nil
}
