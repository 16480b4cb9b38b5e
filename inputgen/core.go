package inputgen

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Core-typed values: sub-objects the semantic mapping matched to a Kubernetes core type
// (containers, affinity, tolerations, PVC templates, Services, label selectors, probes, …) end up
// in real Pods, StatefulSets and Services the operator renders, and the API server validates them
// there with rules a CRD's schema does not carry (a selector requirement with Exists and values,
// a container without an image, a PVC without access modes). A CoreValidator asks the server.

// CoreValidator judges real objects the way the API server will. The implementation that starts
// an API server and dry-runs creates lives in cluster/apicheck; inputgen never talks to a
// cluster itself.
type CoreValidator interface {
	// Validate returns why the API server refuses obj (a complete object: apiVersion, kind,
	// metadata.name, …) — its causes as "field: message" joined by "; " — or "" when it accepts
	// it. err is set only when the server could not be asked.
	Validate(ctx context.Context, obj map[string]any) (reason string, err error)
}

// CoreStats count the API server's verdicts on core-typed values during generation.
type CoreStats struct {
	// Checked counts distinct wrapped objects sent to the server; CacheHits the verdicts reused.
	Checked   int `json:"checked"`
	CacheHits int `json:"cacheHits"`
	// Redrawn counts valid candidates drawn again because the server refused a core-typed value
	// they introduced.
	Redrawn int `json:"redrawn"`
	// Repaired counts valid candidates made acceptable by completing or removing what the
	// server's causes named (a required field the candidate left out, a field it forbids).
	Repaired int `json:"repaired"`
	// Misoperation counts test cases labelled misoperations because no draw passed.
	Misoperation int `json:"misoperation"`
}

// coreCache memoises verdicts by the canonical JSON of the wrapped object (which holds the core
// type, the value and where it sits); concurrent requests for one object share a single call.
// Errors are not cached.
type coreCache struct {
	v          CoreValidator
	mu         sync.Mutex
	m          map[string]*coreVerdict
	hits, asks atomic.Int64
}

type coreVerdict struct {
	done   chan struct{}
	reason string
	err    error
}

func newCoreCache(v CoreValidator) *coreCache {
	return &coreCache{v: v, m: map[string]*coreVerdict{}}
}

// validate returns the (cached) verdict on obj.
func (c *coreCache) validate(ctx context.Context, obj map[string]any) (string, error) {
	b, err := json.Marshal(obj) // map keys sorted: canonical
	if err != nil {
		return "", fmt.Errorf("core validation: encode object: %w", err)
	}
	key := string(b)
	c.mu.Lock()
	if e, ok := c.m[key]; ok {
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return "", fmt.Errorf("core validation: %w", ctx.Err())
		}
		if e.err == nil {
			c.hits.Add(1)
			return e.reason, nil
		}
		return c.validate(ctx, obj)
	}
	e := &coreVerdict{done: make(chan struct{})}
	c.m[key] = e
	c.mu.Unlock()
	c.asks.Add(1)
	e.reason, e.err = c.v.Validate(ctx, obj)
	if e.err != nil {
		c.mu.Lock()
		delete(c.m, key)
		c.mu.Unlock()
	}
	close(e.done)
	return e.reason, e.err
}

// coreValue is one core-typed value found in a state.
type coreValue struct {
	prop *crd.Property
	toks []jsonv.Token
	// value holds only the fields the mapping matched to the core type.
	value map[string]any
}

func (cv coreValue) ptr() string { return jsonv.Pointer(cv.toks) }

// isCoreRoot reports whether p is a sub-schema matched to a core type as a whole.
func isCoreRoot(p *crd.Property) bool {
	return p.Semantic != nil && p.Semantic.Root != "" && p.Semantic.Field == "" && p.Semantic.Root == p.Path.String()
}

// coreValues lists the core-typed values of state (outside status), in a stable order.
func coreValues(s *crd.Schema, state map[string]any) []coreValue {
	var out []coreValue
	var walk func(p *crd.Property, v any, toks []jsonv.Token)
	walk = func(p *crd.Property, v any, toks []jsonv.Token) {
		switch x := v.(type) {
		case map[string]any:
			if len(toks) > 0 && isCoreRoot(p) {
				out = append(out, coreValue{prop: p, toks: toks, value: projectCore(p, x, p.Semantic.Root).(map[string]any)})
			}
			for _, k := range jsonv.SortedKeys(x) {
				if len(toks) == 0 && (k == "status" || k == "metadata" || k == "apiVersion" || k == "kind") {
					continue
				}
				if child := stepInto(p, k); child != nil {
					walk(child, x[k], append(toks[:len(toks):len(toks)], k))
				}
			}
		case []any:
			if p.Items == nil {
				return
			}
			for i, e := range x {
				walk(p.Items, e, append(toks[:len(toks):len(toks)], i))
			}
		}
	}
	walk(s.Root, state, nil)
	return out
}

// projectCore keeps the parts of v (at p) that the mapping matched to the core type of root:
// fields the CRD adds next to the core type's are the operator's own and never reach the object.
func projectCore(p *crd.Property, v any, root string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			child := stepInto(p, k)
			switch {
			case child == nil:
				if p.PreserveUnknownFields || p.AnyValues {
					out[k] = jsonv.Copy(e)
				}
			case child.Semantic != nil && child.Semantic.Root == root:
				out[k] = projectCore(child, e, root)
			}
		}
		return out
	case []any:
		if p.Items == nil {
			return jsonv.Copy(x)
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = projectCore(p.Items, e, root)
		}
		return out
	}
	return v
}

// siteOf describes a core-typed value's place for wrapCore.
func siteOf(p *crd.Property) coreSite {
	s := coreSite{typ: p.Semantic.Type, name: p.Name(), fields: map[string]bool{}}
	if p.Name() == "[*]" && p.Parent != nil {
		s.name, s.list = p.Parent.Name(), p.Parent.Name()
	}
	for _, f := range p.Fields {
		if f.Semantic != nil && f.Semantic.Root == p.Semantic.Root {
			s.fields[f.Name()] = true
		}
	}
	return s
}

// coreCheck is one wrapped value to judge.
type coreCheck struct {
	cv  coreValue
	obj coreObject
	// base is the value at the same place in the start state, wrapped, when there is one.
	base *coreObject
}

// coreChecks lists the core-typed values of states that differ from the value at the same place
// in base, wrapped, each once.
func coreChecks(s *crd.Schema, base map[string]any, states []map[string]any) []coreCheck {
	before := map[string]coreValue{}
	for _, cv := range coreValues(s, base) {
		before[cv.ptr()] = cv
	}
	var checks []coreCheck
	seen := map[string]bool{}
	for _, st := range states {
		for _, cv := range coreValues(s, st) {
			b, had := before[cv.ptr()]
			had = had && b.prop == cv.prop
			if had && jsonv.Equal(b.value, cv.value) {
				continue
			}
			obj, ok := wrapCore(siteOf(cv.prop), cv.value)
			if !ok {
				continue
			}
			key := compactJSON(obj.obj)
			if seen[key] {
				continue
			}
			seen[key] = true
			c := coreCheck{cv: cv, obj: obj}
			if had {
				if bo, ok := wrapCore(siteOf(b.prop), b.value); ok {
					c.base = &bo
				}
			}
			checks = append(checks, c)
		}
	}
	return checks
}

// coreRefused is the API server's refusal of one core-typed value.
type coreRefused struct {
	// path is the value's concrete path in the CRD and what its role in the wrapper object.
	path, what string
	// causes are the server's causes, "field: message", with fields as CRD paths.
	causes []string
}

func (r *coreRefused) String() string {
	return fmt.Sprintf("%s (%s) is refused by the API server: %s", r.path, r.what, strings.Join(r.causes, "; "))
}

// coreRefusal returns the API server's refusal of a core-typed value that states introduce
// relative to base, or nil when it accepts them all. What the operator completes is not held
// against the states (judgeCore): a cause the base's own value at that place also has, and a
// required value the CRD's schema gives the user no field for. The checks run concurrently; the
// first refusal in state order is reported. Generation and the benchmark's measurement both judge
// through it.
func coreRefusal(ctx context.Context, cache *coreCache, s *crd.Schema, base map[string]any, states []map[string]any) (*coreRefused, error) {
	checks := coreChecks(s, base, states)
	if len(checks) == 0 {
		return nil, nil
	}
	causes := make([][]string, len(checks))
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			causes[i], errs[i] = judgeCore(ctx, cache, s, c)
		})
	}
	wg.Wait()
	for i, c := range checks {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if len(causes[i]) > 0 {
			return &coreRefused{path: pathOf(c.cv.toks), what: c.obj.what, causes: causes[i]}, nil
		}
	}
	return nil, nil
}

// coreRefusal is coreRefusal with the generator's schema and cache.
func (g *Generator) coreRefusal(ctx context.Context, base map[string]any, states []map[string]any) (*coreRefused, error) {
	return coreRefusal(ctx, g.core, g.schema, base, states)
}

// judgeCore returns the causes the server gives for c's value that the test case answers for, with
// field paths rewritten to the CRD's, sorted: not those its base value has too, nor those naming a
// required value the operator must complete (operatorCompletes).
func judgeCore(ctx context.Context, cache *coreCache, s *crd.Schema, c coreCheck) ([]string, error) {
	reason, err := cache.validate(ctx, c.obj.obj)
	if err != nil || reason == "" {
		return nil, err
	}
	causes := strings.Split(reason, "; ")
	if c.base != nil {
		old, err := cache.validate(ctx, c.base.obj)
		if err != nil {
			return nil, err
		}
		had := map[string]bool{}
		for _, o := range strings.Split(old, "; ") {
			had[o] = true
		}
		var fresh []string
		for _, n := range causes {
			if !had[n] {
				fresh = append(fresh, n)
			}
		}
		causes = fresh
	}
	at := pathOf(c.cv.toks)
	held := causes[:0:0]
	for _, cause := range causes {
		cause = rebase(cause, c.obj.at, at)
		if !operatorCompletes(s, at, cause) {
			held = append(held, cause)
		}
	}
	sort.Strings(held)
	return held, nil
}

// operatorCompletes reports whether cause (its field a CRD path) asks for a value the user
// cannot give in the custom resource, so the operator must complete it when it renders the
// value at (a CRD path): a "Required value" naming, under at, a field the CRD's schema does not
// declare (nor lets through as an unknown field), or an object Kubernetes requires one member of
// a group of (a probe's or hook's handler, a volume's source) whose schema declares no member —
// a CRD probe type that carries only timings, its operator bringing the check. Like a cause the
// seed's own value has, it is not the test case's doing.
func operatorCompletes(s *crd.Schema, at, cause string) bool {
	field, msg, ok := strings.Cut(cause, ": ")
	if !ok || !strings.HasPrefix(msg, "Required value") {
		return false
	}
	if field != at && !strings.HasPrefix(field, at+".") && !strings.HasPrefix(field, at+"[") {
		return false
	}
	toks, ok := fieldPathTokens(field)
	if !ok {
		return false
	}
	p, _, open := causeProperty(s.Root, toks)
	switch {
	case open:
		return false
	case p == nil:
		return true
	}
	if p.PreserveUnknownFields || p.AnyValues {
		return false
	}
	g := oneOfGroup(p)
	if g == nil || g.fallback == "" {
		return false
	}
	for _, m := range g.members {
		if p.Field(m) != nil {
			return false
		}
	}
	return true
}

// causeProperty returns the CRD property a cause's field path names (nil when the schema does not
// declare it) and its tokens; open reports a path that leaves the schema through an object that
// keeps unknown fields (the user can set anything there). A claim's "resources[storage]" is its
// requests' entry.
func causeProperty(root *crd.Property, toks []jsonv.Token) (p *crd.Property, at []jsonv.Token, open bool) {
	walk := func(toks []jsonv.Token) (*crd.Property, bool) {
		node := root
		for _, t := range toks {
			next := stepInto(node, t)
			if next == nil {
				return nil, node.PreserveUnknownFields || node.AnyValues
			}
			node = next
		}
		return node, false
	}
	p, open = walk(toks)
	if n := len(toks); p == nil && !open && n >= 2 && toks[n-2] == "resources" {
		alt := append(append([]jsonv.Token{}, toks[:n-1]...), "requests", toks[n-1])
		if q, qOpen := walk(alt); q != nil || qOpen {
			return q, alt, qOpen
		}
	}
	return p, toks, open
}

// rebase rewrites the field paths in a cause that start with the wrapper's at (the value's place
// in the wrapper object) as paths under the value's CRD path.
func rebase(cause, at, path string) string {
	if at == "" {
		// The value is the object: its fields are the object's top-level ones.
		if i := strings.Index(cause, ": "); i > 0 && !strings.ContainsAny(cause[:i], " \"") {
			return path + "." + cause
		}
		return cause
	}
	var b strings.Builder
	for i := 0; i < len(cause); {
		starts := i == 0 || cause[i-1] == ' ' || cause[i-1] == '"'
		if starts && strings.HasPrefix(cause[i:], at) {
			end := i + len(at)
			if end == len(cause) || strings.ContainsRune(".[:\" ", rune(cause[end])) {
				b.WriteString(path)
				i = end
				continue
			}
		}
		b.WriteByte(cause[i])
		i++
	}
	return b.String()
}

// asMisoperation returns the draft labelled a misoperation, its description saying why.
func (d *draft) asMisoperation(reason string) *draft {
	return &draft{generator: d.generator, label: Misoperation, steps: d.steps, stepDescs: d.stepDescs, undo: d.undo,
		description: d.description + misoperationMarker + reason}
}

// misoperationMarker separates a test case's description from why it is a misoperation.
const misoperationMarker = " — a misoperation: "
