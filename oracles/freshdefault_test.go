package oracles

import (
	"context"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// A removed property whose previous value a fresh creation of the same desired
// state also holds is the operator's default (cert-manager's ECDSA key size
// 256 and duration 2160h, set explicitly by the seed); one a fresh creation
// holds differently, or whose object it lacks, is still a finding.
func TestRemovalDefaulted(t *testing.T) {
	prev := loadSnapshot(t, "s0")
	prevD := desiredOf(prev)
	d := jsonv.CopyMap(prevD)
	setIn(t, d, "spec.config", map[string]any{})
	curr := loadSnapshot(t, "s0")
	cr := curr.CRObject()
	cr["spec"] = jsonv.Copy(d["spec"])
	setIn(t, cr, "metadata.generation", 2.0)
	tr := &model.Transition{Step: step(model.StepApply, "spec.config.maxmemory"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
	fs := run(NewConsistency(Config{}), tr)
	if len(fs) != 1 || !IsRemoval(fs[0]) {
		t.Fatalf("want one removal finding, got %v", fs)
	}
	f := fs[0]

	tests := []struct {
		name  string
		fresh func(t *testing.T) *model.Snapshot
		want  bool
	}{
		{"the fresh creation holds the same value: a default", func(t *testing.T) *model.Snapshot { return loadSnapshot(t, "s0") }, true},
		{"the fresh creation holds another value: a leftover", func(t *testing.T) *model.Snapshot {
			s := loadSnapshot(t, "s0")
			editConf(t, s, "maxmemory 100mb", "maxmemory 0")
			return s
		}, false},
		{"the fresh creation lacks the object", func(t *testing.T) *model.Snapshot {
			s := loadSnapshot(t, "s0")
			delete(s.Objects, f.Evidence[1].Object)
			return s
		}, false},
		{"the fresh creation makes the object under another name, same value", func(t *testing.T) *model.Snapshot {
			s := loadSnapshot(t, "s0")
			renameObject(t, s, f.Evidence[1].Object)
			return s
		}, true},
		{"the fresh creation makes the object under another name, another value", func(t *testing.T) *model.Snapshot {
			s := loadSnapshot(t, "s0")
			editConf(t, s, "maxmemory 100mb", "maxmemory 0")
			renameObject(t, s, f.Evidence[1].Object)
			return s
		}, false},
		{"no fresh creation", func(t *testing.T) *model.Snapshot { return nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RemovalDefaulted(context.Background(), Config{}, f, tr, tt.fresh(t)); got != tt.want {
				t.Fatalf("RemovalDefaulted = %v, want %v (evidence %v)", got, tt.want, f.Evidence)
			}
		})
	}

	// A finding on a set property is not a removal: a fresh creation cannot answer it.
	set := f
	set.Evidence = append([]model.Evidence{{Object: f.Evidence[0].Object, Path: f.Evidence[0].Path, Detail: "desired 1; previously 2"}}, f.Evidence[1:]...)
	if IsRemoval(set) || RemovalDefaulted(context.Background(), Config{}, set, tr, loadSnapshot(t, "s0")) {
		t.Fatal("a finding on a set property was taken for a removal")
	}
}

// A flag whose removal changed no object is the operator's default when a fresh
// creation of the same desired state equals the state reached (the bundled
// operator's runAsNonRoot, true by default); a fresh creation that differs —
// an object the flag's feature made, still there — keeps the finding.
func TestFlagRemovalDefaulted(t *testing.T) {
	prev := loadSnapshot(t, "s0")
	prevD := desiredOf(prev)
	setIn(t, prevD, "spec.tls.enabled", true)
	d := jsonv.CopyMap(prevD)
	delete(d["spec"].(map[string]any)["tls"].(map[string]any), "enabled")
	curr := loadSnapshot(t, "s0")
	cr := curr.CRObject()
	cr["spec"] = jsonv.Copy(d["spec"])
	tr := &model.Transition{Step: step(model.StepApply, "spec.tls.enabled"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
	fs := run(NewConsistency(Config{}), tr)
	if len(fs) != 1 || !IsRemoval(fs[0]) {
		t.Fatalf("want one removal finding, got %v", fs)
	}
	// The fresh creation declares the same desired state.
	freshOf := func() *model.Snapshot {
		s := loadSnapshot(t, "s0")
		s.CRObject()["spec"] = jsonv.Copy(d["spec"])
		return s
	}
	if !RemovalDefaulted(context.Background(), Config{}, fs[0], tr, freshOf()) {
		t.Error("a fresh creation equal to the state reached did not answer the flag's removal")
	}
	fresh := freshOf()
	for key := range fresh.Objects {
		if strings.Contains(key, "ConfigMap/") {
			delete(fresh.Objects, key)
			break
		}
	}
	if RemovalDefaulted(context.Background(), Config{}, fs[0], tr, fresh) {
		t.Error("a fresh creation that differs from the state reached answered the flag's removal")
	}
}

// A value set that no object reflects (a version-gated flag, a feature the
// operand lacks) is answered by a fresh creation equal to the state reached:
// the operator ignores it on creation too. A fresh creation that differs keeps
// the finding, and a removal or a declared mapping is not this kind.
func TestUnreflectedCreationAgrees(t *testing.T) {
	prev := loadSnapshot(t, "s0")
	prevD := desiredOf(prev)
	d := jsonv.CopyMap(prevD)
	setIn(t, d, "spec.tls.enabled", true)
	curr := loadSnapshot(t, "s0")
	curr.CRObject()["spec"] = jsonv.Copy(d["spec"])
	tr := &model.Transition{Step: step(model.StepApply, "spec.tls.enabled"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
	fs := run(NewConsistency(Config{}), tr)
	if len(fs) != 1 || !IsUnreflected(fs[0]) || IsRemoval(fs[0]) {
		t.Fatalf("want one unreflected finding, got %v", fs)
	}
	freshOf := func() *model.Snapshot {
		s := loadSnapshot(t, "s0")
		s.CRObject()["spec"] = jsonv.Copy(d["spec"])
		return s
	}
	if !CreationAgrees(context.Background(), Config{}, tr, freshOf()) {
		t.Error("a fresh creation equal to the state reached did not agree")
	}
	fresh := freshOf()
	editConf(t, fresh, "maxmemory 100mb", "maxmemory 0")
	if CreationAgrees(context.Background(), Config{}, tr, fresh) {
		t.Error("a fresh creation whose configuration differs agreed")
	}
	if CreationAgrees(context.Background(), Config{}, tr, nil) {
		t.Error("no fresh creation agreed")
	}

	// A value overruled — a field holding another value in its place, as
	// seeded bug 04 rewrites the user's maxmemory-policy — is the operator
	// acting against the desired state, on a fresh creation too: not this kind.
	od := jsonv.CopyMap(prevD)
	setIn(t, od, "spec.config.maxmemory", "200mb")
	ocurr := loadSnapshot(t, "s0")
	ocurr.CRObject()["spec"] = jsonv.Copy(od["spec"])
	editConf(t, ocurr, "maxmemory 100mb", "maxmemory 64mb")
	ofs := run(NewConsistency(Config{}), &model.Transition{Step: step(model.StepApply, "spec.config.maxmemory"), PrevDesired: prevD, Desired: od, Prev: prev, Curr: ocurr})
	if len(ofs) != 1 || !strings.Contains(ofs[0].Summary, "overruled") {
		t.Fatalf("want one overruled finding, got %v", ofs)
	}
	if IsUnreflected(ofs[0]) {
		t.Error("an overruled value was taken for one that shows nowhere")
	}

	mapped := fs[0]
	mapped.Evidence = append([]model.Evidence{{Object: fs[0].Evidence[0].Object, Path: fs[0].Evidence[0].Path,
		Detail: "desired true; previously unset; mapped to StatefulSet * spec.template"}}, fs[0].Evidence[1:]...)
	if IsUnreflected(mapped) {
		t.Error("a finding on a declared mapping was taken for one judged by name")
	}
}

// renameObject moves the object at key to the same key with another name, as a
// fresh creation makes an object an earlier desired state named differently.
func renameObject(t *testing.T, s *model.Snapshot, key string) {
	t.Helper()
	obj, ok := s.Objects[key]
	if !ok {
		t.Fatalf("no object %s", key)
	}
	delete(s.Objects, key)
	s.Objects[key+"-renamed"] = obj
}

// A property named after a pod's or a container's field is a value to pass to
// the pods: one that shows nowhere was dropped (seeded bug 10), whatever a
// fresh creation shows. The Prometheus operator's own settings are not.
func TestPodPassThrough(t *testing.T) {
	for prop, want := range map[string]bool{
		`spec.scheduling.nodeSelector["kubernetes.io/hostname"]`: true,
		"spec.volumes[0].downwardAPI.defaultMode":                true,
		"spec.tolerations":                                 true,
		"spec.enableFeatures":                              false,
		"spec.clusterLabel":                                false,
		"spec.limits.maxSilences":                          false,
		"spec.podMetadata.name":                            false, // a generic name says nothing
		"spec.alertmanagerConfigSelector.matchExpressions": false,
	} {
		if got := podPassThrough(prop); got != want {
			t.Errorf("podPassThrough(%s) = %v, want %v", prop, got, want)
		}
	}
}
