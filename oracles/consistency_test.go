package oracles

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

const confKey = `data["valkey.conf"]`

// editConf rewrites valkey.conf in the ConfigMap of the state.
func editConf(t testing.TB, s *model.Snapshot, old, new string) {
	t.Helper()
	cm := obj(t, s, "ConfigMap/cache-config")
	conf := cm["data"].(map[string]any)["valkey.conf"].(string)
	if !strings.Contains(conf, old) {
		t.Fatalf("valkey.conf has no %q", old)
	}
	setIn(t, cm, confKey, strings.Replace(conf, old, new, 1))
}

func setApplied(t testing.TB, s *model.Snapshot, applied string) {
	t.Helper()
	set(t, s, "ConfigMap/cache-config", `data["applied.json"]`, applied)
}

// scaleTo makes the state reached hold n Valkey pods (and claims).
func scaleTo(t testing.TB, s *model.Snapshot, n int) {
	t.Helper()
	set(t, s, "StatefulSet/cache", "spec.replicas", float64(n))
	for _, f := range []string{"replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"} {
		set(t, s, "StatefulSet/cache", "status."+f, float64(n))
	}
	set(t, s, "ValkeyCluster/cache", "status.replicas", float64(n))
	set(t, s, "ValkeyCluster/cache", "status.readyReplicas", float64(n))
	for i := 3; i < n; i++ {
		name := "cache-" + itoa(i)
		p := copyAs(t, s, "Pod/cache-2", name)
		setIn(t, p, "metadata.uid", "11111111-aaaa-4bbb-8ccc-00000000000"+itoa(i))
		setIn(t, p, `metadata.labels["apps.kubernetes.io/pod-index"]`, itoa(i))
		setIn(t, p, `metadata.labels["statefulset.kubernetes.io/pod-name"]`, name)
		setIn(t, p, "spec.hostname", name)
		setIn(t, p, "spec.volumes[0].persistentVolumeClaim.claimName", "data-"+name)
		setIn(t, p, "status.podIP", "10.244.0.1"+itoa(i))
		c := copyAs(t, s, "PersistentVolumeClaim/data-cache-2", "data-"+name)
		setIn(t, c, "metadata.uid", "22222222-bbbb-4ccc-8ddd-00000000000"+itoa(i))
	}
	for i := n; i < 3; i++ {
		remove(t, s, "Pod/cache-"+itoa(i))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestConsistency(t *testing.T) {
	memoryLimitPath := "spec.template.spec.containers[0].resources"
	cases := []struct {
		name    string
		changed []string
		cfg     Config
		desired func(t *testing.T, d model.Object)
		state   func(t *testing.T, s *model.Snapshot)
		want    expectation
	}{
		{
			name:    "scale-up",
			changed: []string{"spec.replicas"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.replicas", 5.0) },
			state:   func(t *testing.T, s *model.Snapshot) { scaleTo(t, s, 5) },
		},
		{
			name:    "scale-up-json-pointer",
			changed: []string{"/spec/replicas"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.replicas", 5.0) },
			state:   func(t *testing.T, s *model.Snapshot) { scaleTo(t, s, 5) },
		},
		{
			name:    "scale-up-ancestors-listed",
			changed: []string{"spec", "spec.replicas"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.replicas", 5.0) },
			state:   func(t *testing.T, s *model.Snapshot) { scaleTo(t, s, 5) },
		},
		{
			name:    "config-value-changed",
			changed: []string{"spec.config.maxmemory"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.config.maxmemory", "200mb") },
			state: func(t *testing.T, s *model.Snapshot) {
				editConf(t, s, "maxmemory 100mb", "maxmemory 200mb")
				setApplied(t, s, `{"config":{"maxmemory":"200mb"},"effective":{"maxmemory":"209715200"},"defaults":{"maxmemory":"0"}}`)
			},
		},
		{
			name:    "config-key-added",
			changed: []string{"spec.config{*}"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, `spec.config["maxmemory-policy"]`, "allkeys-lru") },
			state: func(t *testing.T, s *model.Snapshot) {
				editConf(t, s, "maxmemory 100mb\n", "maxmemory 100mb\nmaxmemory-policy allkeys-lru\n")
			},
		},
		{
			name:    "config-key-removed",
			changed: []string{"spec.config.maxmemory"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.config", map[string]any{}) },
			state: func(t *testing.T, s *model.Snapshot) {
				editConf(t, s, "# spec.config (accepted keys).\nmaxmemory 100mb\n", "")
				setApplied(t, s, `{}`)
			},
		},
		{
			name:    "memory-limit-quantity-normalized",
			changed: []string{"spec.resources.limits.memory"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.resources.limits.memory", "1Gi") },
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "StatefulSet/cache", memoryLimitPath, map[string]any{"limits": map[string]any{"memory": "1024Mi"}})
			},
		},
		{
			name:    "exporter-enabled",
			changed: []string{"spec.exporter.enabled"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.exporter.enabled", true) },
			state: func(t *testing.T, s *model.Snapshot) {
				sts := obj(t, s, "StatefulSet/cache")
				cs, _ := jsonv.GetPath(sts, jsonv.MustPath("spec.template.spec.containers"))
				setIn(t, sts, "spec.template.spec.containers", append(cs.([]any), map[string]any{
					"name": "exporter", "image": "oliver006/redis_exporter:v1.67.0",
					"env":   []any{map[string]any{"name": "REDIS_ADDR", "value": "redis://127.0.0.1:6379"}},
					"ports": []any{map[string]any{"name": "metrics", "containerPort": 9121.0, "protocol": "TCP"}},
				}))
				set(t, s, "Service/cache-headless", "spec.ports[0]", map[string]any{"name": "valkey", "port": 6379.0, "targetPort": "valkey", "protocol": "TCP"})
			},
		},
		{
			name:    "flag-in-container-args",
			changed: []string{"spec.config.maxmemory"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.config.maxmemory", "300mb") },
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "StatefulSet/cache", "spec.template.spec.containers[0].args", []any{"/etc/valkey/valkey.conf", "--maxmemory", "300mb"})
			},
		},
		{
			name:    "default-already-in-effect",
			changed: []string{"spec.podDisruptionBudget.maxUnavailable"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.podDisruptionBudget.maxUnavailable", 1.0) },
			state:   func(t *testing.T, s *model.Snapshot) {},
		},
		{
			name:    "skipped-operator-timing",
			changed: []string{"spec.failover.downAfter"},
			cfg:     Config{Skip: []string{"spec.failover"}},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.failover.downAfter", "10s") },
			state:   func(t *testing.T, s *model.Snapshot) {},
		},
		{
			// Pausing stops the operator acting (the Prometheus operator's
			// spec.paused, untuned seed 1): nothing changing is its effect.
			name:    "pause-switch",
			changed: []string{"spec.paused"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.paused", true) },
			state:   func(t *testing.T, s *model.Snapshot) {},
		},
		{
			name:    "mapped-and-reflected",
			changed: []string{"spec.image"},
			cfg:     Config{Mappings: []Mapping{{Property: "spec.image", Kind: "StatefulSet", Field: "spec.template.spec.containers[*].image"}}},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.image", "valkey/valkey:8.0") },
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "StatefulSet/cache", "spec.template.spec.containers[0].image", "valkey/valkey:8.0")
			},
		},
		{
			name:    "mapped-config-file",
			changed: []string{"spec.config.maxmemory"},
			cfg:     Config{Mappings: []Mapping{{Property: "spec.config", Kind: "ConfigMap", Name: "*-config", Field: confKey}}},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.config.maxmemory", "200mb") },
			state:   func(t *testing.T, s *model.Snapshot) { editConf(t, s, "maxmemory 100mb", "maxmemory 200mb") },
		},
		// Bugs.
		{
			name:    "ignored-image",
			changed: []string{"spec.image"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.image", "valkey/valkey:8.0") },
			state:   func(t *testing.T, s *model.Snapshot) {},
			want:    expectation{n: 1, contains: []string{`spec.image changed to "valkey/valkey:8.0" but the state ignores it`, `still holds the previous value "valkey/valkey:8.1"`}},
		},
		{
			name:    "overruled-memory-limit",
			changed: []string{"spec.resources"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.resources.limits.memory", "2Gi") },
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "StatefulSet/cache", memoryLimitPath, map[string]any{"limits": map[string]any{"memory": "1Gi"}})
			},
			want: expectation{n: 1, contains: []string{`spec.resources.limits.memory changed to "2Gi" but the value was overruled`, `holds "1Gi"`}},
		},
		{
			// A field that merely shares a generic last name ("key" of a ConfigMap
			// volume item) is no evidence that the value was overruled.
			name:    "generic-name-is-not-an-overrule",
			changed: []string{"spec.auth.passwordSecret.key"},
			desired: func(t *testing.T, d model.Object) {
				setIn(t, d, "spec.auth", map[string]any{"passwordSecret": map[string]any{"name": "valkey-auth", "key": "gauntlet-wdfyo"}})
			},
			state: func(t *testing.T, s *model.Snapshot) {},
			want:  expectation{n: 1, contains: []string{`spec.auth.passwordSecret.key changed to "gauntlet-wdfyo" but no field of the state reflects it`}},
		},
		{
			name:    "overruled-config-line",
			changed: []string{"spec.config.maxmemory"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.config.maxmemory", "200mb") },
			state:   func(t *testing.T, s *model.Snapshot) { editConf(t, s, "maxmemory 100mb", "maxmemory 64mb") },
			want:    expectation{n: 1, contains: []string{"value was overruled", `holds "64mb"`}},
		},
		{
			name:    "removal-not-reflected",
			changed: []string{"spec.config.maxmemory"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.config", map[string]any{}) },
			state:   func(t *testing.T, s *model.Snapshot) {},
			want:    expectation{n: 1, contains: []string{`spec.config.maxmemory was removed but the state still reflects its previous value "100mb"`}},
		},
		{
			name:    "toggle-without-effect",
			changed: []string{"spec.exporter.enabled"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.exporter.enabled", true) },
			state:   func(t *testing.T, s *model.Snapshot) {},
			want:    expectation{n: 1, contains: []string{"spec.exporter.enabled changed to true but no object of the state changed"}},
		},
		{
			name:    "mapping-overrides-coincidence",
			changed: []string{"spec.image"},
			cfg:     Config{Mappings: []Mapping{{Property: "spec.image", Kind: "StatefulSet", Field: "spec.template.spec.containers[*].image"}}},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.image", "valkey/valkey:8.0") },
			state: func(t *testing.T, s *model.Snapshot) {
				// The operator records the image in an annotation but never rolls it out.
				set(t, s, "StatefulSet/cache", `metadata.annotations["valkey.gauntlet.dev/image"]`, "valkey/valkey:8.0")
			},
			want: expectation{n: 1, contains: []string{`spec.image changed to "valkey/valkey:8.0" but StatefulSet spec.template.spec.containers[0].image holds "valkey/valkey:8.1"`}},
		},
		{
			name:    "operator-only-property-unskipped",
			changed: []string{"spec.failover.downAfter"},
			desired: func(t *testing.T, d model.Object) { setIn(t, d, "spec.failover.downAfter", "10s") },
			state:   func(t *testing.T, s *model.Snapshot) {},
			want:    expectation{n: 1, contains: []string{`spec.failover.downAfter changed to "10s" but`}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := loadSnapshot(t, "s0")
			prevD := desiredOf(prev)
			d := jsonv.CopyMap(prevD)
			c.desired(t, d)
			curr := loadSnapshot(t, "s0")
			cr := curr.CRObject()
			cr["spec"] = jsonv.Copy(d["spec"])
			setIn(t, cr, "metadata.generation", 2.0)
			c.state(t, curr)
			tr := &model.Transition{Step: step(model.StepApply, c.changed...), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			fs := run(NewConsistency(c.cfg), tr)
			c.want.check(t, fs)
			checkGolden(t, "consistency", c.name, fs)
		})
	}
}

// One bug seen on several steps has one signature: the ignored config keys are
// different, the property ({*} under spec.config) is the same.
func TestConsistencySignatureGeneralized(t *testing.T) {
	sig := func(key string, cfg Config, changed string) string {
		prev := loadSnapshot(t, "s0")
		prevD := desiredOf(prev)
		d := jsonv.CopyMap(prevD)
		setIn(t, d, `spec.config["`+key+`"]`, "yes")
		curr := loadSnapshot(t, "s0")
		curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
		fs := run(NewConsistency(cfg), &model.Transition{Step: step(model.StepApply, changed), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr})
		if len(fs) != 1 {
			t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
		}
		return fs[0].Signature
	}
	cases := []struct {
		name string
		cfg  Config
		a, b string // changed paths for the two steps
		same bool
	}{
		{"pattern-in-changed", Config{}, "spec.config{*}", "spec.config{*}", true},
		{"map-properties", Config{MapProperties: []string{"spec.config"}}, "spec.config.lazyfree-lazy-eviction", "spec.config.activedefrag", true},
		{"concrete-keys", Config{}, "spec.config.lazyfree-lazy-eviction", "spec.config.activedefrag", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := sig("lazyfree-lazy-eviction", c.cfg, c.a)
			b := sig("activedefrag", c.cfg, c.b)
			if (a == b) != c.same {
				t.Errorf("signatures %s and %s: same=%v, want %v", a, b, a == b, c.same)
			}
		})
	}
}

func TestConsistencyWithoutPrevious(t *testing.T) {
	s := loadSnapshot(t, "s0")
	tr := &model.Transition{Step: step(model.StepSeed), Desired: desiredOf(s), Curr: s}
	if fs := run(NewConsistency(Config{}), tr); len(fs) != 0 {
		t.Errorf("seed step without a previous state: got %d findings, want none", len(fs))
	}
}

// A removed property whose previous value is the operator's default (the
// state the seed reached, without the property, showed it too) may stay in
// effect; any other removal that leaves the value is still reported.
func TestConsistencyRemovalBackToDefault(t *testing.T) {
	tests := []struct {
		name     string
		baseline func(t *testing.T, s *model.Snapshot, d model.Object)
		want     int
	}{
		{"the seed did not set it and showed the same value: a default", func(t *testing.T, s *model.Snapshot, d model.Object) {
			delete(d["spec"].(map[string]any)["config"].(map[string]any), "maxmemory")
		}, 0},
		{"the seed set it itself", func(t *testing.T, s *model.Snapshot, d model.Object) {}, 1},
		{"the seed showed another value", func(t *testing.T, s *model.Snapshot, d model.Object) {
			delete(d["spec"].(map[string]any)["config"].(map[string]any), "maxmemory")
			editConf(t, s, "maxmemory 100mb", "maxmemory 0")
		}, 1},
		{"no baseline", nil, 1},
		// Objects the seed did not have are not compared (pods of a later
		// scale-up: seed 5's seccompProfile removal on 5 pods, the seed's 3
		// holding the default), but something must be.
		{"the seed had none of the objects", func(t *testing.T, s *model.Snapshot, d model.Object) {
			delete(d["spec"].(map[string]any)["config"].(map[string]any), "maxmemory")
			for key := range s.Objects {
				if strings.Contains(key, "ConfigMap/") {
					delete(s.Objects, key)
				}
			}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := loadSnapshot(t, "s0")
			prevD := desiredOf(prev)
			d := jsonv.CopyMap(prevD)
			setIn(t, d, "spec.config", map[string]any{})
			curr := loadSnapshot(t, "s0")
			cr := curr.CRObject()
			cr["spec"] = jsonv.Copy(d["spec"])
			setIn(t, cr, "metadata.generation", 2.0)
			tr := &model.Transition{Step: step(model.StepApply, "spec.config.maxmemory"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			if tt.baseline != nil {
				base := loadSnapshot(t, "s0")
				baseD := jsonv.CopyMap(prevD)
				tt.baseline(t, base, baseD)
				tr.Baseline, tr.BaselineDesired = base, baseD
			}
			if fs := run(NewConsistency(Config{}), tr); len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %v", len(fs), tt.want, fs)
			}
		})
	}
}

// A change under a map key with dots and slashes, named by the quoted path the
// campaign writes, is judged: not reflected is a finding, reflected is none.
func TestConsistencyQuotedKey(t *testing.T) {
	const prop = `spec.scheduling.nodeSelector["kubernetes.io/hostname"]`
	for _, reflected := range []bool{false, true} {
		prev := loadSnapshot(t, "s0")
		prevD := desiredOf(prev)
		d := jsonv.CopyMap(prevD)
		setIn(t, d, "spec.scheduling", map[string]any{"nodeSelector": map[string]any{"kubernetes.io/hostname": "node-2"}})
		curr := loadSnapshot(t, "s0")
		cr := curr.CRObject()
		cr["spec"] = jsonv.Copy(d["spec"])
		setIn(t, cr, "metadata.generation", 2.0)
		if reflected {
			set(t, curr, "StatefulSet/cache", `spec.template.spec.nodeSelector`, map[string]any{"kubernetes.io/hostname": "node-2"})
		}
		tr := &model.Transition{Step: step(model.StepApply, prop), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
		fs := run(NewConsistency(Config{}), tr)
		if reflected && len(fs) != 0 {
			t.Errorf("node selector rolled out: %d findings, want none: %v", len(fs), fs)
		}
		if !reflected && (len(fs) != 1 || !strings.Contains(fs[0].Summary, prop)) {
			t.Errorf("node selector ignored: findings %v, want one naming %s", fs, prop)
		}
		// "hostname" shares only the generic "name" with any object's
		// metadata.name: that is no evidence the value was overruled there.
		if !reflected && len(fs) == 1 && !strings.Contains(fs[0].Summary, "no field of the state reflects it") {
			t.Errorf("node selector ignored: summary %q, want 'no field of the state reflects it'", fs[0].Summary)
		}
	}
}

// A change away from a value the operator refused (the previous state never
// showed it) back to the value the state kept is consistent, though no field
// changed (seed 2: a roll-back from a rejected maxmemory was reported as
// "overruled: ConfigMap holds 100mb"); a value the state showed and still
// shows after a change is ignored.
func TestConsistencyBackFromRefused(t *testing.T) {
	tests := []struct {
		name      string
		prevValue string // the previous desired maxmemory
		prevShown string // what the previous state's ConfigMap says ("": as the fixture, 100mb)
		desired   string
		want      int
	}{
		{"back from a refused value", "gauntlet-u8rsm", "", "100mb", 0},
		{"a shown value kept after a change", "200mb", "maxmemory 200mb", "300mb", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := loadSnapshot(t, "s0")
			if tt.prevShown != "" {
				editConf(t, prev, "maxmemory 100mb", tt.prevShown)
			}
			prevD := desiredOf(prev)
			setIn(t, prevD, "spec.config.maxmemory", tt.prevValue)
			d := jsonv.CopyMap(prevD)
			setIn(t, d, "spec.config.maxmemory", tt.desired)
			curr := loadSnapshot(t, "s0")
			if tt.prevShown != "" {
				editConf(t, curr, "maxmemory 100mb", tt.prevShown)
			}
			cr := curr.CRObject()
			cr["spec"] = jsonv.Copy(d["spec"])
			tr := &model.Transition{Step: step(model.StepApply, "spec.config.maxmemory"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			if fs := run(NewConsistency(Config{}), tr); len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %v", len(fs), tt.want, fs)
			}
		})
	}
}

// A boolean rolled back after a step the operator refused: the state reached
// equals the state before the refused step, so nothing had to change; but if
// the refused step did change the state, a rollback that changes nothing is
// still an inconsistency. An apply that turns off a feature the state never
// showed changes nothing, rightly (featureShown): an operator that ignores
// the flag is caught where it is turned on.
func TestConsistencyBoolBackFromRefused(t *testing.T) {
	tests := []struct {
		name        string
		kind        model.StepKind
		refusedLeft bool // the refused step changed the state (a ConfigMap line)
		want        int
	}{
		{"rollback after a refused step", model.StepRollback, false, 0},
		{"rollback after a step that took effect", model.StepRollback, true, 1},
		{"apply that turns off what the state never showed", model.StepApply, false, 0},
		{"apply that leaves on what the state showed", model.StepApply, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := loadSnapshot(t, "s0")
			prev := loadSnapshot(t, "s0")
			curr := loadSnapshot(t, "s0")
			if tt.refusedLeft {
				editConf(t, prev, "maxmemory 100mb", "maxmemory 100mb\ntls-port 6380")
				editConf(t, curr, "maxmemory 100mb", "maxmemory 100mb\ntls-port 6380")
			}
			prevD := desiredOf(prev)
			setIn(t, prevD, "spec.tls.enabled", true)
			d := jsonv.CopyMap(prevD)
			setIn(t, d, "spec.tls.enabled", false)
			curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
			tr := &model.Transition{Step: step(tt.kind, "spec.tls.enabled"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			if tt.kind == model.StepRollback {
				tr.Reference = before
			}
			fs := run(NewConsistency(Config{}), tr)
			if len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %v", len(fs), tt.want, fs)
			}
		})
	}
}

// A rollback after a step that had no effect at all — Kubernetes refused the
// claims' growth to 64Ti, so nothing changed — needs no changed field for any
// property (seed 4: the storage rollback, re-created, was reported "changed to
// 1Gi but no field of the state reflects it", the claims holding 1Gi all along).
// Without the reference (not known to have had no effect) it is still judged.
func TestConsistencyRollbackAfterNoEffect(t *testing.T) {
	for _, withRef := range []bool{true, false} {
		before, prev, curr := loadSnapshot(t, "s0"), loadSnapshot(t, "s0"), loadSnapshot(t, "s0")
		prevD := desiredOf(prev)
		setIn(t, prevD, "spec.persistence.size", "64Ti")
		d := jsonv.CopyMap(prevD)
		setIn(t, d, "spec.persistence.size", "1Gi")
		curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
		tr := &model.Transition{Step: step(model.StepRollback, "spec.persistence.size"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
		if withRef {
			tr.Reference = before
		}
		fs := run(NewConsistency(Config{}), tr)
		if want := map[bool]int{true: 0, false: 1}[withRef]; len(fs) != want {
			t.Errorf("reference %v: %d findings, want %d: %v", withRef, len(fs), want, fs)
		}
	}
}

// TestConsistencyPodCount: an operator that runs its instances as pods of its
// own (CloudNativePG: no StatefulSet, the count only in the CR's status)
// reflects a count property by the number of its pods (seed 1: "spec.instances
// changed to 1 but no field of the state reflects it" after a correct scale-down).
// A count the pods did not reach, or already had, is not reflected that way.
func TestConsistencyPodCount(t *testing.T) {
	const crKey = "postgresql.cnpg.io/v1/Cluster/ns/example"
	state := func(instances int64, pods ...string) *model.Snapshot {
		s := &model.Snapshot{CR: crKey, Objects: map[string]model.Object{
			crKey: {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": map[string]any{"name": "example", "namespace": "ns"},
				"spec": map[string]any{"instances": instances}},
		}}
		for _, p := range pods {
			s.Objects["/v1/Pod/ns/"+p] = model.Object{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": p, "namespace": "ns", "ownerReferences": []any{
					map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "name": "example", "controller": true}}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "postgres", "image": "postgres:15"}}}}
		}
		return s
	}
	cases := []struct {
		name       string
		prev, curr *model.Snapshot
		want       int
	}{
		{"scaled down to the count", state(3, "example-1", "example-2", "example-3"), state(1, "example-1"), 0},
		{"scaled up to the count", state(1, "example-1"), state(3, "example-1", "example-4", "example-5"), 0},
		{"pods left as they were", state(3, "example-1", "example-2", "example-3"), state(1, "example-1", "example-2", "example-3"), 1},
		{"the count already there", state(2, "example-1"), state(1, "example-1"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prevD, d := tc.prev.CRObject(), tc.curr.CRObject()
			tr := &model.Transition{Step: step(model.StepApply, "spec.instances"), PrevDesired: prevD, Desired: d, Prev: tc.prev, Curr: tc.curr}
			if fs := run(NewConsistency(Config{}), tr); len(fs) != tc.want {
				t.Errorf("%d findings, want %d: %v", len(fs), tc.want, fs)
			}
		})
	}
}

// TestConsistencyMappingExpect: a mapping's CEL expression derives the value
// the mapped field must hold (CloudNativePG seed 2: spec.startDelay 8 became
// the startup probe's failureThreshold 1, 3600 became 360, and both were "not
// reflected"). A field holding another value is still an alarm; an expression
// that does not compile is refused by Validate.
func TestConsistencyMappingExpect(t *testing.T) {
	const crKey = "postgresql.cnpg.io/v1/Cluster/ns/example"
	state := func(startDelay int64, threshold float64) *model.Snapshot {
		return &model.Snapshot{CR: crKey, Objects: map[string]model.Object{
			crKey: {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": map[string]any{"name": "example", "namespace": "ns"},
				"spec": map[string]any{"startDelay": startDelay}},
			"/v1/Pod/ns/example-1": {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "example-1", "namespace": "ns"},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "postgres", "startupProbe": map[string]any{"failureThreshold": threshold, "periodSeconds": float64(10)}}}}},
		}}
	}
	cfg := Config{Mappings: []Mapping{{Property: "spec.startDelay", Kind: "Pod", Name: "example-*",
		Field: "spec.containers[0].startupProbe.failureThreshold", Expect: "value <= 10 ? 1 : (value + 9) / 10"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		prev, curr *model.Snapshot
		want       int
	}{
		{"8 s: one failure", state(3600, 360), state(8, 1), 0},
		{"back to 3600 s", state(8, 1), state(3600, 360), 0},
		{"35 s: four failures", state(3600, 360), state(35, 4), 0},
		{"the pod kept its probe", state(3600, 360), state(8, 360), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &model.Transition{Step: step(model.StepApply, "spec.startDelay"), PrevDesired: tc.prev.CRObject(), Desired: tc.curr.CRObject(), Prev: tc.prev, Curr: tc.curr}
			if fs := run(NewConsistency(cfg), tr); len(fs) != tc.want {
				t.Errorf("%d findings, want %d: %v", len(fs), tc.want, fs)
			}
		})
	}
	bad := Config{Mappings: []Mapping{{Property: "spec.startDelay", Kind: "Pod", Field: "spec.x", Expect: "value +"}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not a CEL expression") {
		t.Errorf("Validate of a broken expression: %v", err)
	}
}

// TestConsistencyListBecameExactly: a list property is reflected by a list
// field that became exactly the desired list, even though containment matched
// its previous, longer value (cert-manager seed 3: usages ["cert sign"] on a CA
// certificate whose usages went from ["cert sign", "server auth"] to ["cert
// sign"]). A field that already held exactly it is no reflection.
func TestConsistencyListBecameExactly(t *testing.T) {
	const crKey = "cert-manager.io/v1/Certificate/ns/example"
	state := func(usages []any, viewUsages []any) *model.Snapshot {
		return &model.Snapshot{CR: crKey, Objects: map[string]model.Object{
			crKey: {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": map[string]any{"name": "example", "namespace": "ns"},
				"spec": map[string]any{"usages": usages}},
			"/v1/Secret/ns/example-tls": {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "example-tls", "namespace": "ns"},
				"gauntlet.dev/x509": map[string]any{"tls.crt": map[string]any{"usages": viewUsages}}},
		}}
	}
	for _, tc := range []struct {
		name       string
		prev, curr *model.Snapshot
		want       int
	}{
		{"shrank to exactly the list", state([]any{"server auth"}, []any{"cert sign", "server auth"}), state([]any{"cert sign"}, []any{"cert sign"}), 0},
		{"unchanged superset", state([]any{"server auth"}, []any{"cert sign", "server auth"}), state([]any{"cert sign"}, []any{"cert sign", "server auth"}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &model.Transition{Step: step(model.StepApply, "spec.usages"), PrevDesired: tc.prev.CRObject(), Desired: tc.curr.CRObject(), Prev: tc.prev, Curr: tc.curr}
			if fs := run(NewConsistency(Config{}), tr); len(fs) != tc.want {
				t.Errorf("%d findings, want %d: %v", len(fs), tc.want, fs)
			}
		})
	}
}

// TestConsistencySkipRemoval: a property whose removal the operator applies
// only at a later event (cert-manager keeps a certificate's duration until the
// next issuance) is not judged on removal when the target says so; setting it
// still is.
func TestConsistencySkipRemoval(t *testing.T) {
	const crKey = "cert-manager.io/v1/Certificate/ns/example"
	state := func(duration any, view string) *model.Snapshot {
		spec := map[string]any{}
		if duration != nil {
			spec["duration"] = duration
		}
		return &model.Snapshot{CR: crKey, Objects: map[string]model.Object{
			crKey: {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": map[string]any{"name": "example", "namespace": "ns"}, "spec": spec},
			"/v1/Secret/ns/example-tls": {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "example-tls", "namespace": "ns"},
				"gauntlet.dev/x509": map[string]any{"tls.crt": map[string]any{"duration": view}}},
		}}
	}
	cfg := Config{SkipRemoval: []string{"spec.duration"}}
	removed := &model.Transition{Step: step(model.StepApply, "spec.duration"), Prev: state("4320h", "4320h0m0s"), Curr: state(nil, "4320h0m0s")}
	removed.PrevDesired, removed.Desired = removed.Prev.CRObject(), removed.Curr.CRObject()
	if fs := run(NewConsistency(Config{}), removed); len(fs) != 1 {
		t.Errorf("without the setting a kept duration is an alarm: %v", fs)
	}
	if fs := run(NewConsistency(cfg), removed); len(fs) != 0 {
		t.Errorf("a removal the target skips: %v", fs)
	}
	set := &model.Transition{Step: step(model.StepApply, "spec.duration"), Prev: state(nil, "2160h0m0s"), Curr: state("4320h", "2160h0m0s")}
	set.PrevDesired, set.Desired = set.Prev.CRObject(), set.Curr.CRObject()
	if fs := run(NewConsistency(cfg), set); len(fs) != 1 {
		t.Errorf("setting it is still judged: %v", fs)
	}
}

// TestConsistencyDefaults: a property set to the operator's value while unset
// (CloudNativePG seed 3: affinity.enablePodAntiAffinity true, "the operator
// will define pods anti-affinity unless this field is explicitly set to
// false") or removed while it held it needs no change; without that default
// known, it is an alarm.
func TestConsistencyDefaults(t *testing.T) {
	const crKey = "postgresql.cnpg.io/v1/Cluster/ns/example"
	state := func(affinity map[string]any) *model.Snapshot {
		return &model.Snapshot{CR: crKey, Objects: map[string]model.Object{
			crKey: {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": map[string]any{"name": "example", "namespace": "ns"},
				"spec": map[string]any{"affinity": affinity}},
			"/v1/Pod/ns/example-1": {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "example-1", "namespace": "ns"}, "spec": map[string]any{"hostname": "example-1"}},
		}}
	}
	cfg := Config{Defaults: map[string]any{"spec.affinity.enablePodAntiAffinity": true}}
	for _, tc := range []struct {
		name       string
		prev, curr map[string]any
		cfg        Config
		want       int
	}{
		{"set to its default", map[string]any{"podAntiAffinityType": "preferred"}, map[string]any{"podAntiAffinityType": "preferred", "enablePodAntiAffinity": true}, cfg, 0},
		{"removed while at its default", map[string]any{"enablePodAntiAffinity": true}, map[string]any{}, cfg, 0},
		{"another property's default", map[string]any{}, map[string]any{"enablePodAntiAffinity": true}, Config{Defaults: map[string]any{"spec.affinity.other": true}}, 1},
		{"no default known", map[string]any{}, map[string]any{"enablePodAntiAffinity": true}, Config{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev, curr := state(tc.prev), state(tc.curr)
			tr := &model.Transition{Step: step(model.StepApply, "spec.affinity"), PrevDesired: prev.CRObject(), Desired: curr.CRObject(), Prev: prev, Curr: curr}
			if fs := run(NewConsistency(tc.cfg), tr); len(fs) != tc.want {
				t.Errorf("%d findings, want %d: %v", len(fs), tc.want, fs)
			}
		})
	}
}

// TestConsistencyDefaultSetExplicitly is the bundled operator at 6 workers,
// seed 1: containerSecurityContext.readOnlyRootFilesystem set to true, the
// operator's default, was "changed to true but no object of the state
// changed" while the StatefulSet and its pods held true before and after. A
// desired value the mapped fields already hold is consistent; one they do
// not hold (false everywhere) is still reported.
func TestConsistencyDefaultSetExplicitly(t *testing.T) {
	for _, tt := range []struct {
		name string
		held bool
		want int
	}{
		{"the state holds it already", true, 0},
		{"the state holds the opposite", false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prev, curr := loadSnapshot(t, "s0"), loadSnapshot(t, "s0")
			for _, s := range []*model.Snapshot{prev, curr} {
				for key, o := range s.Objects {
					var cs []any
					switch {
					case strings.Contains(key, "/StatefulSet/gauntlet-w0/cache"):
						cs, _ = mapAt(o, "spec", "template", "spec")["containers"].([]any)
					case strings.Contains(key, "/Pod/gauntlet-w0/cache-"):
						cs, _ = mapAt(o, "spec")["containers"].([]any)
					}
					for _, c := range cs {
						c.(map[string]any)["securityContext"] = map[string]any{"readOnlyRootFilesystem": tt.held}
					}
				}
			}
			prevD := desiredOf(prev)
			d := jsonv.CopyMap(prevD)
			setIn(t, d, "spec.containerSecurityContext", map[string]any{"readOnlyRootFilesystem": true})
			curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
			tr := &model.Transition{Step: step(model.StepApply, "spec.containerSecurityContext"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			fs := run(NewConsistency(Config{}), tr)
			if len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %v", len(fs), tt.want, fs)
			}
		})
	}
}

// TestConsistencyFlagOffWithoutFeature is the bundled operator at 6 workers,
// seed 1: podDisruptionBudget.enabled turned from true to false at replicas 1,
// where the operator makes no PodDisruptionBudget at all, was "changed to
// false but no object of the state changed". Turning off a feature the state
// did not show changes nothing; turning off one it showed (a
// PodDisruptionBudget that stays: seeded bug 02) is still reported.
func TestConsistencyFlagOffWithoutFeature(t *testing.T) {
	for _, tt := range []struct {
		name    string
		keepPDB bool
		want    int
	}{
		{"no PodDisruptionBudget before or after", false, 0},
		{"the PodDisruptionBudget stays", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prev, curr := loadSnapshot(t, "s0"), loadSnapshot(t, "s0")
			pdbs := 0
			for _, s := range []*model.Snapshot{prev, curr} {
				for key := range s.Objects {
					if strings.Contains(key, "/PodDisruptionBudget/") {
						pdbs++
						if !tt.keepPDB {
							delete(s.Objects, key)
						}
					}
				}
			}
			if pdbs == 0 {
				t.Fatal("the recorded snapshot s0 holds no PodDisruptionBudget: the test needs one")
			}
			prevD := desiredOf(prev)
			setIn(t, prevD, "spec.podDisruptionBudget", map[string]any{"enabled": true})
			prev.CRObject()["spec"] = jsonv.Copy(prevD["spec"])
			d := jsonv.CopyMap(prevD)
			setIn(t, d, "spec.podDisruptionBudget", map[string]any{"enabled": false})
			curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
			tr := &model.Transition{Step: step(model.StepApply, "spec.podDisruptionBudget.enabled"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			fs := run(NewConsistency(Config{}), tr)
			if len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %v", len(fs), tt.want, fs)
			}
		})
	}
}
