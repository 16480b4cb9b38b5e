package inputgen

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
)

// guardString renders guards compactly: "tls <- mode equals cluster, size exists".
func guardString(gs []guard) string {
	var out []string
	for _, g := range gs {
		var conds []string
		for _, c := range g.when {
			s := strings.Join(c.path, ".") + " " + string(c.op)
			if c.value != nil {
				s += fmt.Sprintf(" %v", c.value)
			}
			if c.orElse != nil {
				s += fmt.Sprintf(" (absent: %v)", c.orElse)
			}
			conds = append(conds, s)
		}
		out = append(out, strings.Join(g.guarded, ".")+" <- "+strings.Join(conds, ", "))
	}
	return strings.Join(out, "; ")
}

func TestRuleGuards(t *testing.T) {
	p, err := celParser()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ rule, want string }{
		{`!has(self.tls) || self.mode == 'cluster'`, "tls <- mode equals cluster"},
		{`self.mode == 'cluster' || !has(self.tls)`, "tls <- mode equals cluster"},
		{`has(self.tls) ? self.mode == 'cluster' : true`, "tls <- mode equals cluster"},
		{`!(has(self.persistence) && self.workload == 'Deployment')`, "persistence <- workload notEquals Deployment"},
		{`!has(self.tls) || (self.mode == 'cluster' && has(self.certs))`, "tls <- mode equals cluster, certs exists"},
		{`!has(self.tls) || self.secure`, "tls <- secure equals true"},
		{`!has(self.tls) || !self.insecure`, "tls <- insecure equals false"},
		{`'cluster' == self.mode || !has(self.tls)`, "tls <- mode equals cluster"},
		{`!has(self.tls) || self.mode in ['cluster', 'sentinel']`, "tls <- mode equals cluster"},
		{`!has(self.pdb) || self.replicas >= 3`, "pdb <- replicas equals 3"},
		{`!has(self.pdb) || 1 < self.replicas`, "pdb <- replicas equals 2"},
		{`!has(self.a) || !has(self.a.b) || self.c.d == 'x'`, "a.b <- c.d equals x"},
		{`self.mode != 'standalone' ? true : !has(self.shards)`, "shards <- mode notEquals standalone"},
		{`!has(self.tls) || !(self.mode == 'a' || self.mode == 'b')`, "tls <- mode notEquals a, mode notEquals b"},
		{`!has(self.x) || ((has(self.y) && has(self.y.mode)) ? self.y.mode : 'Disabled') == 'On'`, "x <- y.mode equals On (absent: Disabled)"},
		// A condition on values is preferred to removing another field.
		{`!has(self.x) || !has(self.y) || self.mode == 'a'`, "x <- mode equals a; y <- mode equals a"},
		{`!has(self.x) || !has(self.y) || self.list.all(e, e != '')`, "x <- y absent; y <- x absent"},
		// Not guards: no presence test, a constraint on the guarded field's own value, a
		// conjunction, comparisons of two fields, comprehensions, transition rules.
		{`self.minSize <= self.maxSize`, ""},
		{`!has(self.passwordSecret) || (has(self.passwordSecret.name) && size(self.passwordSecret.name) > 0)`, ""},
		{`!has(self.timeout) || !has(self.interval) || duration(self.timeout) <= duration(self.interval)`, ""},
		{`has(self.x) && self.y == 'Z'`, ""},
		{`!has(self.x) || self.y == self.z`, ""},
		{`!has(self.x) || self.list.all(e, e.name != '')`, ""},
		{`!has(self.x) || size(self) > 1`, ""},
		{`!has(oldSelf.x) || has(self.x)`, ""},
		{`not a rule (`, ""},
	}
	for _, tt := range tests {
		if got := guardString(ruleGuards(p, tt.rule)); got != tt.want {
			t.Errorf("%s\n got  %q\n want %q", tt.rule, got, tt.want)
		}
	}
}

func TestRuleImplications(t *testing.T) {
	p, err := celParser()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ rule, want string }{
		{`!has(self.enabled) || !self.enabled || (has(self.secretName) && size(self.secretName) > 0)`, "enabled equals true -> secretName exists, secretName exists"},
		{`self.mode != 'cluster' || self.shards >= 3`, "mode equals cluster -> shards equals 3"},
		{`self.mode == 'cluster' ? has(self.shards) : true`, "mode equals cluster -> shards exists"},
		{`!self.tls || self.port != 6379`, "tls equals true -> port notEquals 6379; port equals 6379 -> tls equals false"},
		{`!has(self.tls) || self.mode == 'cluster'`, ""}, // a presence guard, not an implication
		{`self.mode != 'cluster' || size(self.mode) > 3`, ""},
	}
	for _, tt := range tests {
		var got []string
		for _, im := range ruleImplications(p, tt.rule) {
			var then []string
			for _, c := range im.then {
				s := strings.Join(c.path, ".") + " " + string(c.op)
				if c.value != nil {
					s += fmt.Sprintf(" %v", c.value)
				}
				then = append(then, s)
			}
			got = append(got, fmt.Sprintf("%s %s %v -> %s", strings.Join(im.trigger.path, "."), im.trigger.op, im.trigger.value, strings.Join(then, ", ")))
		}
		if g := strings.Join(got, "; "); g != tt.want {
			t.Errorf("%s\n got  %q\n want %q", tt.rule, g, tt.want)
		}
	}
}

// TestRuleGuardCoverage: properties a validation rule guards are covered by setting the guard
// first (a setup state), not by redrawing; fields typed string with
// x-kubernetes-preserve-unknown-fields get string values.
func TestRuleGuardCoverage(t *testing.T) {
	clearLLMEnv(t)
	out := t.TempDir()
	var stdout bytes.Buffer
	if err := RunGen(context.Background(), GenOptions{CRDPath: testdataPath("guards.crd.yaml"), SeedPath: testdataPath("guards.seed.yaml"), OutDir: out, Seed: 1}, &stdout); err != nil {
		t.Fatal(err)
	}
	plan, err := ReadPlanFile(filepath.Join(out, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range plan.Properties {
		if !pc.Covered {
			t.Errorf("%s uncovered: %s", pc.Path, pc.Reason)
		}
	}
	if plan.Stats.Coverage < 1 {
		t.Errorf("coverage %.3f, want 1:\n%s", plan.Stats.Coverage, stdout.String())
	}
	if plan.Stats.RuleGuards < 4 {
		t.Errorf("%d rule guards solved, want at least 4", plan.Stats.RuleGuards)
	}
	if plan.Stats.Redrawn > 10 {
		t.Errorf("%d candidates redrawn: guards should make draws valid", plan.Stats.Redrawn)
	}
	// The TLS cases set the mode first.
	found := false
	for _, tc := range plan.TestCases {
		if !strings.HasPrefix(tc.Property, "spec.tls") || tc.Label != Valid {
			continue
		}
		for _, pr := range tc.Preconditions {
			if pr.Path == "/spec/mode" && pr.Op == PredEquals && pr.Value == "cluster" {
				found = true
			}
		}
	}
	if !found {
		t.Error("no valid spec.tls test case has the precondition mode == cluster")
	}
	// Switching the cache on also sets the secret name its rule requires.
	if tc := plan.TestCase("spec.cache.enabled#boolean/flip"); tc == nil || tc.Label != Valid || !strings.Contains(tc.Description, "also setting spec.cache.secretName") {
		t.Errorf("spec.cache.enabled flip: %+v: want a valid case that also sets spec.cache.secretName", tc)
	}
	// The string field with preserve-unknown-fields gets strings.
	for _, tc := range plan.TestCases {
		if tc.Property != "spec.script" || tc.Label != Valid {
			continue
		}
		for _, st := range tc.Steps {
			for _, ch := range st.Changes {
				if ch.Path == "/spec/script" && ch.Op == OpSet {
					if _, ok := ch.Value.(string); !ok {
						t.Errorf("%s sets spec.script to %T %v, want a string", tc.ID, ch.Value, ch.Value)
					}
				}
			}
		}
	}
}

// TestUncoveredByRule: a property whose only valid values a rule the generator cannot solve
// forbids is counted in the plan's stats.
func TestUncoveredByRule(t *testing.T) {
	s := mustSchema(t, testcrds.CRD("Lock", `
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            x-kubernetes-validations:
            - rule: '!has(self.code) || self.code == self.key + ''-1'''
              message: code must be the key and -1
            properties:
              key: {type: string, enum: [abc]}
              code: {type: string}
`))
	g, err := NewGenerator(s, map[string]any{"apiVersion": "test.gauntlet.dev/v1", "kind": "Lock",
		"metadata": map[string]any{"name": "l"}, "spec": map[string]any{"key": "abc"}}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Stats.UncoveredByRule != 1 {
		t.Errorf("uncoveredByRule %d, want 1 (spec.code)", plan.Stats.UncoveredByRule)
	}
	for _, pc := range plan.Properties {
		if pc.Path == "spec.code" && (pc.Covered || !strings.Contains(pc.Reason, "validation rule")) {
			t.Errorf("spec.code: covered %v, reason %q: want uncovered by a validation rule", pc.Covered, pc.Reason)
		}
	}
}
