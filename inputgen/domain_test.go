package inputgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// validValues returns, per schema property path, the scalar values valid test cases of plan put
// in their desired states where the seed has another value or none.
func validValues(t *testing.T, g *Generator, plan *Plan) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	var walk func(toks []jsonv.Token, v any)
	walk = func(toks []jsonv.Token, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(append(toks[:len(toks):len(toks)], k), e)
			}
		case []any:
			for i, e := range x {
				walk(append(toks[:len(toks):len(toks)], i), e)
			}
		default:
			ptr := jsonv.Pointer(toks)
			if base, ok := jsonv.Get(plan.Base, ptr); ok && jsonv.Equal(base, v) {
				return
			}
			p := g.propertyAtPointer(ptr)
			if p == nil {
				return
			}
			path := p.Path.String()
			if !containsValue(out[path], v) {
				out[path] = append(out[path], v)
			}
		}
	}
	for _, tc := range plan.TestCases {
		if tc.Label != Valid {
			continue
		}
		for _, st := range plan.States(tc.ID) {
			walk(nil, st)
		}
	}
	return out
}

var (
	cronRE      = regexp.MustCompile(`^(@(hourly|daily|weekly|monthly|yearly))$|^([0-9*/,-]+ ){4}[0-9*/,A-Za-z-]+$`)
	cIdentRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	seedVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
)

// TestDomainValues checks the values valid test cases give string fields whose meaning comes from
// their names, descriptions and the core types they map to: each defect class of issue 10 item 2
// is a subtest that failed before domain-aware values.
func TestDomainValues(t *testing.T) {
	s, seed, _ := loadCase(t, "domain")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	vals := validValues(t, g, plan)
	check := func(t *testing.T, path string, ok func(v any) bool, want string) {
		t.Helper()
		if len(vals[path]) == 0 {
			t.Fatalf("no valid test case sets %s: the check proves nothing", path)
		}
		var bad []string
		for _, v := range vals[path] {
			if !ok(v) {
				bad = append(bad, fmt.Sprintf("%#v", v))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s: valid test cases set %s, want %s", path, strings.Join(bad, ", "), want)
		}
	}
	str := func(f func(s string) bool) func(v any) bool {
		return func(v any) bool {
			s, ok := v.(string)
			return ok && f(s)
		}
	}
	in := func(list ...string) func(v any) bool {
		return str(func(s string) bool { return containsString(list, s) })
	}
	t.Run("cron schedule", func(t *testing.T) {
		check(t, "spec.backup.schedule", str(cronRE.MatchString), "a cron schedule")
	})
	t.Run("URL", func(t *testing.T) {
		check(t, "spec.backup.endpointURL", str(func(s string) bool {
			u, err := url.Parse(s)
			return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		}), "an http(s) URL")
	})
	t.Run("duration", func(t *testing.T) {
		goDuration := str(func(s string) bool { _, err := time.ParseDuration(s); return err == nil })
		for _, path := range []string{"spec.backup.retention", "spec.backup.timeout", "spec.exporter.scrapeInterval"} {
			check(t, path, goDuration, "a duration")
		}
	})
	t.Run("version in the seed's form", func(t *testing.T) {
		check(t, "spec.operatorVersion", str(seedVersion.MatchString), "a version like the seed's v5.4.0")
	})
	t.Run("version from the description's list", func(t *testing.T) {
		check(t, "spec.version", in("7.2.5", "8.0.1"), "a version the description lists")
	})
	t.Run("images from the seed", func(t *testing.T) {
		for _, path := range []string{"spec.exporter.image", "spec.sidecars[*].image"} {
			check(t, path, in("quay.io/acme/vault:v5.4.0", "busybox:1.36"), "an image of the seed (no made-up registry)")
		}
	})
	t.Run("seed values only for fields of the same meaning", func(t *testing.T) {
		check(t, "spec.sidecars[*].securityContext.seccompProfile.type", in("RuntimeDefault", "Unconfined", "Localhost"),
			"a seccomp profile type (not the backup type s3)")
		check(t, "spec.volumes[*].name", str(func(s string) bool {
			return len(validation.IsDNS1123Label(s)) == 0 && !containsString([]string{"LOG_LEVEL", "logger", "metrics"}, s)
		}), "a DNS-1123 label that is not the name of an environment variable, container or port")
	})
	t.Run("names", func(t *testing.T) {
		label := str(func(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 })
		check(t, "spec.sidecars[*].name", label, "a DNS-1123 label")
		check(t, "spec.sidecars[*].ports[*].name", str(func(s string) bool { return len(validation.IsValidPortName(s)) == 0 }), "an IANA service name")
		check(t, "spec.sidecars[*].env[*].name", str(cIdentRE.MatchString), "a C identifier")
		subdomain := str(func(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 })
		for _, path := range []string{"spec.volumes[*].configMap.name", "spec.backup.credentialsSecret.name", "spec.volumes[*].secret.secretName"} {
			check(t, path, subdomain, "a non-empty DNS-1123 subdomain")
		}
	})
	t.Run("the seed's form", func(t *testing.T) {
		check(t, "spec.failoverTimeout", str(regexp.MustCompile(`^[0-9]+$`).MatchString), "milliseconds, as the default 10000")
		forms := map[string]*regexp.Regexp{
			"maxConnections": regexp.MustCompile(`^[0-9]+$`),
			"slowLog":        regexp.MustCompile(`^(true|false)$`),
			"flushInterval":  regexp.MustCompile(`^[0-9]+(s|m|h)$`),
			"cacheSize":      regexp.MustCompile(`^[0-9]+(Ki|Mi|Gi)$`),
		}
		changed := map[string]bool{}
		for _, tc := range plan.TestCases {
			if tc.Label != Valid {
				continue
			}
			for _, st := range plan.States(tc.ID) {
				cfg, _ := jsonv.Get(st, "/spec/config")
				m, _ := cfg.(map[string]any)
				for k, re := range forms {
					v, ok := m[k].(string)
					if !ok || v == seed["spec"].(map[string]any)["config"].(map[string]any)[k] {
						continue
					}
					changed[k] = true
					if !re.MatchString(v) {
						t.Errorf("%s: config key %s set to %q, not in the seed's form", tc.ID, k, v)
					}
				}
			}
		}
		if len(changed) == 0 {
			t.Error("no valid test case changes a configuration value: the check proves nothing")
		}
	})
	t.Run("core fields", func(t *testing.T) {
		check(t, "spec.pod.hostAliases[*].ip", str(func(s string) bool { return net.ParseIP(s) != nil }), "an IP address")
		check(t, "spec.pod.containers[*].env[*].valueFrom.fieldRef.fieldPath", in("metadata.name", "metadata.namespace", "metadata.uid"),
			"a field path the downward API supports")
		check(t, "spec.pod.topologySpreadConstraints[*].maxSkew", func(v any) bool { n, ok := jsonv.AsInt(v); return ok && n >= 1 }, "a positive skew")
		check(t, "spec.volumes[*].hostPath.path", str(func(s string) bool { return strings.HasPrefix(s, "/") }), "an absolute path")
		check(t, "spec.volumes[*].hostPath.type", in("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"),
			"a host path type")
		if vs := vals["spec.pod.containers[*].livenessProbe.successThreshold"]; len(vs) > 0 {
			check(t, "spec.pod.containers[*].livenessProbe.successThreshold", func(v any) bool { n, ok := jsonv.AsInt(v); return ok && n == 1 }, "1")
		}
		var ephemeral int
		for _, tc := range plan.TestCases {
			if !strings.HasPrefix(tc.Property, "spec.pod.ephemeralContainers") {
				continue
			}
			if tc.Label == Valid && !strings.HasPrefix(tc.Description, "remove") {
				t.Errorf("%s is valid: %s", tc.ID, tc.Description)
			}
			ephemeral++
		}
		if ephemeral == 0 {
			t.Error("no test case sets an ephemeral container: the check proves nothing")
		}
		probed := 0
		for _, tc := range plan.TestCases {
			if tc.Label != Valid {
				continue
			}
			for _, st := range plan.States(tc.ID) {
				for _, list := range []string{"/spec/pod/containers", "/spec/sidecars", "/spec/pod/initContainers"} {
					l, _ := jsonv.Get(st, list)
					items, _ := l.([]any)
					for i, it := range items {
						m := it.(map[string]any)
						if img, _ := m["image"].(string); img == "" && !strings.Contains(tc.Description, "remove") {
							t.Errorf("%s: %s/%d has no image: %v", tc.ID, list, i, m)
						}
						if _, probe := m["livenessProbe"]; probe && list == "/spec/pod/initContainers" {
							probed++
							if m["restartPolicy"] != "Always" {
								t.Errorf("%s: init container %d has a liveness probe but restartPolicy %v", tc.ID, i, m["restartPolicy"])
							}
						}
					}
				}
			}
		}
		if probed == 0 {
			t.Error("no valid test case gives an init container a probe: the check proves nothing")
		}
	})
	t.Run("port", func(t *testing.T) {
		check(t, "spec.readinessPort", func(v any) bool {
			if n, ok := jsonv.AsInt(v); ok {
				return n >= 1024 && n <= 65535 // not a privileged port either
			}
			s, ok := v.(string)
			return ok && len(validation.IsValidPortName(s)) == 0
		}, "a port number or name")
	})
}

// TestSeedValuesKeepMeaning checks that values mined from the seed are offered only to properties
// of the same meaning: the backup's type s3 is no seccomp or host path type, an environment
// variable's name is no volume's and no Secret's, while every container image of the seed is an
// image for any image field.
func TestSeedValuesKeepMeaning(t *testing.T) {
	s, seed, _ := loadCase(t, "domain")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	c := &caseCtx{g: g, r: rand.New(rand.NewPCG(1, 2))}
	for path, foreign := range map[string][]any{
		"spec.sidecars[*].securityContext.seccompProfile.type": {"s3"},
		"spec.volumes[*].hostPath.type":                        {"s3"},
		"spec.volumes[*].name":                                 {"LOG_LEVEL", "logger", "metrics"},
		"spec.backup.credentialsSecret.name":                   {"LOG_LEVEL", "logger", "metrics", "data"},
		"spec.sidecars[*].env[*].name":                         {"logger", "metrics", "data"},
		"spec.sidecars[*].ports[*].name":                       {"logger", "data", "LOG_LEVEL"},
	} {
		p := s.Lookup(path)
		if p == nil {
			t.Fatalf("no property %s", path)
		}
		c.p = p
		for _, v := range c.candidates(p) {
			if containsValue(foreign, v) {
				t.Errorf("%s is offered %#v, a seed value of another meaning", path, v)
			}
		}
	}
	p := s.Lookup("spec.exporter.image")
	c.p = p
	got := c.candidates(p)
	for _, want := range []any{"quay.io/acme/vault:v5.4.0", "busybox:1.36"} {
		if !containsValue(got, want) {
			t.Errorf("spec.exporter.image is not offered the seed's image %s (got %v)", want, got)
		}
	}
}

// TestDomainOf checks the domains inferred for properties of the test CRD, and that a seed value
// contradicting a domain inferred from a name alone turns the inference off.
func TestDomainOf(t *testing.T) {
	s, seed, _ := loadCase(t, "domain")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	c := &caseCtx{g: g, r: rand.New(rand.NewPCG(1, 2))}
	for path, want := range map[string]domain{
		"spec.image":                     domImage,
		"spec.version":                   domVersion,
		"spec.backup.schedule":           domCron,
		"spec.backup.endpointURL":        domURL,
		"spec.backup.retention":          domDuration,
		"spec.exporter.scrapeInterval":   domDuration,
		"spec.backup.type":               domNone,
		"spec.sidecars[*].name":          domDNSLabel,
		"spec.sidecars[*].env[*].name":   domEnvName,
		"spec.sidecars[*].ports[*].name": domPortName,
		"spec.volumes[*].configMap.name": domDNSSubdomain,
		"spec.volumes[*].name":           domDNSLabel,
		"spec.readinessPort":             domPort,
	} {
		if got := c.domain(s.Lookup(path)); got != want {
			t.Errorf("%s: domain %q, want %q", path, got, want)
		}
	}
	pool := NewPool()
	pool.Add("spec.backup.timeout", "forever", SourceTarget)
	g2 := mustGenerator(t, s, seed, Options{Seed: 1, Pool: pool})
	c2 := &caseCtx{g: g2, r: rand.New(rand.NewPCG(1, 2))}
	if got := c2.domain(s.Lookup("spec.backup.timeout")); got != domNone {
		t.Errorf("spec.backup.timeout with a target value %q: domain %q, want none", "forever", got)
	}
}

// TestNoMadeUpImages checks that, when neither the seed nor the target offers an image, valid test
// cases use a real public one (a made-up reference never pulls) and setting a made-up one is a
// misoperation.
func TestNoMadeUpImages(t *testing.T) {
	s, seed, _ := loadCase(t, "domain")
	seed = jsonv.CopyMap(seed)
	spec := seed["spec"].(map[string]any)
	delete(spec, "image")
	delete(spec, "sidecars")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	vals := validValues(t, g, plan)
	for _, path := range []string{"spec.image", "spec.exporter.image", "spec.sidecars[*].image"} {
		for _, v := range vals[path] {
			if v != fallbackImage {
				t.Errorf("%s: valid test cases set image %v though none is offered, want only %s", path, v, fallbackImage)
			}
		}
		tc := plan.TestCase(path + "#string/generated")
		if tc == nil || tc.Label != Misoperation {
			t.Errorf("%s#string/generated: %v, want a misoperation", path, tc)
		}
	}
	// Kubernetes requires a container's image though the CRD does not.
	added := 0
	for _, tc := range plan.TestCases {
		if tc.Label != Valid || strings.Contains(tc.Description, "remove") {
			continue
		}
		for _, st := range plan.States(tc.ID) {
			for _, list := range []string{"/spec/sidecars", "/spec/pod/containers"} {
				l, _ := jsonv.Get(st, list)
				items, _ := l.([]any)
				for i, it := range items {
					added++
					if img, _ := it.(map[string]any)["image"].(string); img == "" {
						t.Errorf("%s: %s/%d has no image", tc.ID, list, i)
					}
				}
			}
		}
	}
	if added == 0 {
		t.Error("no valid test case adds a container: the check proves nothing")
	}
}

// TestCoreRequirements checks, on every state of every valid test case, what Kubernetes requires
// of core-typed values beyond their schemas (issue 10's defect classes): label selector
// requirements whose values agree with their operator, tolerations whose value and seconds agree
// with their operator and effect, claim templates with access modes and storage (and no cpu or
// memory), an env var with a value or a source (one), a probe with one handler, an exec with a
// command, an env source naming a ConfigMap or a Secret, topology spread constraints with what
// the Go type requires (the CRD requires nothing) and a real topology key, weighted pod affinity
// terms with their term, no PriorityClass the cluster does not have, distinct names of containers
// and volumes, and no volume the test cluster cannot mount.
func TestCoreRequirements(t *testing.T) {
	s, seed, _ := loadCase(t, "domain")
	g := mustGenerator(t, s, seed, Options{Seed: 1})
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	each := func(st map[string]any, path string, fn func(m map[string]any) string) {
		p := s.Lookup(path)
		if p == nil {
			t.Fatalf("no property %s", path)
		}
		for _, ptr := range instances(st, p.Path) {
			v, _ := jsonv.Get(st, ptr)
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			seen[path]++
			if why := fn(m); why != "" {
				t.Errorf("%s: %s", ptr, why)
			}
		}
	}
	for _, tc := range plan.TestCases {
		if tc.Label != Valid {
			continue
		}
		for _, st := range plan.States(tc.ID) {
			each(st, "spec.selector.matchExpressions[*]", func(m map[string]any) string {
				vals, _ := m["values"].([]any)
				switch m["operator"] {
				case "Exists", "DoesNotExist":
					if len(vals) > 0 {
						return fmt.Sprintf("%s: %v with values", tc.ID, m["operator"])
					}
				case "In", "NotIn":
					if len(vals) == 0 {
						return fmt.Sprintf("%s: %v without values", tc.ID, m["operator"])
					}
				}
				return ""
			})
			each(st, "spec.pod.tolerations[*]", func(m map[string]any) string {
				if v, _ := m["value"].(string); v != "" && m["operator"] == "Exists" {
					return tc.ID + ": Exists with a value"
				}
				if k, _ := m["key"].(string); k == "" && m["operator"] != nil && m["operator"] != "Exists" {
					return tc.ID + ": no key but operator " + fmt.Sprint(m["operator"])
				}
				if _, ok := m["tolerationSeconds"]; ok && m["effect"] != "NoExecute" {
					return tc.ID + ": tolerationSeconds with effect " + fmt.Sprint(m["effect"])
				}
				return ""
			})
			each(st, "spec.volumeClaimTemplates[*]", func(m map[string]any) string {
				spec, _ := m["spec"].(map[string]any)
				modes, _ := spec["accessModes"].([]any)
				req, _ := jsonv.Get(spec, "/resources/requests")
				reqs, _ := req.(map[string]any)
				switch {
				case len(modes) == 0:
					return tc.ID + ": a claim template without access modes"
				case reqs["storage"] == nil:
					return tc.ID + ": a claim template without storage"
				case reqs["cpu"] != nil || reqs["memory"] != nil:
					return tc.ID + ": a claim template requesting cpu or memory"
				}
				return ""
			})
			each(st, "spec.pod.containers[*].env[*]", func(m map[string]any) string {
				if _, v := m["value"]; v && m["valueFrom"] != nil {
					return tc.ID + ": an env var with a value and a source"
				}
				if src, ok := m["valueFrom"].(map[string]any); ok && len(src) != 1 {
					return fmt.Sprintf("%s: an env source with %d sources", tc.ID, len(src))
				}
				return ""
			})
			for _, probe := range []string{"livenessProbe", "readinessProbe"} {
				each(st, "spec.pod.containers[*]."+probe, func(m map[string]any) string {
					n := 0
					for _, h := range []string{"exec", "tcpSocket"} {
						if m[h] != nil {
							n++
						}
					}
					if n != 1 {
						return fmt.Sprintf("%s: a probe with %d handlers", tc.ID, n)
					}
					if e, ok := m["exec"].(map[string]any); ok {
						if c, _ := e["command"].([]any); len(c) == 0 {
							return tc.ID + ": an exec without a command"
						}
					}
					return ""
				})
			}
			each(st, "spec.pod.containers[*].envFrom[*]", func(m map[string]any) string {
				if (m["configMapRef"] == nil) == (m["secretRef"] == nil) {
					return tc.ID + ": an env source naming neither or both of a ConfigMap and a Secret"
				}
				return ""
			})
			each(st, "spec.pod.topologySpreadConstraints[*]", func(m map[string]any) string {
				// Required by Kubernetes (no omitempty in Go) though this CRD requires none.
				for _, k := range []string{"maxSkew", "topologyKey", "whenUnsatisfiable"} {
					if m[k] == nil {
						return tc.ID + ": a topology spread constraint without " + k
					}
				}
				if m["topologyKey"] != "kubernetes.io/hostname" {
					return fmt.Sprintf("%s: a made-up topology key %v", tc.ID, m["topologyKey"])
				}
				return ""
			})
			for _, list := range []string{"/spec/pod/containers", "/spec/pod/initContainers", "/spec/volumes", "/spec/sidecars"} {
				l, _ := jsonv.Get(st, list)
				items, _ := l.([]any)
				names := map[any]bool{}
				for _, it := range items {
					n := it.(map[string]any)["name"]
					if names[n] {
						t.Errorf("%s: two items of %s are named %v", tc.ID, list, n)
					}
					names[n] = true
				}
			}
			each(st, "spec.pod.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[*]", func(m map[string]any) string {
				if k, _ := jsonv.Get(m, "/podAffinityTerm/topologyKey"); k == nil {
					return tc.ID + ": a weighted pod affinity term without a term or its topology key"
				}
				if w, ok := jsonv.AsInt(m["weight"]); !ok || w < 1 || w > 100 {
					return fmt.Sprintf("%s: weight %v", tc.ID, m["weight"])
				}
				return ""
			})
			each(st, "spec.pod", func(m map[string]any) string {
				if pc, ok := m["priorityClassName"]; ok {
					return fmt.Sprintf("%s: a PriorityClass %v the cluster does not have", tc.ID, pc)
				}
				return ""
			})
			each(st, "spec.volumes[*].ephemeral", func(m map[string]any) string {
				modes, _ := jsonv.Get(m, "/volumeClaimTemplate/spec/accessModes")
				if l, _ := modes.([]any); len(l) == 0 {
					return tc.ID + ": an ephemeral volume without a claim template with access modes"
				}
				return ""
			})
			each(st, "spec.volumes[*]", func(m map[string]any) string {
				if m["rbd"] != nil {
					return tc.ID + ": an rbd volume the test cluster cannot mount"
				}
				return ""
			})
		}
	}
	for _, path := range []string{"spec.selector.matchExpressions[*]", "spec.pod.tolerations[*]", "spec.volumeClaimTemplates[*]", "spec.pod.topologySpreadConstraints[*]",
		"spec.pod.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[*]", "spec.volumes[*].ephemeral",
		"spec.pod.containers[*].env[*]", "spec.pod.containers[*].readinessProbe", "spec.pod.containers[*].envFrom[*]"} {
		if seen[path] == 0 {
			t.Errorf("no valid state has a %s: the check proves nothing", path)
		}
	}
	if tc := plan.TestCase("spec.pod.priorityClassName#string/generated"); tc == nil || tc.Label != Misoperation {
		t.Errorf("spec.pod.priorityClassName#string/generated: %v, want a misoperation", tc)
	}
	if tc := plan.TestCase("spec.volumes[*].rbd.pool#string/generated"); tc == nil || tc.Label != Misoperation {
		t.Errorf("spec.volumes[*].rbd.pool#string/generated: %v, want a misoperation", tc)
	}
}
