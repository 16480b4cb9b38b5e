package inputgen

import (
	"errors"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

func TestPredicateHolds(t *testing.T) {
	state := map[string]any{"spec": map[string]any{"tls": map[string]any{"enabled": true}, "mode": "cluster", "gone": nil}}
	tests := []struct {
		p    Predicate
		want bool
	}{
		{Predicate{Path: "/spec/tls/enabled", Op: PredEquals, Value: true}, true},
		{Predicate{Path: "/spec/tls/enabled", Op: PredNotEquals, Value: true}, false},
		{Predicate{Path: "/spec/metrics/enabled", Op: PredEquals, Value: true, Default: false}, false},
		{Predicate{Path: "/spec/metrics/enabled", Op: PredEquals, Value: false, Default: false}, true},
		{Predicate{Path: "/spec/mode", Op: PredEquals, Value: "cluster"}, true},
		{Predicate{Path: "/spec/tls", Op: PredExists}, true},
		{Predicate{Path: "/spec/gone", Op: PredExists}, false},
		{Predicate{Path: "/spec/gone", Op: PredAbsent}, true},
		{Predicate{Path: "/spec/nothing", Op: PredAbsent}, true},
		{Predicate{Path: "/spec/mode", Op: "bogus"}, false},
	}
	for _, tt := range tests {
		if got := tt.p.Holds(state); got != tt.want {
			t.Errorf("%+v.Holds = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestApply(t *testing.T) {
	tc := &TestCase{
		ID:            "spec.tls.secretName#x",
		Preconditions: []Predicate{{Path: "/spec/tls/enabled", Op: PredEquals, Value: true, Default: false}},
		Setup:         []Change{{Op: OpSet, Path: "/spec/tls/enabled", Value: true}},
		Steps: []Step{
			{Changes: []Change{{Op: OpSet, Path: "/spec/tls/secretName", Value: "a"}}},
			{Changes: []Change{{Op: OpRemove, Path: "/spec/tls/secretName"}}},
		},
	}
	base := map[string]any{"spec": map[string]any{"replicas": int64(3)}}
	states, err := tc.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 {
		t.Fatalf("got %d states, want setup + 2 steps", len(states))
	}
	if v, _ := jsonv.Get(states[0], "/spec/tls/enabled"); v != true {
		t.Error("setup state lacks the toggle")
	}
	if v, _ := jsonv.Get(states[1], "/spec/tls/secretName"); v != "a" {
		t.Error("step 1 not applied")
	}
	if _, ok := jsonv.Get(states[2], "/spec/tls/secretName"); ok {
		t.Error("step 2 not applied")
	}
	if _, ok := jsonv.Get(base, "/spec/tls"); ok {
		t.Error("Apply modified the current state")
	}
	// With the precondition already true, no setup state is declared.
	states, err = tc.Apply(states[0])
	if err != nil || len(states) != 2 {
		t.Errorf("with precondition met: %d states, err %v", len(states), err)
	}
	// A setup that does not make the preconditions true is an error, as is a bad change.
	bad := &TestCase{ID: "bad", Preconditions: tc.Preconditions, Setup: []Change{{Op: OpSet, Path: "/spec/other", Value: 1}}}
	if _, err := bad.Apply(base); !errors.Is(err, ErrChange) {
		t.Errorf("unmet after setup: err = %v", err)
	}
	bad = &TestCase{ID: "bad", Steps: []Step{{Changes: []Change{{Op: OpSet, Path: "/spec/replicas/x", Value: 1}}}}}
	if _, err := bad.Apply(base); !errors.Is(err, ErrChange) {
		t.Errorf("bad change: err = %v", err)
	}
	bad = &TestCase{ID: "bad", Steps: []Step{{Changes: []Change{{Op: "move", Path: "/spec"}}}}}
	if _, err := bad.Apply(base); !errors.Is(err, ErrChange) {
		t.Errorf("unknown op: err = %v", err)
	}
}

func TestChangesBetween(t *testing.T) {
	a := map[string]any{"spec": map[string]any{"a": int64(1), "b": "x", "l": []any{int64(1)}}}
	b := map[string]any{"spec": map[string]any{"a": int64(2), "c": true, "l": []any{int64(1), int64(2)}}}
	changes := changesBetween(a, b)
	got := jsonv.CopyMap(a)
	if err := ApplyChanges(got, changes); err != nil {
		t.Fatal(err)
	}
	if !jsonv.Equal(got, b) {
		t.Errorf("applying %v to a gives %v, want %v", changes, got, b)
	}
}
