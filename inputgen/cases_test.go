package inputgen

import (
	"context"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// TestCasesChangeSomething checks, on the plans of the test CRDs, that every state of every test
// case changes an effective value (a default set explicitly, or {}, is no change), that an added
// object carries a non-default value, and that a feature a case turns on (a flag flipped to true,
// an object added) is turned off again by its last step.
func TestCasesChangeSomething(t *testing.T) {
	for _, name := range []string{"scenarios", "deps", "domain", "collections", "primitives"} {
		t.Run(name, func(t *testing.T) {
			s, seed, examples := loadCase(t, name)
			g := mustGenerator(t, s, seed, Options{Seed: 1, Examples: examples})
			plan, err := g.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			adds, flips := 0, 0
			for _, tc := range plan.TestCases {
				states := plan.States(tc.ID)
				prev := plan.Base
				for i, st := range states {
					if len(g.effectiveChanges(prev, st)) == 0 {
						t.Errorf("%s: state %d changes nothing the operator reads", tc.ID, i+1)
					}
					prev = st
				}
				if len(tc.Effective) == 0 {
					t.Errorf("%s: no effective change recorded", tc.ID)
				}
				start := plan.Base
				if len(tc.Setup) > 0 {
					start = states[0]
					states = states[1:]
				}
				turnsOn := tc.Generator == "object/add" || (tc.Generator == "boolean/flip" && strings.Contains(tc.Description, "to true"))
				if !turnsOn {
					continue
				}
				if tc.Generator == "object/add" {
					adds++
					ptr, ok := pointerOf(s.Lookup(tc.Property).Path)
					if !ok {
						continue
					}
					v, _ := jsonv.Get(states[0], ptr)
					if !effectiveDiff(map[string]bool{}, s.Lookup(tc.Property), nil, v) {
						t.Errorf("%s adds %s: only defaults", tc.ID, describeValue(v))
					}
				} else {
					flips++
				}
				if len(states) < 2 || len(g.effectiveChanges(start, states[len(states)-1])) > 0 {
					t.Errorf("%s turns something on and never off: %d steps, %s", tc.ID, len(states), tc.Description)
				}
			}
			if adds+flips == 0 && name != "primitives" && name != "collections" {
				t.Errorf("no object/add or flip to true in the %s plan: the test checks nothing", name)
			}
		})
	}
}

// TestEffectiveChanges checks what counts as a change of an effective value.
func TestEffectiveChanges(t *testing.T) {
	s, seed, _ := loadCase(t, "deps")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	base := g.Base()
	with := func(ptr string, v any) map[string]any {
		st := jsonv.CopyMap(base)
		if err := jsonv.Set(st, ptr, v); err != nil {
			t.Fatal(err)
		}
		return st
	}
	for _, c := range []struct {
		name    string
		to      map[string]any
		changes bool
	}{
		{"an empty object", with("/spec/tls", map[string]any{}), false},
		{"an object of defaults", with("/spec/tls", map[string]any{"enabled": false}), false},
		{"a feature left off", with("/spec/tls", map[string]any{"enabled": false, "secretName": "x"}), false},
		{"a feature turned on", with("/spec/tls", map[string]any{"enabled": true}), true},
		{"a default set explicitly", with("/spec/mode", "standalone"), false},
		{"another enum value", with("/spec/mode", "cluster"), true},
	} {
		got := len(g.effectiveChanges(base, c.to)) > 0
		if got != c.changes {
			t.Errorf("%s: changes = %v, want %v (%v)", c.name, got, c.changes, g.effectiveChanges(base, c.to))
		}
	}
}

// TestTurnOffKeepsSiblings checks that the step turning a feature off takes back only what the
// case set: a flag beside fields an earlier change set keeps them (cases accumulate on one CR).
func TestTurnOffKeepsSiblings(t *testing.T) {
	s, seed, _ := loadCase(t, "deps")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	start := g.Base()
	if err := jsonv.Set(start, "/spec/tls", map[string]any{"secretName": "earlier"}); err != nil {
		t.Fatal(err)
	}
	c := &caseCtx{g: g, p: s.Lookup("spec.tls.enabled"), r: g.seedFor("spec.tls.enabled", "test", 0), start: start}
	d, err := genFlip(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.steps) != 2 {
		t.Fatalf("%d steps, want the flip and its undo", len(d.steps))
	}
	if v, _ := jsonv.Get(d.steps[0], "/spec/tls/enabled"); v != true {
		t.Fatalf("step 1 sets enabled to %v", v)
	}
	if v, _ := jsonv.Get(d.steps[1], "/spec/tls/secretName"); v != "earlier" {
		t.Fatalf("the undo step lost the sibling field: tls = %v", jsonv.At(d.steps[1], "spec", "tls"))
	}
	if v, ok := jsonv.Get(d.steps[1], "/spec/tls/enabled"); ok {
		t.Fatalf("the undo step leaves enabled = %v; it was absent", v)
	}
}
