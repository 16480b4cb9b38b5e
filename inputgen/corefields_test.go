package inputgen

import (
	"context"
	"fmt"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// TestCoreRefusals checks, on every state of every valid test case of a CRD carrying the core
// types concerned, the rules the API server still enforced on the shared CRDs' valid test cases
// once domain-aware values were drawn: each subtest is one class of those refusals and failed
// before generation kept the rule (or labelled the case a misoperation).
func TestCoreRefusals(t *testing.T) {
	s, seed, _ := loadCase(t, "refusals")
	// Several draws, so that every rule is exercised (a pool value, an appended element's fields).
	var plans []*Plan
	for i := int64(1); i <= 6; i++ {
		g := mustGenerator(t, s, seed, Options{Seed: i})
		plan, err := g.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, plan)
	}
	// check applies fn to every object at the schema path in every state of every valid test
	// case; fn returns why the object is refused, or "". want is what must be seen at least once
	// (a state fn marks as exercising the rule) for the check to prove something.
	check := func(t *testing.T, path string, fn func(m map[string]any) (why string, exercised bool)) {
		t.Helper()
		p := s.Lookup(path)
		if p == nil {
			t.Fatalf("no property %s", path)
		}
		exercised := 0
		for i, plan := range plans {
			for _, tc := range plan.TestCases {
				if tc.Label != Valid {
					continue
				}
				for _, st := range plan.States(tc.ID) {
					for _, ptr := range instances(st, p.Path) {
						v, _ := jsonv.Get(st, ptr)
						m, ok := v.(map[string]any)
						if !ok {
							continue
						}
						why, ex := fn(m)
						if ex {
							exercised++
						}
						if why != "" {
							t.Errorf("seed %d: %s: %s: %s", i+1, tc.ID, ptr, why)
						}
					}
				}
			}
		}
		if exercised == 0 {
			t.Errorf("no valid state exercises the rule at %s: the check proves nothing", path)
		}
	}
	const podSpec = "spec.statefulSet.spec.template.spec"
	t.Run("pod template restarts always", func(t *testing.T) {
		check(t, podSpec, func(m map[string]any) (string, bool) {
			rp, set := m["restartPolicy"]
			if set && rp != "Always" {
				return fmt.Sprintf("restartPolicy %v in a StatefulSet's pod template", rp), true
			}
			return "", set
		})
	})
	t.Run("dnsPolicy None has a dnsConfig", func(t *testing.T) {
		check(t, podSpec, func(m map[string]any) (string, bool) {
			if m["dnsPolicy"] != "None" {
				return "", false
			}
			ns, _ := jsonv.Get(m, "/dnsConfig/nameservers")
			if l, _ := ns.([]any); len(l) == 0 {
				return "dnsPolicy None without dnsConfig nameservers", true
			}
			return "", true
		})
	})
	t.Run("dnsPolicy None only where a dnsConfig can be", func(t *testing.T) {
		check(t, "spec.pod", func(m map[string]any) (string, bool) {
			p, set := m["dnsPolicy"]
			if p == "None" {
				return "dnsPolicy None in a pod spec without dnsConfig", true
			}
			return "", set
		})
		// Nor is None drawn there (and then undone).
		if known := knownValues(s.Lookup("spec.pod.dnsPolicy")); len(known) == 0 || containsString(known, "None") {
			t.Errorf("values drawn for spec.pod.dnsPolicy: %v, want some, not None", known)
		}
	})
	t.Run("divisor fits its resource", func(t *testing.T) {
		cpu := []string{"1m", "1"}
		mem := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
		check(t, podSpec+".containers[*].env[*].valueFrom.resourceFieldRef", func(m map[string]any) (string, bool) {
			d, set := m["divisor"]
			if !set {
				return "", false
			}
			q, err := parseQuantity(d)
			if err != nil {
				return fmt.Sprintf("divisor %v: %v", d, err), true
			}
			ok := containsString(mem, q.String())
			if r, _ := m["resource"].(string); r == "limits.cpu" || r == "requests.cpu" {
				ok = containsString(cpu, q.String())
			}
			if !ok {
				return fmt.Sprintf("divisor %v with resource %v", d, m["resource"]), true
			}
			return "", true
		})
	})
	t.Run("a Secret key selector names its Secret", func(t *testing.T) {
		check(t, "spec.servicePassword", func(m map[string]any) (string, bool) {
			if n, _ := m["name"].(string); n == "" {
				return fmt.Sprintf("a Secret key selector without a name: %v", m), true
			}
			return "", true
		})
	})
	t.Run("probe grace periods", func(t *testing.T) {
		check(t, "spec.readinessProbe", func(m map[string]any) (string, bool) {
			if g, set := m["terminationGracePeriodSeconds"]; set {
				return fmt.Sprintf("a readiness probe with terminationGracePeriodSeconds %v", g), true
			}
			return "", len(m) > 0
		})
		check(t, podSpec+".containers[*].startupProbe", func(m map[string]any) (string, bool) {
			g, set := m["terminationGracePeriodSeconds"]
			if n, _ := jsonv.AsInt(g); set && n <= 0 {
				return fmt.Sprintf("a startup probe with terminationGracePeriodSeconds %v", g), true
			}
			return "", set
		})
	})
	t.Run("a toleration without a key tolerates everything", func(t *testing.T) {
		check(t, "spec.tolerations[*]", func(m map[string]any) (string, bool) {
			if k, _ := m["key"].(string); k == "" && m["operator"] != "Exists" {
				return fmt.Sprintf("operator %v without a key", m["operator"]), true
			}
			return "", true
		})
	})
	t.Run("node ports only on NodePort and LoadBalancer Services", func(t *testing.T) {
		check(t, "spec.service.spec", func(m map[string]any) (string, bool) {
			ports, _ := m["ports"].([]any)
			for _, p := range ports {
				if pm, _ := p.(map[string]any); pm["nodePort"] != nil && m["type"] != "NodePort" && m["type"] != "LoadBalancer" {
					return fmt.Sprintf("nodePort %v on a Service of type %v", pm["nodePort"], m["type"]), true
				} else if pm["nodePort"] != nil {
					return "", true
				}
			}
			return "", false
		})
	})
	t.Run("volume mounts", func(t *testing.T) {
		check(t, podSpec+".containers[*].volumeMounts[*]", func(m map[string]any) (string, bool) {
			if m["subPath"] != nil && m["subPathExpr"] != nil {
				return "subPath and subPathExpr", true
			}
			return "", m["subPathExpr"] != nil
		})
		check(t, podSpec+".containers[*].volumeMounts[*]", func(m map[string]any) (string, bool) {
			rro, set := m["recursiveReadOnly"]
			if !set {
				return "", false
			}
			switch rro {
			case "Disabled":
			case "Enabled", "IfPossible":
				if m["readOnly"] != true {
					return fmt.Sprintf("recursiveReadOnly %v on a mount that is not read-only", rro), true
				}
				if mp, set := m["mountPropagation"]; set && mp != "None" {
					return fmt.Sprintf("recursiveReadOnly %v with mountPropagation %v", rro, mp), true
				}
			default:
				return fmt.Sprintf("recursiveReadOnly %v", rro), true
			}
			return "", true
		})
	})
	t.Run("SELinux change policy", func(t *testing.T) {
		check(t, podSpec+".securityContext", func(m map[string]any) (string, bool) {
			p, set := m["seLinuxChangePolicy"]
			if set && p != "Recursive" {
				return fmt.Sprintf("seLinuxChangePolicy %v (only Recursive without the SELinuxMount feature)", p), true
			}
			return "", set
		})
	})
	t.Run("a container's restart policy", func(t *testing.T) {
		check(t, podSpec+".containers[*]", func(m map[string]any) (string, bool) {
			p, set := m["restartPolicy"]
			if set && p != "Always" {
				return fmt.Sprintf("restartPolicy %v", p), true
			}
			return "", set
		})
	})
	t.Run("a StatefulSet selects", func(t *testing.T) {
		check(t, "spec.statefulSet.spec", func(m map[string]any) (string, bool) {
			sel, set := m["selector"].(map[string]any)
			if !set {
				return "", false
			}
			ml, _ := sel["matchLabels"].(map[string]any)
			me, _ := sel["matchExpressions"].([]any)
			if len(ml) == 0 && len(me) == 0 {
				return "an empty selector", true
			}
			return "", true
		})
	})
	t.Run("container names are distinct across containers and init containers", func(t *testing.T) {
		check(t, podSpec, func(m map[string]any) (string, bool) {
			seen := map[any]bool{}
			for _, list := range []string{"containers", "initContainers"} {
				items, _ := m[list].([]any)
				for _, it := range items {
					n := it.(map[string]any)["name"]
					if seen[n] {
						return fmt.Sprintf("two containers named %v", n), true
					}
					seen[n] = true
				}
			}
			return "", true
		})
	})
}
