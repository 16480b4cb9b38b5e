package inputgen

import (
	"errors"
	"fmt"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Label says what a test case is expected to do to the system.
type Label string

const (
	// Valid test cases are changes a user may make; the operator must reach the new desired state.
	Valid Label = "valid"
	// Misoperation test cases are schema-valid but semantically wrong (1000 replicas, an
	// unsatisfiable affinity, shrinking storage): the operator must not break the system and must
	// recover after rollback. They are reported apart from bugs.
	Misoperation Label = "misoperation"
)

// Op is the kind of a Change.
type Op string

const (
	// OpSet stores Value at Path, creating missing parent objects.
	OpSet Op = "set"
	// OpRemove deletes the value at Path; a missing value is not an error.
	OpRemove Op = "remove"
)

// Change is one edit of a desired state.
type Change struct {
	Op Op `json:"op"`
	// Path is an RFC 6901 JSON pointer into the custom resource, e.g. "/spec/replicas".
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// PredicateOp is the comparison a Predicate makes.
type PredicateOp string

const (
	// PredEquals holds when the value at Path (or Default when absent) equals Value.
	PredEquals PredicateOp = "equals"
	// PredNotEquals holds when the value at Path (or Default when absent) differs from Value.
	PredNotEquals PredicateOp = "notEquals"
	// PredExists holds when Path is present and not null.
	PredExists PredicateOp = "exists"
	// PredAbsent holds when Path is absent or null.
	PredAbsent PredicateOp = "absent"
)

// Predicate is a condition on the current desired state that a test case depends on.
type Predicate struct {
	// Path is an RFC 6901 JSON pointer.
	Path string      `json:"path"`
	Op   PredicateOp `json:"op"`
	// Value is compared with by PredEquals and PredNotEquals.
	Value any `json:"value,omitempty"`
	// Default is the value assumed when Path is absent (the schema default), if any.
	Default any `json:"default,omitempty"`
	// Reason says where the predicate comes from (an inferred toggle or the target).
	Reason string `json:"reason,omitempty"`
}

// Holds evaluates the predicate on a desired state.
func (p Predicate) Holds(state map[string]any) bool {
	v, ok := jsonv.Get(state, p.Path)
	if ok && v == nil {
		ok = false
	}
	switch p.Op {
	case PredExists:
		return ok
	case PredAbsent:
		return !ok
	case PredEquals, PredNotEquals:
		if !ok {
			v = p.Default
		}
		eq := jsonv.Equal(v, p.Value)
		if p.Op == PredEquals {
			return eq
		}
		return !eq
	}
	return false
}

// Step is one desired state the campaign declares: the changes relative to the previous one.
type Step struct {
	Changes []Change `json:"changes"`
	// Description says what the step does, e.g. "scale up to 5".
	Description string `json:"description,omitempty"`
}

// TestCase is one change of desired state in Acto's shape: preconditions it depends on, a setup
// that makes them true, and the mutation (one or more steps).
type TestCase struct {
	// ID is stable for a given CRD, seed CR, options and seed.
	ID string `json:"id"`
	// Property is the path of the property the test case targets.
	Property string `json:"property"`
	// Generator names the generator or scenario, e.g. "integer/boundary-max" or "replicas/scale-up-down".
	Generator   string `json:"generator"`
	Label       Label  `json:"label"`
	Description string `json:"description"`
	// Preconditions must hold before the steps apply; when one does not, Setup runs first as its
	// own desired state.
	Preconditions []Predicate `json:"preconditions,omitempty"`
	Setup         []Change    `json:"setup,omitempty"`
	Steps         []Step      `json:"steps"`
	// Recreate is true when the API server accepts the change only on a new object (transition
	// rules make it immutable or creation-only): the campaign deletes and re-creates the CR.
	Recreate bool `json:"recreate,omitempty"`
	// Covers lists every property whose value the test case changes (from the seed).
	Covers []string `json:"covers"`
	// Effective lists the properties whose effective value a state of the test case changes
	// from the one before it: an absent property counts as its default, so setting one to its
	// default, or to what it already was, is not a change.
	Effective []string `json:"effective,omitempty"`
	// Pods is the estimated peak number of operand pods the test case's desired states ask for
	// (replica-like fields times shard-like ones; 0 when the schema names none).
	Pods int `json:"pods,omitempty"`
	// File is the YAML file holding the desired states from the seed, when written by RunGen.
	File string `json:"file,omitempty"`
}

// ErrChange is returned when a change cannot be applied to a desired state.
var ErrChange = errors.New("change does not apply to the desired state")

// Satisfied reports whether every precondition holds on state.
func (tc *TestCase) Satisfied(state map[string]any) bool {
	for _, p := range tc.Preconditions {
		if !p.Holds(state) {
			return false
		}
	}
	return true
}

// Apply returns the desired states a campaign declares for this test case starting from current
// (which is not modified): the setup state first when a precondition does not hold, then one state
// per step.
func (tc *TestCase) Apply(current map[string]any) ([]map[string]any, error) {
	state := jsonv.CopyMap(current)
	var out []map[string]any
	if !tc.Satisfied(state) {
		if err := ApplyChanges(state, tc.Setup); err != nil {
			return nil, fmt.Errorf("test case %s setup: %w", tc.ID, err)
		}
		if !tc.Satisfied(state) {
			return nil, fmt.Errorf("test case %s: setup leaves a precondition unmet: %w", tc.ID, ErrChange)
		}
		out = append(out, jsonv.CopyMap(state))
	}
	for i, st := range tc.Steps {
		if err := ApplyChanges(state, st.Changes); err != nil {
			return nil, fmt.Errorf("test case %s step %d: %w", tc.ID, i+1, err)
		}
		out = append(out, jsonv.CopyMap(state))
	}
	return out, nil
}

// ApplyChanges applies changes to state in place.
func ApplyChanges(state map[string]any, changes []Change) error {
	for _, c := range changes {
		var err error
		switch c.Op {
		case OpSet:
			err = jsonv.Set(state, c.Path, c.Value)
		case OpRemove:
			err = jsonv.Remove(state, c.Path)
		default:
			err = fmt.Errorf("unknown op %q", c.Op)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %v: %w", c.Op, c.Path, err, ErrChange)
		}
	}
	return nil
}

// changesBetween lists the changes that turn a into b.
func changesBetween(a, b map[string]any) []Change {
	edits := jsonv.Diff(a, b)
	out := make([]Change, 0, len(edits))
	for _, e := range edits {
		c := Change{Op: OpSet, Path: jsonv.Pointer(e.Tokens), Value: e.Value}
		if e.Op == jsonv.OpRemove {
			c = Change{Op: OpRemove, Path: jsonv.Pointer(e.Tokens)}
		}
		out = append(out, c)
	}
	return out
}
