package inputgen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/parser"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// A guard is what an x-kubernetes-validations rule says about an optional field of the object it
// is declared on (self): the field may only be set when conditions on other fields hold, e.g.
//
//	!has(self.tls) || self.mode == 'cluster'          tls only with mode cluster
//	self.mode == 'cluster' || !has(self.tls)          the same, commuted
//	has(self.tls) ? self.mode == 'cluster' : true     the same, as a conditional
//	!(has(self.persistence) && self.workload == 'Deployment')
//	                                                  persistence only with another workload
//
// The rule is read from cel-go's parsed AST: it must be a disjunction (after De Morgan and
// conditionals with a literal true branch) holding !has(self.<path>); the guarded field is that
// path, and the first other disjunct that is a conjunction of comparisons of fields outside the
// guarded sub-tree with literals (==, !=, in, <, <=, >, >=, a boolean field, has()) is the
// condition. Rules that constrain the guarded field's own value, comprehensions and function
// calls are not guards: draws and validation decide them.
type guard struct {
	// guarded is the field path relative to self, e.g. ["tls"].
	guarded []string
	// when is the condition: every comparison must hold.
	when []guardCond
	// rule is the rule's source text.
	rule string
}

// guardCond compares the field at path (relative to self) with a literal.
type guardCond struct {
	path []string
	op   PredicateOp
	// value is the literal (a witness value for ordering comparisons and in).
	value any
	// orElse is the value a conditional in the rule assumes when the field is absent, if any
	// (`has(self.a) ? self.a : 'Disabled'`).
	orElse any
	// witness is true when value is one of several that satisfy the comparison (in, <, >=):
	// enough to make it hold, not the only way.
	witness bool
}

// celParser parses rules with the standard macros (has() becomes a presence test).
func celParser() (*parser.Parser, error) {
	return parser.NewParser(parser.Macros(parser.AllMacros...))
}

// ruleGuards reads the guards of one rule (none when the rule has no guard shape).
func ruleGuards(p *parser.Parser, rule string) []guard {
	tree, errs := p.Parse(common.NewTextSource(rule))
	if errs != nil && len(errs.GetErrors()) > 0 {
		return nil
	}
	disj := disjuncts(tree.Expr(), nil)
	type presence struct {
		idx  int
		path []string
	}
	var absent []presence
	for i, d := range disj {
		if inner, ok := negated(d); ok {
			if path, ok := presencePath(inner); ok {
				absent = append(absent, presence{i, path})
			}
		}
	}
	var out []guard
	for _, a := range absent {
		// Only the deepest of a chain of presence tests is guarded: its prefixes hold with it.
		deepest := true
		for _, b := range absent {
			if len(b.path) > len(a.path) && hasPrefix(b.path, a.path) {
				deepest = false
			}
		}
		if !deepest {
			continue
		}
		var rest []ast.Expr
		pure := true
		for i, d := range disj {
			if i == a.idx {
				continue
			}
			if inner, ok := negated(d); ok {
				if path, ok := presencePath(inner); ok && hasPrefix(a.path, path) {
					continue // !has(self.prefix): false whenever the guarded field is set
				}
			}
			if references(d, a.path) {
				pure = false
				break
			}
			rest = append(rest, d)
		}
		if !pure {
			continue
		}
		if chosen := pickConditions(rest); chosen != nil {
			out = append(out, guard{guarded: a.path, when: chosen, rule: rule})
		}
	}
	return out
}

// An implication is what a rule requires once a field has a value, e.g.
//
//	!has(self.enabled) || !self.enabled || (has(self.secretName) && size(self.secretName) > 0)
//
// reads as "enabled == true requires secretName": a setup that switches enabled on sets
// secretName too, or the setup state is refused.
type implication struct {
	trigger guardCond
	then    []guardCond
	rule    string
}

// ruleImplications reads the implications of one rule: a disjunct that is the negation of one
// equality (or boolean field) is the trigger, and the first other disjunct that does not read the
// trigger's field and is a conjunction of conditions is what it requires.
func ruleImplications(p *parser.Parser, rule string) []implication {
	tree, errs := p.Parse(common.NewTextSource(rule))
	if errs != nil && len(errs.GetErrors()) > 0 {
		return nil
	}
	disj := disjuncts(tree.Expr(), nil)
	var out []implication
	for i, d := range disj {
		if inner, ok := negated(d); ok {
			if _, ok := presencePath(inner); ok {
				continue // a presence guard (ruleGuards)
			}
		}
		tc, ok := conditions(d, true)
		if !ok || len(tc) != 1 || tc[0].op != PredEquals || tc[0].witness {
			continue
		}
		trig := tc[0]
		var rest []ast.Expr
		for j, o := range disj {
			if j == i {
				continue
			}
			if inner, ok := negated(o); ok {
				if path, ok := presencePath(inner); ok && hasPrefix(trig.path, path) {
					continue // !has(self.trigger): false once the trigger holds
				}
			}
			if !references(o, trig.path) {
				rest = append(rest, o)
			}
		}
		if chosen := pickConditions(rest); chosen != nil {
			out = append(out, implication{trigger: trig, then: chosen, rule: rule})
		}
	}
	return out
}

// impliedChange is a change a setup needs once it makes a trigger hold.
type impliedChange struct {
	// trigger is the pointer the triggering change sets, and value what it sets it to.
	trigger string
	value   any
	// changes are the setup changes of what the rule then requires, and preds the predicates
	// they make hold (a change is needed only where its predicate does not hold yet).
	changes []Change
	preds   []Predicate
}

// inferImplications turns every rule's implications into changes a setup adds when it sets
// their trigger.
func (g *Generator) inferImplications() []impliedChange {
	cp, err := celParser()
	if err != nil {
		return nil
	}
	var out []impliedChange
	for _, p := range append([]*crd.Property{g.schema.Root}, g.schema.Properties()...) {
		if _, ok := pointerOf(p.Path); !ok {
			continue
		}
		for _, r := range p.Rules {
			if r.Transition {
				continue
			}
			for _, im := range ruleImplications(cp, r.Rule) {
				trig, ptr := fieldAt(p, im.trigger.path)
				if trig == nil {
					continue
				}
				ic := impliedChange{trigger: ptr, value: im.trigger.value}
				ok := true
				for _, c := range im.then {
					prop, cptr := fieldAt(p, c.path)
					if prop == nil || prop.InsideList() {
						ok = false
						break
					}
					pred := Predicate{Path: cptr, Op: c.op, Value: c.value}
					if c.op == PredExists || c.op == PredAbsent {
						pred.Value = nil
					}
					ch, err := g.guardSetup(prop, pred)
					if err != nil {
						ok = false
						break
					}
					ic.changes = append(ic.changes, ch)
					ic.preds = append(ic.preds, pred)
				}
				if ok && len(ic.changes) > 0 {
					out = append(out, ic)
				}
			}
		}
	}
	return out
}

// fieldAt returns the declared field at rel below obj and its pointer (nil when undeclared).
func fieldAt(obj *crd.Property, rel []string) (*crd.Property, string) {
	prop := obj
	for _, name := range rel {
		if prop = prop.Field(name); prop == nil {
			return nil, ""
		}
	}
	ptr, _ := pointerOf(prop.Path)
	return prop, ptr
}

// withImplied adds, after every change of setup that sets a rule's trigger, the changes the rule
// then requires (once each).
func (g *Generator) withImplied(setup []Change) []Change {
	if len(g.implied) == 0 {
		return setup
	}
	var out []Change
	for _, ch := range setup {
		out = append(out, ch)
		if ch.Op != OpSet {
			continue
		}
		for _, ic := range g.implied {
			if ic.trigger == ch.Path && jsonv.Equal(ic.value, ch.Value) {
				out = append(out, ic.changes...)
			}
		}
	}
	return out
}

// repairImplied makes a refused draft satisfy the implications its steps trigger (a step that
// switches a toggle on also sets the field the toggle's rule then requires), without touching the
// property under test. It returns nil when no step needed a change.
func (g *Generator) repairImplied(p *crd.Property, d *draft) []*draft {
	if len(g.implied) == 0 {
		return nil
	}
	nd := &draft{generator: d.generator, label: d.label, stepDescs: d.stepDescs, description: d.description, undo: d.undo}
	var added []string
	for _, st := range d.steps {
		cp := jsonv.CopyMap(st)
		for _, ic := range g.implied {
			if v, ok := jsonv.Get(cp, ic.trigger); !ok || !jsonv.Equal(v, ic.value) {
				continue
			}
			for i, ch := range ic.changes {
				if ic.preds[i].Holds(cp) {
					continue
				}
				prop := g.propertyAtPointer(ch.Path)
				if prop == nil || prop.Path.HasPrefix(p.Path) || p.Path.HasPrefix(prop.Path) {
					continue
				}
				if err := ApplyChanges(cp, []Change{ch}); err != nil {
					continue
				}
				if n := prop.Path.String(); !containsString(added, n) {
					added = append(added, n)
				}
			}
		}
		nd.steps = append(nd.steps, cp)
	}
	if len(added) == 0 {
		return nil
	}
	nd.description += " (also setting " + strings.Join(added, ", ") + ", which a validation rule requires with it)"
	return []*draft{nd}
}

// pickConditions returns the conditions of the first of the disjuncts that is a conjunction of
// conditions on values, else of the first that only asks for other fields to be absent (which a
// setup would remove), else nil.
func pickConditions(disj []ast.Expr) []guardCond {
	var fallback []guardCond
	for _, d := range disj {
		conds, ok := conditions(d, false)
		if !ok || len(conds) == 0 {
			continue
		}
		if !onlyAbsence(conds) {
			return conds
		}
		if fallback == nil {
			fallback = conds
		}
	}
	return fallback
}

func onlyAbsence(conds []guardCond) bool {
	for _, c := range conds {
		if c.op != PredAbsent {
			return false
		}
	}
	return true
}

// disjuncts flattens e into the expressions one of which must hold: a || b, !(a && b) as
// !a || !b, c ? t : true as !c || t, and c ? true : f as c || f.
func disjuncts(e ast.Expr, out []ast.Expr) []ast.Expr {
	if e.Kind() == ast.CallKind {
		c := e.AsCall()
		switch c.FunctionName() {
		case operators.LogicalOr:
			for _, a := range c.Args() {
				out = disjuncts(a, out)
			}
			return out
		case operators.LogicalNot:
			if in := c.Args()[0]; in.Kind() == ast.CallKind && in.AsCall().FunctionName() == operators.LogicalAnd {
				for _, a := range in.AsCall().Args() {
					out = append(out, not(a))
				}
				return out
			}
		case operators.Conditional:
			args := c.Args()
			if isBool(args[2], true) {
				return disjuncts(args[1], append(out, not(args[0])))
			}
			if isBool(args[1], true) {
				return disjuncts(args[2], append(out, args[0]))
			}
		}
	}
	return append(out, e)
}

// notExpr is the negation of an expression, built without an expression factory: negated and
// conditions understand it like a parsed !e.
type notExpr struct {
	ast.Expr
	inner ast.Expr
}

func not(e ast.Expr) ast.Expr { return notExpr{Expr: e, inner: e} }

// negated returns e's operand when e is a negation (!e or a notExpr).
func negated(e ast.Expr) (ast.Expr, bool) {
	if n, ok := e.(notExpr); ok {
		return n.inner, true
	}
	if e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalNot {
		return e.AsCall().Args()[0], true
	}
	return nil, false
}

func isBool(e ast.Expr, want bool) bool {
	if _, ok := e.(notExpr); ok || e.Kind() != ast.LiteralKind {
		return false
	}
	b, ok := e.AsLiteral().Value().(bool)
	return ok && b == want
}

// presencePath reads has(self.a.b) as [a b].
func presencePath(e ast.Expr) ([]string, bool) {
	if _, ok := e.(notExpr); ok || e.Kind() != ast.SelectKind || !e.AsSelect().IsTestOnly() {
		return nil, false
	}
	s := e.AsSelect()
	parent, ok := selfPath(s.Operand())
	if !ok {
		return nil, false
	}
	return append(parent, s.FieldName()), true
}

// selfPath reads self.a.b (field selections from self) as [a b]; self alone is [].
func selfPath(e ast.Expr) ([]string, bool) {
	if _, ok := e.(notExpr); ok {
		return nil, false
	}
	switch e.Kind() {
	case ast.IdentKind:
		return []string{}, e.AsIdent() == "self"
	case ast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			return nil, false
		}
		parent, ok := selfPath(s.Operand())
		if !ok {
			return nil, false
		}
		return append(parent, s.FieldName()), true
	}
	return nil, false
}

// references reports whether e reads a field at or below path (or the whole of self).
func references(e ast.Expr, path []string) bool {
	if n, ok := e.(notExpr); ok {
		return references(n.inner, path)
	}
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent() == "self" // self as a whole (size(self), self.all(...))
	case ast.SelectKind:
		if p, ok := selfPath(e); ok {
			// self.a.b.c reads below a.b; self.a reads a.b with the rest of a.
			return hasPrefix(p, path) || hasPrefix(path, p)
		}
		if p, ok := presencePath(e); ok {
			return hasPrefix(p, path)
		}
		return references(e.AsSelect().Operand(), path)
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && references(c.Target(), path) {
			return true
		}
		for _, a := range c.Args() {
			if references(a, path) {
				return true
			}
		}
	case ast.ListKind:
		for _, a := range e.AsList().Elements() {
			if references(a, path) {
				return true
			}
		}
	case ast.ComprehensionKind:
		cp := e.AsComprehension()
		for _, a := range []ast.Expr{cp.IterRange(), cp.AccuInit(), cp.LoopCondition(), cp.LoopStep(), cp.Result()} {
			if references(a, path) {
				return true
			}
		}
	case ast.MapKind, ast.StructKind:
		return true // not read by guards: treat as referencing everything
	}
	return false
}

// conditions reads e (negated when neg) as a conjunction of comparisons of self's fields with
// literals.
func conditions(e ast.Expr, neg bool) ([]guardCond, bool) {
	if inner, ok := negated(e); ok {
		return conditions(inner, !neg)
	}
	if p, ok := presencePath(e); ok {
		op := PredExists
		if neg {
			op = PredAbsent
		}
		return []guardCond{{path: p, op: op}}, true
	}
	if p, ok := selfPath(e); ok && len(p) > 0 {
		// A boolean field: self.enabled.
		return []guardCond{{path: p, op: PredEquals, value: !neg}}, true
	}
	if e.Kind() != ast.CallKind {
		return nil, false
	}
	c := e.AsCall()
	args := c.Args()
	switch fn := c.FunctionName(); fn {
	case operators.LogicalAnd, operators.LogicalOr:
		// a && b holds when both do; !(a || b) when neither does.
		if (fn == operators.LogicalAnd) == neg {
			return nil, false
		}
		var out []guardCond
		for _, a := range args {
			cs, ok := conditions(a, neg)
			if !ok {
				return nil, false
			}
			out = append(out, cs...)
		}
		return out, true
	case operators.Equals, operators.NotEquals:
		if c, ok := nonEmpty(fn, args, neg); ok {
			return []guardCond{c}, true
		}
		field, lit, ok := fieldAndLiteral(args[0], args[1])
		if !ok {
			return nil, false
		}
		eq := (fn == operators.Equals) != neg
		op := PredEquals
		if !eq {
			op = PredNotEquals
		}
		field.op, field.value = op, lit
		return []guardCond{field}, true
	case operators.In:
		if neg || len(args) != 2 {
			return nil, false
		}
		field, ok := fieldOperand(args[0])
		if !ok || args[1].Kind() != ast.ListKind {
			return nil, false
		}
		elems := args[1].AsList().Elements()
		if len(elems) == 0 || elems[0].Kind() != ast.LiteralKind {
			return nil, false
		}
		field.op, field.value, field.witness = PredEquals, literal(elems[0]), len(elems) > 1
		return []guardCond{field}, true
	case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		if c, ok := nonEmpty(fn, args, neg); ok {
			return []guardCond{c}, true
		}
		field, lit, ok := fieldAndLiteral(args[0], args[1])
		if !ok {
			return nil, false
		}
		n, isInt := lit.(int64)
		if !isInt {
			return nil, false
		}
		// The literal on the left mirrors the comparison: 3 < self.a is self.a > 3.
		if _, leftField := fieldOperand(args[0]); !leftField {
			fn = map[string]string{operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
				operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals}[fn]
		}
		if neg {
			fn = map[string]string{operators.Less: operators.GreaterEquals, operators.LessEquals: operators.Greater,
				operators.Greater: operators.LessEquals, operators.GreaterEquals: operators.Less}[fn]
		}
		// A witness value: the bound itself, or the next integer past a strict bound.
		switch fn {
		case operators.Less:
			n--
		case operators.Greater:
			n++
		}
		field.op, field.value, field.witness = PredEquals, n, true
		return []guardCond{field}, true
	}
	return nil, false
}

// nonEmpty reads size(self.a) > 0, size(self.a) >= 1, size(self.a) != 0 (and self.a.size()) as
// "a is set" (a setup fills it with a non-empty value).
func nonEmpty(fn string, args []ast.Expr, neg bool) (guardCond, bool) {
	if neg || len(args) != 2 || !isLiteral(args[1]) {
		return guardCond{}, false
	}
	n, ok := literal(args[1]).(int64)
	if !ok {
		return guardCond{}, false
	}
	path, ok := sizeOf(args[0])
	if !ok {
		return guardCond{}, false
	}
	switch {
	case fn == operators.Greater && n == 0, fn == operators.GreaterEquals && n == 1, fn == operators.NotEquals && n == 0:
		return guardCond{path: path, op: PredExists}, true
	}
	return guardCond{}, false
}

// sizeOf reads size(self.a) or self.a.size() as [a].
func sizeOf(e ast.Expr) ([]string, bool) {
	if _, ok := e.(notExpr); ok || e.Kind() != ast.CallKind || e.AsCall().FunctionName() != "size" {
		return nil, false
	}
	c := e.AsCall()
	var arg ast.Expr
	switch {
	case c.IsMemberFunction() && len(c.Args()) == 0:
		arg = c.Target()
	case !c.IsMemberFunction() && len(c.Args()) == 1:
		arg = c.Args()[0]
	default:
		return nil, false
	}
	p, ok := selfPath(arg)
	return p, ok && len(p) > 0
}

// fieldAndLiteral reads a comparison's operands in either order.
func fieldAndLiteral(a, b ast.Expr) (guardCond, any, bool) {
	if f, ok := fieldOperand(a); ok && isLiteral(b) {
		return f, literal(b), true
	}
	if f, ok := fieldOperand(b); ok && isLiteral(a) {
		return f, literal(a), true
	}
	return guardCond{}, nil, false
}

// fieldOperand reads self.a.b, or the defaulting conditional has(self.a.b) ? self.a.b : 'lit'
// (with any presence tests of the path and its prefixes in the condition).
func fieldOperand(e ast.Expr) (guardCond, bool) {
	if p, ok := selfPath(e); ok && len(p) > 0 {
		return guardCond{path: p}, true
	}
	if _, ok := e.(notExpr); ok || e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Conditional {
		return guardCond{}, false
	}
	args := e.AsCall().Args()
	p, ok := selfPath(args[1])
	if !ok || len(p) == 0 || !isLiteral(args[2]) || !presenceChain(args[0], p) {
		return guardCond{}, false
	}
	return guardCond{path: p, orElse: literal(args[2])}, true
}

// presenceChain reports whether e is a conjunction of presence tests of path and its prefixes
// that includes path itself.
func presenceChain(e ast.Expr, path []string) bool {
	if q, ok := presencePath(e); ok {
		return slices.Equal(q, path)
	}
	if _, ok := e.(notExpr); ok || e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.LogicalAnd {
		return false
	}
	found := false
	for _, a := range e.AsCall().Args() {
		q, ok := presencePath(a)
		if !ok {
			if !presenceChain(a, path) {
				return false
			}
			found = true
			continue
		}
		if !hasPrefix(path, q) {
			return false
		}
		found = found || slices.Equal(q, path)
	}
	return found
}

func isLiteral(e ast.Expr) bool {
	if _, ok := e.(notExpr); ok {
		return false
	}
	if e.Kind() != ast.LiteralKind {
		return false
	}
	switch e.AsLiteral().Value().(type) {
	case string, int64, bool, float64:
		return true
	}
	return false
}

func literal(e ast.Expr) any { return e.AsLiteral().Value() }

func hasPrefix(p, prefix []string) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

// ruleGuardStats counts what guard inference found.
type ruleGuardStats struct {
	// solved counts guards turned into dependencies.
	solved int
	// unsolved lists guards that could not be (inside a list, a condition with no setup).
	unsolved []string
}

// inferRuleGuards turns the guards of every rule of the schema into dependencies: the guarded
// field's sub-tree is changed only once the condition holds (set first, as a setup state).
func (g *Generator) inferRuleGuards() ([]Dependency, ruleGuardStats) {
	var out []Dependency
	var st ruleGuardStats
	cp, err := celParser()
	if err != nil {
		return nil, st
	}
	for _, p := range append([]*crd.Property{g.schema.Root}, g.schema.Properties()...) {
		for _, r := range p.Rules {
			if r.Transition {
				continue
			}
			for _, gd := range ruleGuards(cp, r.Rule) {
				d, why := g.guardDep(p, gd)
				if why != "" {
					st.unsolved = append(st.unsolved, fmt.Sprintf("%s: rule %q: %s", p.Path, r.Rule, why))
					continue
				}
				st.solved++
				out = append(out, d)
			}
		}
	}
	return out, st
}

// guardDep builds the dependency of one guard declared on obj; why says why there is none.
func (g *Generator) guardDep(obj *crd.Property, gd guard) (Dependency, string) {
	if _, ok := pointerOf(obj.Path); !ok {
		return Dependency{}, "declared inside a list or map: a dependency needs a fixed path"
	}
	guarded, _ := fieldAt(obj, gd.guarded)
	if guarded == nil {
		return Dependency{}, "the guarded field " + strings.Join(gd.guarded, ".") + " is not declared"
	}
	if guarded.Required {
		return Dependency{}, "the guarded field is required"
	}
	reason := fmt.Sprintf("validation rule of %s: %s", displayPath(obj), gd.rule)
	var preds []Predicate
	var setup []Change
	for _, c := range gd.when {
		prop, ptr := fieldAt(obj, c.path)
		if prop == nil || prop.InsideList() {
			return Dependency{}, "condition on " + strings.Join(c.path, ".") + ", which is not a declared field outside lists"
		}
		pred := Predicate{Path: ptr, Op: c.op, Value: c.value, Reason: reason}
		switch {
		case prop.HasDefault:
			pred.Default = prop.Default
		case c.orElse != nil:
			pred.Default = c.orElse
		}
		if c.op == PredExists || c.op == PredAbsent {
			pred.Value = nil
		}
		ch, err := g.guardSetup(prop, pred)
		if err != nil {
			return Dependency{}, err.Error()
		}
		// A comparison of an absent field without a default fails in CEL: it must be set.
		if c.op == PredNotEquals && !prop.HasDefault && c.orElse == nil {
			preds = append(preds, Predicate{Path: ptr, Op: PredExists, Reason: reason})
		}
		preds = append(preds, pred)
		setup = append(setup, ch)
	}
	return Dependency{Subtree: guarded.Path.String(), When: preds, Setup: setup, Inferred: true, Rule: gd.rule}, ""
}

func displayPath(p *crd.Property) string {
	if len(p.Path) == 0 {
		return "the object"
	}
	return p.Path.String()
}

// guardSetup is the change that makes a guard's predicate hold on prop.
func (g *Generator) guardSetup(prop *crd.Property, pred Predicate) (Change, error) {
	switch pred.Op {
	case PredEquals:
		if !typeFits(prop, pred.Value) {
			return Change{}, fmt.Errorf("condition %s == %v does not fit the field's type %s", prop.Path, pred.Value, typeName(prop))
		}
		return Change{Op: OpSet, Path: pred.Path, Value: pred.Value}, nil
	case PredNotEquals:
		if b, ok := pred.Value.(bool); ok {
			return Change{Op: OpSet, Path: pred.Path, Value: !b}, nil
		}
		for _, e := range prop.Enum {
			if !jsonv.Equal(e, pred.Value) {
				return Change{Op: OpSet, Path: pred.Path, Value: e}, nil
			}
		}
		if prop.HasDefault && !jsonv.Equal(prop.Default, pred.Value) {
			return Change{Op: OpSet, Path: pred.Path, Value: prop.Default}, nil
		}
		return Change{}, fmt.Errorf("condition %s != %v: no other value known (no enum, no default)", prop.Path, pred.Value)
	}
	setup, err := g.deriveSetup([]Predicate{pred})
	if err != nil || len(setup) != 1 {
		return Change{}, fmt.Errorf("condition on %s: no setup: %v", prop.Path, err)
	}
	return setup[0], nil
}

// typeFits reports whether a literal can be the value of prop.
func typeFits(prop *crd.Property, v any) bool {
	switch v.(type) {
	case string:
		return prop.Type == crd.TypeString || prop.IntOrString || prop.Type == ""
	case int64:
		return prop.Type == crd.TypeInteger || prop.Type == crd.TypeNumber || prop.IntOrString || prop.Type == ""
	case float64:
		return prop.Type == crd.TypeNumber || prop.Type == ""
	case bool:
		return prop.Type == crd.TypeBoolean || prop.Type == ""
	}
	return false
}

// ruleRefused reports whether a drop reason is the refusal of an x-kubernetes-validations rule
// declared on p or one of its ancestors (by the rule's message, or the API server's
// "failed rule: <rule>" when it has none).
func ruleRefused(p *crd.Property, reason string) bool {
	for q := p; q != nil; q = q.Parent {
		for _, r := range q.Rules {
			if r.Transition {
				continue
			}
			if (r.Message != "" && strings.Contains(reason, r.Message)) || strings.Contains(reason, "failed rule: "+r.Rule) {
				return true
			}
		}
	}
	return false
}
