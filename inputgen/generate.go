package inputgen

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/regexgen"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// ErrSeedInvalid is returned when the seed CR does not pass the CRD's validation: every test case
// starts from it, so it must be a state the API server accepts.
var ErrSeedInvalid = errors.New("seed CR violates the CRD schema: fix the seed so the API server would accept it")

// Options configure plan generation. The zero value works: seed 0, no examples, no dependencies.
type Options struct {
	// Seed fixes every random choice; the same inputs and seed give the same plan.
	Seed int64
	// Examples are example CRs whose values are mined into the value pool.
	Examples []map[string]any
	// Pool holds extra candidate values (target-declared or from an LLM); nil means empty. Example
	// values are added to it.
	Pool *Pool
	// Dependencies are target-declared predicates for sub-trees.
	Dependencies []Dependency
	// DisableToggleInference turns off inferring enabled-style toggles as predicates.
	DisableToggleInference bool
	// PodLabels select the operand's pods in affinity scenarios; the default is
	// app.kubernetes.io/instance=<seed name>.
	PodLabels map[string]string
	// MaxAttempts is how many draws a generator gets before its test case is dropped (default 6).
	MaxAttempts int
	// MaxEnumCases bounds the per-value test cases of one enum (default 8).
	MaxEnumCases int
	// Workers is the number of properties generated in parallel (default GOMAXPROCS, four times
	// that with a CoreValidator).
	Workers int
	// CoreValidator, when set, judges the core-typed values valid test cases introduce
	// (containers, affinity, PVC templates, Services, label selectors, …) wrapped in the smallest
	// real object that carries each, as the API server will once the operator renders them: a
	// refused candidate is repaired from the server's causes or drawn again, and when no draw
	// passes the test case becomes a misoperation whose description gives the server's reason
	// (" — a misoperation: ", as for dangling in-object references). Verdicts are cached.
	CoreValidator CoreValidator
	// PodCapacity is how many operand pods the test cluster holds (default DefaultPodCapacity): a
	// valid case whose states ask for more (replica-like fields times shard-like ones) is labelled
	// a misoperation.
	PodCapacity int
	// Lenient drops the seed's fields the schema does not declare with a warning (Plan.SeedWarnings)
	// instead of refusing the seed (ErrSeedUnknownField).
	Lenient bool
	// ServerValidator, when set, also checks every kept test case (e.g. a DryRunValidator against a
	// real cluster); a rejection drops the test case.
	ServerValidator Validator
	// Logger receives progress and drop reasons at debug level; nil discards.
	Logger *slog.Logger
}

// Generator turns a schema and a seed CR into a test plan.
type Generator struct {
	schema *crd.Schema
	val    *LocalValidator
	pool   *Pool
	opts   Options
	log    *slog.Logger
	base   map[string]any
	// baseStored is base normalised as a stored object; validation only reads it.
	baseStored map[string]any
	sem        semantic.Result
	deps       []Dependency
	refs       *refIndex
	// core caches the CoreValidator's verdicts (nil without one).
	core     *coreCache
	samplers sync.Map // pattern -> *regexgen.Sampler or error
	// seedWarnings are what the seed checks reported (Plan.SeedWarnings).
	seedWarnings []string
	// guardStats counts the validation rules' guards found (inferRuleGuards).
	guardStats ruleGuardStats
	// implied are the changes rules require once a setup sets their trigger (inferImplications).
	implied []impliedChange
	// domains holds the inferred domain of every property (inferDomains; read-only once built).
	domains map[*crd.Property]inferredDomain
	// pods are the replica-like fields pod estimates read (podGroups).
	pods []podGroup
}

// NewGenerator validates the seed against the schema, infers semantics and mines the examples.
func NewGenerator(s *crd.Schema, seed map[string]any, opts Options) (*Generator, error) {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 6
	}
	if opts.MaxEnumCases <= 0 {
		opts.MaxEnumCases = 8
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
		if opts.CoreValidator != nil {
			// Properties wait on the API server's answers: more of them in flight.
			opts.Workers *= 4
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	val, err := NewLocalValidator(s)
	if err != nil {
		return nil, err
	}
	g := &Generator{schema: s, val: val, opts: opts, log: log, pool: opts.Pool}
	if opts.CoreValidator != nil {
		g.core = newCoreCache(opts.CoreValidator)
	}
	if g.pool == nil {
		g.pool = NewPool()
	}
	g.sem = annotate(s)
	g.domains = inferDomains(s)
	g.pods = podGroups(s)
	if err := g.setSeed(seed); err != nil {
		return nil, err
	}
	g.checkPodEstimate()
	for _, ex := range opts.Examples {
		g.pool.Mine(s, ex, SourceExample)
	}
	g.pool.Mine(s, g.base, SourceExample)
	g.refs = newRefIndex(s, append([]map[string]any{g.base}, opts.Examples...)...)
	g.deps, err = g.dependencies()
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Generator) setSeed(seed map[string]any) error {
	if seed == nil {
		return fmt.Errorf("%w: seed is empty", ErrSeedInvalid)
	}
	seed = jsonv.CopyMap(seed)
	if md, ok := seed["metadata"].(map[string]any); ok {
		for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp"} {
			delete(md, k)
		}
	}
	warnings, err := checkSeedFields(g.val, seed, g.opts.Lenient)
	if err != nil {
		return err
	}
	if err := g.val.ValidateCreate(context.Background(), seed); err != nil {
		return fmt.Errorf("%w: %w", ErrSeedInvalid, err)
	}
	base, err := g.val.Prune(seed)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSeedInvalid, err)
	}
	if g.schema.StatusSubresource {
		delete(base, "status")
	}
	g.base = base
	g.baseStored, err = g.val.normalizeStored(base)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSeedInvalid, err)
	}
	g.seedWarnings = append(warnings, seedSense(g.schema, base)...)
	for _, w := range g.seedWarnings {
		g.log.Warn("seed", "warning", w)
	}
	return nil
}

// annotate runs semantic inference on s once and returns its statistics.
func annotate(s *crd.Schema) semantic.Result {
	return s.Annotate(func() any { return semantic.Annotate(semantic.NewCatalog(), s) }).(semantic.Result)
}

// Semantic returns the semantic inference statistics.
func (g *Generator) Semantic() semantic.Result { return g.sem }

// Base returns a copy of the seed desired state every test case starts from.
func (g *Generator) Base() map[string]any { return jsonv.CopyMap(g.base) }

// Validator returns the local validator.
func (g *Generator) Validator() *LocalValidator { return g.val }

func (g *Generator) sampler(pattern string) (*regexgen.Sampler, error) {
	if v, ok := g.samplers.Load(pattern); ok {
		if s, ok := v.(*regexgen.Sampler); ok {
			return s, nil
		}
		return nil, v.(error)
	}
	s, err := regexgen.New(pattern)
	if err != nil {
		g.samplers.Store(pattern, err)
		return nil, err
	}
	g.samplers.Store(pattern, s)
	return s, nil
}

// patternOK reports whether a string value satisfies p's pattern (true when there is none).
func (g *Generator) patternOK(p *crd.Property, v string) bool {
	if p.Pattern == "" {
		return true
	}
	s, err := g.sampler(p.Pattern)
	return err == nil && s.Match(v)
}

// draft is a candidate test case before validation.
type draft struct {
	generator   string
	label       Label
	description string
	steps       []map[string]any
	stepDescs   []string
	// undo, when set, says that the last step turns off again what the case turned on (a flag
	// flipped to true, an object added); it is the part of the description that says so. The
	// step is left out when the API server would refuse it as an update.
	undo string
}

// genFunc draws one candidate; errSkip means the generator does not apply.
type genFunc func(c *caseCtx) (*draft, error)

// namedGen is a generator with its stable name.
type namedGen struct {
	name string
	fn   genFunc
}

// propResult is what generation produced for one property.
type propResult struct {
	cases    []*TestCase
	redrawn  int
	repaired int
	// refsRepaired and refsMisoperation count kept test cases whose in-object references were
	// resolved, or which became misoperations because one dangles.
	refsRepaired, refsMisoperation int
	// coreRedrawn, coreMisoperation and coreRepaired count valid candidates drawn again because
	// the API server refused a core-typed value of theirs, test cases labelled misoperations for
	// one, and candidates repaired from the server's causes.
	coreRedrawn, coreMisoperation, coreRepaired int
	dropped                                     []Dropped
	states                                      map[*TestCase][]map[string]any
	// err is a failure to ask the CoreValidator: the plan cannot be trusted.
	err error
}

// Dropped records a test case that never produced a valid candidate.
type Dropped struct {
	Property  string `json:"property"`
	Generator string `json:"generator"`
	Reason    string `json:"reason"`
}

// Plan generates every test case. It is deterministic for a given seed whatever Workers is.
func (g *Generator) Plan(ctx context.Context) (*Plan, error) {
	props := g.schema.Properties()
	results := make([]propResult, len(props))
	work := make(chan int)
	var wg sync.WaitGroup
	workers := min(g.opts.Workers, max(1, len(props)))
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := range work {
				results[i] = g.generateProperty(ctx, props[i])
			}
		})
	}
feed:
	for i := range props {
		select {
		case <-ctx.Done():
			break feed
		case work <- i:
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("generate plan: %w", err)
	}
	plan := &Plan{
		CRD:           g.schema.Name,
		Group:         g.schema.Group,
		Version:       g.schema.Version,
		Kind:          g.schema.Kind,
		Seed:          g.opts.Seed,
		Base:          jsonv.CopyMap(g.base),
		states:        map[string][]map[string]any{},
		SemanticRoots: g.sem.Roots,
		SeedWarnings:  g.seedWarnings,
		PodCapacity:   g.podCapacity(),
		PodFields:     g.PodFields(),
	}
	if len(g.pods) > 0 {
		plan.SeedPods = podsOf(g.pods, g.base)
	}
	ids := map[string]int{}
	for _, r := range results {
		if r.err != nil {
			return nil, fmt.Errorf("generate plan: %w", r.err)
		}
		for _, tc := range r.cases {
			id := tc.Property + "#" + tc.Generator
			ids[id]++
			if n := ids[id]; n > 1 {
				id += "-" + strconv.Itoa(n)
			}
			tc.ID = id
			plan.TestCases = append(plan.TestCases, tc)
			plan.states[id] = r.states[tc]
		}
		plan.Stats.Redrawn += r.redrawn
		plan.Stats.Repaired += r.repaired
		plan.Stats.RefsRepaired += r.refsRepaired
		plan.Stats.RefsMisoperation += r.refsMisoperation
		if g.core != nil {
			if plan.Stats.Core == nil {
				plan.Stats.Core = &CoreStats{}
			}
			plan.Stats.Core.Redrawn += r.coreRedrawn
			plan.Stats.Core.Misoperation += r.coreMisoperation
			plan.Stats.Core.Repaired += r.coreRepaired
		}
		plan.Dropped = append(plan.Dropped, r.dropped...)
	}
	plan.Stats.Dropped = len(plan.Dropped)
	if g.core != nil {
		plan.Stats.Core.Checked = int(g.core.asks.Load())
		plan.Stats.Core.CacheHits = int(g.core.hits.Load())
	}
	g.coverage(plan)
	return plan, nil
}

// seedFor derives the random source of one draw from the plan seed, the property, the generator
// and the attempt, so choices do not shift when other properties change.
func (g *Generator) seedFor(path, gen string, attempt int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", path, gen, attempt)
	return rand.New(rand.NewPCG(uint64(g.opts.Seed), h.Sum64()))
}

func (g *Generator) generateProperty(ctx context.Context, p *crd.Property) propResult {
	res := propResult{states: map[*TestCase][]map[string]any{}}
	preds, setup, err := g.predicatesFor(p)
	if err != nil {
		res.dropped = append(res.dropped, Dropped{Property: p.Path.String(), Generator: "setup", Reason: err.Error()})
		return res
	}
	start := jsonv.CopyMap(g.base)
	var setupState map[string]any
	if !satisfied(preds, start) {
		if err := g.applySetup(start, p, setup); err != nil {
			res.dropped = append(res.dropped, Dropped{Property: p.Path.String(), Generator: "setup", Reason: err.Error()})
			return res
		}
		setup = changesBetween(g.base, start)
		setupState = jsonv.CopyMap(start)
		if err := g.val.ValidateUpdate(ctx, setupState, g.base); err != nil {
			res.dropped = append(res.dropped, Dropped{Property: p.Path.String(), Generator: "setup", Reason: "setup state is invalid: " + err.Error()})
			return res
		}
	}
	// The start state normalised as the stored object every first step updates.
	startStored := g.baseStored
	if setupState != nil {
		var err error
		if startStored, err = g.val.normalizeStored(start); err != nil {
			res.dropped = append(res.dropped, Dropped{Property: p.Path.String(), Generator: "setup", Reason: err.Error()})
			return res
		}
	}
	// A setup state the API server refuses makes every valid case of the property a
	// misoperation: drawing again does not change the setup.
	setupRefused := ""
	if g.core != nil && setupState != nil {
		ref, err := g.coreRefusal(ctx, g.base, []map[string]any{setupState})
		if err != nil {
			res.err = err
			return res
		}
		if ref != nil {
			setupRefused = "the setup: " + ref.String()
		}
	}
	finishDraft := func(d *draft) (*TestCase, []map[string]any, refOutcome, error) {
		return g.finish(ctx, p, d, preds, setup, setupState, start, startStored)
	}
	for _, ng := range g.generatorsFor(p) {
		var lastErr error
		kept := false
		// refused is the first valid candidate the API server refused a core-typed value of,
		// relabelled: kept when no draw passes.
		var refused *TestCase
		var refusedStates []map[string]any
		for attempt := 0; attempt < g.opts.MaxAttempts; attempt++ {
			if ctx.Err() != nil {
				return res
			}
			c := &caseCtx{g: g, p: p, r: g.seedFor(p.Path.String(), ng.name, attempt), start: start}
			d, err := ng.fn(c)
			if errors.Is(err, errSkip) || errors.Is(err, errNoValue) {
				// Not applicable here (nothing to remove, no other valid value): nothing to drop.
				kept = true
				break
			}
			if err != nil {
				lastErr = err
				res.redrawn++
				continue
			}
			d.generator = ng.name
			tc, states, refs, err := g.finish(ctx, p, d, preds, setup, setupState, start, startStored)
			if err != nil {
				firstErr := err
				for _, rd := range append(g.repairCEL(p, d, err), g.repairImplied(p, d)...) {
					if tc, states, refs, err = g.finish(ctx, p, rd, preds, setup, setupState, start, startStored); err == nil {
						res.repaired++
						break
					}
				}
				if err != nil {
					err = firstErr
				}
			}
			if err != nil {
				lastErr = err
				res.redrawn++
				continue
			}
			if g.core != nil && tc.Label == Valid {
				why := setupRefused
				if why == "" {
					r := g.seedFor(p.Path.String(), ng.name+"\x00core", attempt)
					ctc, cstates, ref, repaired, err := g.coreAccept(ctx, p, d, tc, states, start, finishDraft, r)
					if err != nil {
						res.err = err
						return res
					}
					switch {
					case ref != nil:
						why = ref.String()
					case repaired:
						tc, states = ctc, cstates
						res.coreRepaired++
					}
				}
				if why != "" {
					if refused == nil {
						refused, refusedStates = tc, states
						refused.Label = Misoperation
						refused.Description += misoperationMarker + why
					}
					lastErr = errors.New(why)
					if setupRefused != "" {
						break
					}
					res.coreRedrawn++
					continue
				}
			}
			switch refs {
			case refsRepaired:
				res.refsRepaired++
			case refsRelabelled:
				res.refsMisoperation++
			}
			res.cases = append(res.cases, tc)
			res.states[tc] = states
			kept = true
			break
		}
		if !kept && refused != nil {
			res.cases = append(res.cases, refused)
			res.states[refused] = refusedStates
			res.coreMisoperation++
			kept = true
		}
		if !kept && lastErr != nil {
			res.dropped = append(res.dropped, Dropped{Property: p.Path.String(), Generator: ng.name, Reason: lastErr.Error()})
			g.log.Debug("test case dropped", "property", p.Path.String(), "generator", ng.name, "reason", lastErr)
		}
	}
	return res
}

// finish validates a draft's states as a chain of updates from the start state (falling back to
// creates: Recreate) and turns it into a test case. Before validation, the in-object references a
// valid draft introduces are resolved (resolveRefs); when the repaired states fail validation, the
// draft relabelled a misoperation is validated instead.
func (g *Generator) finish(ctx context.Context, p *crd.Property, d *draft, preds []Predicate, setup []Change, setupState, start, startStored map[string]any) (*TestCase, []map[string]any, refOutcome, error) {
	if len(d.steps) == 0 {
		return nil, nil, refsUntouched, fmt.Errorf("generator %s produced no step", d.generator)
	}
	for i, st := range d.steps {
		pruned, err := g.val.Prune(st)
		if err != nil {
			return nil, nil, refsUntouched, fmt.Errorf("step %d: %w", i+1, err)
		}
		d.steps[i] = pruned
	}
	outcome, alt := g.resolveRefs(p, d, start)
	tc, states, err := g.finishResolved(ctx, p, d, preds, setup, setupState, start, startStored)
	if err != nil && alt != nil {
		if tc2, states2, err2 := g.finishResolved(ctx, p, alt, preds, setup, setupState, start, startStored); err2 == nil {
			return tc2, states2, refsRelabelled, nil
		}
	}
	return tc, states, outcome, err
}

// finishResolved is finish after pruning and reference resolution.
func (g *Generator) finishResolved(ctx context.Context, p *crd.Property, d *draft, preds []Predicate, setup []Change, setupState, start, startStored map[string]any) (*TestCase, []map[string]any, error) {
	prev := start
	for i, st := range d.steps {
		if jsonv.Equal(st, prev) {
			return nil, nil, fmt.Errorf("step %d changes nothing", i+1)
		}
		if len(g.effectiveChanges(prev, st)) == 0 {
			return nil, nil, fmt.Errorf("step %d changes nothing the operator reads (it sets defaults or values already in effect)", i+1)
		}
		prev = st
	}
	recreate := false
	if err := g.validateChain(ctx, startStored, d.steps, false); err != nil {
		if n := len(d.steps); d.undo != "" && n > 1 && g.validateChain(ctx, startStored, d.steps[:n-1], false) == nil {
			// Turning the feature off again is refused as an update (immutable once set):
			// keep the case without it rather than re-create the object.
			d.steps, d.description, d.undo = d.steps[:n-1], strings.Replace(d.description, d.undo, "", 1), ""
			if len(d.stepDescs) > n-1 {
				d.stepDescs = d.stepDescs[:n-1]
			}
		} else if errC := g.validateChain(ctx, nil, d.steps, true); errC != nil {
			return nil, nil, err
		} else {
			recreate = true
		}
	}
	if g.opts.ServerValidator != nil {
		prev := start
		for i, st := range d.steps {
			var err error
			if recreate {
				err = g.opts.ServerValidator.ValidateCreate(ctx, st)
			} else {
				err = g.opts.ServerValidator.ValidateUpdate(ctx, st, prev)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("step %d: server-side validation: %w", i+1, err)
			}
			prev = st
		}
	}
	tc := &TestCase{
		Property:    p.Path.String(),
		Generator:   d.generator,
		Label:       d.label,
		Description: d.description,
		Recreate:    recreate,
	}
	if setupState != nil {
		tc.Preconditions = preds
		tc.Setup = setup
	} else if len(preds) > 0 {
		tc.Preconditions = preds
		tc.Setup = setup
	}
	prev = start
	for i, st := range d.steps {
		step := Step{Changes: changesBetween(prev, st)}
		if i < len(d.stepDescs) {
			step.Description = d.stepDescs[i]
		}
		tc.Steps = append(tc.Steps, step)
		prev = st
	}
	var states []map[string]any
	if setupState != nil {
		states = append(states, setupState)
	}
	states = append(states, d.steps...)
	tc.Covers = g.covered(g.base, states)
	tc.Effective = g.effectiveAlong(g.base, states)
	g.estimatePods(tc, states)
	return tc, states, nil
}

// validateChain validates steps as successive updates from start (or each as a create). The
// states before each step are valid (validated earlier), so the plain validators decide exactly
// as ratcheting ones would.
func (g *Generator) validateChain(ctx context.Context, stored map[string]any, steps []map[string]any, create bool) error {
	prev := stored
	for i, st := range steps {
		var err error
		if create {
			err = g.val.ValidateCreate(ctx, st)
		} else {
			var u map[string]any
			if u, err = g.val.Normalize(st); err == nil {
				err = g.val.validateUpdate(ctx, u, prev, false)
				prev = u
			}
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}

// applySetup applies setup changes to state, first materialising missing parent objects with
// their required fields so the setup state is valid.
func (g *Generator) applySetup(state map[string]any, p *crd.Property, setup []Change) error {
	for _, ch := range setup {
		if ch.Op == OpSet {
			if prop := g.propertyAtPointer(ch.Path); prop != nil && !prop.InsideList() {
				c := &caseCtx{g: g, p: prop, r: g.seedFor(p.Path.String(), "setup", 0)}
				if _, err := c.ensure(state, prop); err != nil {
					return fmt.Errorf("setup %s: %w", ch.Path, err)
				}
			}
		}
		if err := ApplyChanges(state, []Change{ch}); err != nil {
			return err
		}
	}
	return nil
}

func satisfied(preds []Predicate, state map[string]any) bool {
	for _, p := range preds {
		if !p.Holds(state) {
			return false
		}
	}
	return true
}

// effectiveAlong lists the properties whose effective values differ along base -> states[0] ->
// states[1] ... (effectiveChanges).
func (g *Generator) effectiveAlong(base map[string]any, states []map[string]any) []string {
	return along(base, states, func(prev, st map[string]any, set map[string]bool) {
		for _, p := range g.effectiveChanges(prev, st) {
			set[p] = true
		}
	})
}

// covered lists the properties whose values differ along base -> states[0] -> states[1] ...
func (g *Generator) covered(base map[string]any, states []map[string]any) []string {
	return along(base, states, func(prev, st map[string]any, set map[string]bool) {
		for _, e := range jsonv.Diff(prev, st) {
			g.markEdit(set, e)
		}
	})
}

// along walks base -> states[0] -> states[1] ..., letting mark add the properties each pair of
// consecutive states changes, and returns them sorted.
func along(base map[string]any, states []map[string]any, mark func(prev, st map[string]any, set map[string]bool)) []string {
	set := map[string]bool{}
	prev := base
	for _, st := range states {
		mark(prev, st, set)
		prev = st
	}
	return slices.Sorted(maps.Keys(set))
}

// markEdit marks the property an edit touches, its ancestors and every property inside the new
// (or removed) value.
func (g *Generator) markEdit(set map[string]bool, e jsonv.Edit) {
	node := g.schema.Root
	for _, t := range e.Tokens {
		next := stepInto(node, t)
		if next == nil {
			return
		}
		node = next
		if len(node.Path) == 1 {
			switch node.Path[0].Key {
			case "apiVersion", "kind", "metadata", "status":
				return
			}
		}
		set[node.Path.String()] = true
	}
	if e.Op == jsonv.OpSet {
		markValue(set, node, e.Value)
	} else {
		markValue(set, node, e.Old)
	}
}

func stepInto(node *crd.Property, t jsonv.Token) *crd.Property {
	switch x := t.(type) {
	case int:
		return node.Items
	case string:
		if f := node.Field(x); f != nil {
			return f
		}
		return node.Values
	}
	return nil
}

func markValue(set map[string]bool, node *crd.Property, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if child := stepInto(node, k); child != nil {
				set[child.Path.String()] = true
				markValue(set, child, e)
			}
		}
	case []any:
		if node.Items != nil {
			for _, e := range x {
				set[node.Items.Path.String()] = true
				markValue(set, node.Items, e)
			}
		}
	}
}

// coverage fills the per-property coverage and the statistics.
func (g *Generator) coverage(plan *Plan) {
	targeted := map[string][]string{}
	incidental := map[string][]string{}
	effective := map[string]bool{}
	for _, tc := range plan.TestCases {
		targeted[tc.Property] = append(targeted[tc.Property], tc.ID)
		for _, c := range tc.Covers {
			if c != tc.Property {
				incidental[c] = append(incidental[c], tc.ID)
			}
		}
		switch tc.Label {
		case Valid:
			plan.Stats.Valid++
		case Misoperation:
			plan.Stats.Misoperation++
		}
		if tc.Recreate {
			plan.Stats.Recreate++
		}
		if tc.Pods > plan.PodCapacity && plan.PodCapacity > 0 {
			plan.Stats.BeyondCapacity++
		}
		for _, c := range tc.Effective {
			effective[c] = true
		}
	}
	dropReasons := map[string]string{}
	for _, d := range plan.Dropped {
		if _, ok := dropReasons[d.Property]; !ok {
			dropReasons[d.Property] = d.Generator + ": " + d.Reason
		}
	}
	for _, p := range g.schema.Properties() {
		path := p.Path.String()
		pc := PropertyCoverage{
			Path:     path,
			Type:     typeName(p),
			Targeted: targeted[path],
		}
		if p.Semantic != nil {
			pc.Hint = p.Semantic.Hint
			pc.SemanticType = p.Semantic.Type
			if p.Semantic.Mapped() {
				plan.Stats.SemanticMapped++
			}
		}
		inc := incidental[path]
		pc.CoveredBy = len(pc.Targeted) + len(inc)
		const maxListed = 10
		if len(inc) > maxListed {
			inc = inc[:maxListed]
		}
		pc.AlsoChangedBy = inc
		pc.Covered = pc.CoveredBy > 0
		pc.Effective = effective[path]
		if pc.Effective {
			plan.Stats.Effective++
		}
		switch {
		case pc.Covered:
			plan.Stats.Covered++
		case p.Required && len(p.Enum) == 1:
			// A required property with a single allowed value has no valid change.
			pc.Pinned = true
			pc.Reason = "pinned: the schema requires it and allows only " + describeValue(p.Enum[0])
			plan.Stats.Pinned++
		case p.Type == crd.TypeObject && len(p.Fields) == 0 && p.Values == nil && !p.IsFreeForm() && !p.EmbeddedResource && !p.AnyValues:
			// An object that declares no field (a template's metadata): the API server prunes
			// whatever it holds, so no value changes what the operator reads.
			pc.Pinned = true
			pc.Reason = "pinned: an object that declares no field (the API server prunes what it holds)"
			plan.Stats.Pinned++
		default:
			pc.Reason = dropReasons[path]
			if pc.Reason == "" {
				pc.Reason = "no generator produced a change"
			}
			if ruleRefused(p, pc.Reason) {
				plan.Stats.UncoveredByRule++
				pc.Reason = "unsolved validation rule: " + pc.Reason
			}
		}
		plan.Properties = append(plan.Properties, pc)
	}
	plan.Stats.RuleGuards = g.guardStats.solved
	plan.Stats.RuleGuardsUnsolved = len(g.guardStats.unsolved)
	plan.Stats.Properties = len(plan.Properties)
	plan.Stats.TestCases = len(plan.TestCases)
	if n := plan.Stats.Properties - plan.Stats.Pinned; n > 0 {
		plan.Stats.Coverage = float64(plan.Stats.Covered) / float64(n)
	}
	if plan.Stats.Properties > 0 {
		plan.Stats.SemanticShare = float64(plan.Stats.SemanticMapped) / float64(plan.Stats.Properties)
	}
}

func typeName(p *crd.Property) string {
	switch {
	case p.IntOrString:
		return "int-or-string"
	case p.IsMap():
		return "map"
	case p.IsFreeForm():
		return "free-form"
	case p.Type == "":
		return "any"
	}
	return p.Type
}

// pointerOf renders the concrete path of a property without list or map segments as a JSON pointer.
func pointerOf(p crd.Path) (string, bool) {
	toks, ok := p.Tokens()
	if !ok {
		return "", false
	}
	return jsonv.Pointer(toks), true
}

// describeValue renders a value briefly for descriptions.
func describeValue(v any) string {
	s := fmt.Sprintf("%v", v)
	switch x := v.(type) {
	case string:
		s = strconv.Quote(x)
	case map[string]any, []any:
		s = compactJSON(v)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}
