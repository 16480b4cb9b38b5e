package inputgen

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// maxCoreRepairs bounds the rounds of repair guided by the API server's causes for one candidate.
const maxCoreRepairs = 3

// coreAccept has the API server judge the core-typed values a valid test case introduces. When it
// refuses one, the candidate is repaired by what the causes name (repairCore) and finished again,
// for up to maxCoreRepairs rounds. It returns the accepted test case and whether it was repaired,
// or the first refusal when no repair is accepted.
func (g *Generator) coreAccept(ctx context.Context, p *crd.Property, d *draft, tc *TestCase, states []map[string]any, start map[string]any,
	finish func(*draft) (*TestCase, []map[string]any, refOutcome, error), r *rand.Rand) (*TestCase, []map[string]any, *coreRefused, bool, error) {
	var first *coreRefused
	for round := 0; ; round++ {
		ref, err := g.coreRefusal(ctx, start, states[len(states)-len(tc.Steps):])
		if err != nil {
			return nil, nil, nil, false, err
		}
		if ref == nil {
			return tc, states, nil, round > 0, nil
		}
		if first == nil {
			first = ref
		}
		if round == maxCoreRepairs {
			return nil, nil, first, false, nil
		}
		rd, ok := g.repairCore(p, d, ref, r)
		if !ok {
			return nil, nil, first, false, nil
		}
		rtc, rstates, _, err := finish(rd)
		if err != nil || rtc.Label != Valid {
			return nil, nil, first, false, nil
		}
		d, tc, states = rd, rtc, rstates
	}
}

// repairCore returns d with what the server's causes name repaired in every step: a field it
// requires is set (from the seed, the examples, Kubernetes' known values, or generated), a field it
// forbids is removed, a name that is not a DNS label gets a fresh one. The test case's own property
// (and what encloses it) is never touched: a change the server refuses is a misoperation, not
// something to undo. false when no cause names anything repairable.
func (g *Generator) repairCore(p *crd.Property, d *draft, ref *coreRefused, r *rand.Rand) (*draft, bool) {
	steps := make([]map[string]any, len(d.steps))
	for i, st := range d.steps {
		steps[i] = jsonv.CopyMap(st)
	}
	c := &caseCtx{g: g, p: p, r: r}
	// Fields are set where the refused value exists, with the objects on the way to them.
	rootToks, ok := fieldPathTokens(ref.path)
	if !ok {
		return nil, false
	}
	root := jsonv.Pointer(rootToks)
	var notes []string
	for _, cause := range ref.causes {
		field, msg, ok := strings.Cut(cause, ": ")
		if !ok {
			continue
		}
		toks, ok := fieldPathTokens(field)
		if !ok || len(toks) == 0 {
			continue
		}
		prop, toks, _ := causeProperty(g.schema.Root, toks)
		if prop == nil {
			continue
		}
		// own: the cause names the test case's property or what encloses it.
		own := p.Path.HasPrefix(prop.Path)
		ptr := jsonv.Pointer(toks)
		var note string
		sibling := func(name string) (string, *crd.Property) {
			if prop.Parent == nil || prop.Parent.Field(name) == nil || p.Path.HasPrefix(prop.Parent.Field(name).Path) {
				return "", nil
			}
			return jsonv.Pointer(append(append([]jsonv.Token{}, toks[:len(toks)-1]...), name)), prop.Parent.Field(name)
		}
		switch {
		case strings.Contains(msg, "without restartPolicy=Always"):
			// Probes and lifecycle hooks of an init container make it a sidecar.
			if sp, sprop := sibling("restartPolicy"); sprop != nil && g.fits(sprop, "Always") && setWherePresent(steps, root, sp, "Always") {
				note = "making the init container a sidecar (restartPolicy Always)"
			}
		case strings.Contains(msg, "when `value` is not empty"):
			// An environment variable takes its value or its source, not both.
			if sp, sprop := sibling("value"); sprop != nil && !sprop.Required && removeWherePresent(steps, sp) {
				note = "removing the variable's value, which its source replaces"
			}
		case own:
		case strings.HasPrefix(msg, "Required value"):
			v := c.fill(prop)
			if l, ok := v.([]any); ok && len(l) == 0 && prop.Items != nil {
				v = []any{c.newItem(prop, nil)}
			}
			if m, ok := v.(map[string]any); ok && len(m) == 0 {
				continue
			}
			if setWherePresent(steps, root, ptr, v) {
				note = "setting " + field + " to " + describeValue(v)
			}
		case strings.HasPrefix(msg, "Forbidden") && !prop.Required:
			if removeWherePresent(steps, ptr) {
				note = "removing " + field
			}
		case strings.Contains(msg, "RFC 1123") && prop.Type == crd.TypeString:
			name := "gauntlet-" + c.word(5)
			if len(validation.IsDNS1123Label(name)) == 0 && g.fits(prop, name) && setWherePresent(steps, root, ptr, name) {
				note = "naming " + field + " " + name
			}
		case strings.HasPrefix(msg, "Unsupported value"):
			// The server lists what it supports.
			_, list, _ := strings.Cut(msg, "supported values: ")
			var opts []any
			for _, q := range strings.Split(list, ", ") {
				if v, err := strconv.Unquote(strings.TrimSpace(q)); err == nil && g.fits(prop, v) {
					opts = append(opts, v)
				}
			}
			if len(opts) > 0 {
				v := opts[r.IntN(len(opts))]
				if setWherePresent(steps, root, ptr, v) {
					note = "setting " + field + " to " + describeValue(v)
				}
			}
		case strings.HasPrefix(msg, "Invalid value") && prop.IsLeaf():
			// Another value the seed, the examples or Kubernetes know for the field.
			cur, _ := jsonv.Get(steps[len(steps)-1], ptr)
			var opts []any
			for _, v := range c.candidates(prop) {
				if !jsonv.Equal(v, cur) {
					opts = append(opts, v)
				}
			}
			if len(opts) > 0 {
				v := opts[r.IntN(len(opts))]
				if setWherePresent(steps, root, ptr, v) {
					note = "setting " + field + " to " + describeValue(v)
				}
			}
		}
		if note != "" && !containsString(notes, note) {
			notes = append(notes, note)
		}
	}
	if len(notes) == 0 {
		return nil, false
	}
	return &draft{generator: d.generator, label: d.label, steps: steps, stepDescs: d.stepDescs, undo: d.undo,
		description: d.description + " (as the API server requires: " + strings.Join(notes, "; ") + ")"}, true
}

// setWherePresent sets ptr to v (creating the objects on the way) in every state holding root; it
// reports whether any state changed.
func setWherePresent(states []map[string]any, root, ptr string, v any) bool {
	changed := false
	for _, st := range states {
		if _, ok := jsonv.Get(st, root); !ok {
			continue
		}
		if cur, ok := jsonv.Get(st, ptr); ok && jsonv.Equal(cur, v) {
			continue
		}
		if err := jsonv.Set(st, ptr, jsonv.Copy(v)); err == nil {
			changed = true
		}
	}
	return changed
}

// removeWherePresent removes ptr from every state holding it; it reports whether any changed.
func removeWherePresent(states []map[string]any, ptr string) bool {
	changed := false
	for _, st := range states {
		if _, ok := jsonv.Get(st, ptr); !ok {
			continue
		}
		if err := jsonv.Remove(st, ptr); err == nil {
			changed = true
		}
	}
	return changed
}
