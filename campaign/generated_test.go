package campaign

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// recreatedState is a re-created system of the third-party operator's night
// 2: a password Secret and an ACL it generates, and the StatefulSet's
// pod-template annotation hashing them. pass differs between creations.
func recreatedState(ns, pass string, leftover bool) *model.Snapshot {
	s := &model.Snapshot{CR: "v1/ValkeyShards/" + ns + "/v", Objects: map[string]model.Object{
		"v1/ValkeyShards/" + ns + "/v": {"apiVersion": "v1", "kind": "ValkeyShards", "metadata": map[string]any{"name": "v", "namespace": ns},
			"spec": map[string]any{"shards": int64(1)}},
		"/v1/Secret/" + ns + "/v-auth": {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "v-auth", "namespace": ns},
			"data": map[string]any{"password": pass, "users.acl": "user default on #" + pass + " ~* +@all"}},
		"apps/v1/StatefulSet/" + ns + "/v-0": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "v-0", "namespace": ns},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"metadata": map[string]any{
				"annotations": map[string]any{"checksum/acl": "sha-" + pass}}}}},
	}}
	if leftover {
		s.Objects["policy/v1/PodDisruptionBudget/"+ns+"/v"] = model.Object{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
			"metadata": map[string]any{"name": "v", "namespace": ns}}
	}
	return s
}

// TestGeneratedFields: two fresh creations of one desired state differ in the
// generated password, ACL and hash, which are learned as masks and end the
// recovery failures they caused; an object only one creation has (a
// PodDisruptionBudget left over, seeded bug 02's kind) is not masked.
func TestGeneratedFields(t *testing.T) {
	before := recreatedState("w0", "b64-one", false)
	recreated := recreatedState("w0", "b64-two", true)
	fresh := recreatedState("w0", "b64-three", false)
	tr := &model.Transition{Step: &model.Step{Kind: model.StepRollback}, Curr: recreated, Reference: before}
	rc := oracles.NewRecovery(oracles.Config{})
	if n := len(rc.Check(context.Background(), tr)); n < 3 {
		t.Fatalf("the recorded case: %d recovery findings, want the Secret, StatefulSet and PDB", n)
	}
	learned := generatedFields(recreated, fresh, nil)
	for _, want := range []string{"Secret/v-auth/data.password", "StatefulSet/v-*/spec.template.metadata.annotations"} {
		if !slices.ContainsFunc(learned, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("learned %v: %s missing", learned, want)
		}
	}
	if slices.ContainsFunc(learned, func(m string) bool { return strings.HasPrefix(m, "PodDisruptionBudget") }) {
		t.Errorf("a leftover object was masked: %v", learned)
	}
	tr.Masks = learned
	fs := rc.Check(context.Background(), tr)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "PodDisruptionBudget") {
		t.Errorf("with the learned masks, recovery findings = %v, want the leftover PDB only", fs)
	}
	if got := generatedFields(recreated, fresh, learned); len(got) != 0 {
		t.Errorf("known masks relearned: %v", got)
	}
	g := &generatedMasks{}
	if a := g.add(learned); len(a) != len(learned) {
		t.Errorf("added %v", a)
	}
	if a := g.add(learned); len(a) != 0 {
		t.Errorf("known masks reported as new: %v", a)
	}
	r := &runner{masks: []string{"Pod/*/status.podIP"}, generated: g}
	if m := r.masksNow(); len(m) != len(learned)+1 {
		t.Errorf("masksNow = %v", m)
	}
}
