package inputgen

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// hasFieldRE finds the optional fields a CEL rule tests for presence: has(self.x).
var hasFieldRE = regexp.MustCompile(`has\(self\.([A-Za-z_][A-Za-z0-9_]*)\)`)

// repairCEL tries to make a rejected draft valid when an x-kubernetes-validations rule failed
// because of an optional sibling the rule tests with has(self.x), e.g. "persistence requires
// workloadType StatefulSet" when switching to Deployment: it removes that sibling from every step.
// It returns one repaired draft per candidate sibling (nil when nothing applies).
func (g *Generator) repairCEL(p *crd.Property, d *draft, err error) []*draft {
	var ie *InvalidError
	if !errors.As(err, &ie) {
		return nil
	}
	var out []*draft
	seen := map[string]bool{}
	for _, fe := range ie.Errs {
		toks, ok := fieldPathTokens(fe.Field)
		if !ok {
			continue
		}
		prop := g.propertyAtTokens(toks)
		if prop == nil || len(prop.Rules) == 0 {
			continue
		}
		for _, r := range prop.Rules {
			if r.Message != "" && !strings.Contains(fe.Detail, r.Message) {
				continue
			}
			for _, m := range hasFieldRE.FindAllStringSubmatch(r.Rule, -1) {
				f := prop.Field(m[1])
				if f == nil || f.Required || p.Path.HasPrefix(f.Path) || f.Path.HasPrefix(p.Path) {
					continue
				}
				ptr := jsonv.Pointer(append(append([]jsonv.Token{}, toks...), m[1]))
				if seen[ptr] {
					continue
				}
				seen[ptr] = true
				nd := &draft{generator: d.generator, label: d.label, stepDescs: d.stepDescs, undo: d.undo,
					description: d.description + " (removing " + f.Path.String() + ", which a validation rule forbids with it)"}
				changed := false
				for _, st := range d.steps {
					cp := jsonv.CopyMap(st)
					if _, ok := jsonv.Get(cp, ptr); ok {
						changed = true
						if err := jsonv.Remove(cp, ptr); err != nil {
							continue
						}
					}
					nd.steps = append(nd.steps, cp)
				}
				if changed && len(nd.steps) == len(d.steps) {
					out = append(out, nd)
				}
			}
		}
	}
	return out
}

// fieldPathTokens parses a field.Path string ("spec.a[0].b[key]") into tokens.
func fieldPathTokens(s string) ([]jsonv.Token, bool) {
	if s == "" || s == "<nil>" {
		return nil, true
	}
	var out []jsonv.Token
	for _, part := range strings.Split(s, ".") {
		name := part
		var subs []string
		if i := strings.IndexByte(part, '['); i >= 0 {
			name = part[:i]
			rest := part[i:]
			for strings.HasPrefix(rest, "[") {
				j := strings.IndexByte(rest, ']')
				if j < 0 {
					return nil, false
				}
				subs = append(subs, rest[1:j])
				rest = rest[j+1:]
			}
		}
		if name != "" {
			out = append(out, name)
		}
		for _, sub := range subs {
			if n, err := strconv.Atoi(sub); err == nil {
				out = append(out, n)
			} else {
				out = append(out, sub)
			}
		}
	}
	return out, true
}

// propertyAtTokens maps concrete tokens to the schema property.
func (g *Generator) propertyAtTokens(toks []jsonv.Token) *crd.Property {
	node := g.schema.Root
	for _, t := range toks {
		node = stepInto(node, t)
		if node == nil {
			return nil
		}
	}
	return node
}
