package oracles

import (
	"context"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

// versionState is the part of the untuned Prometheus-operator campaign's
// state (seed 1, w4/s16 → w4/s17) that shows an Alertmanager's version: the
// operand's image tag (with the "v") and the version label (without it), on
// the StatefulSet and its pod.
func versionState(tag string) *model.Snapshot {
	const cr = "monitoring.coreos.com/v1/Alertmanager/ns/example"
	label := tag[1:]
	labels := func() map[string]any {
		return map[string]any{"app.kubernetes.io/name": "alertmanager", "app.kubernetes.io/version": label}
	}
	container := func() []any {
		return []any{map[string]any{"name": "alertmanager", "image": "quay.io/prometheus/alertmanager:" + tag,
			"args": []any{"--config.file=/etc/alertmanager/config_out/alertmanager.env.yaml", "--storage.path=/alertmanager"}}}
	}
	owner := []any{map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager", "name": "example", "controller": true}}
	return &model.Snapshot{CR: cr, Objects: map[string]model.Object{
		cr: {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager", "metadata": map[string]any{"name": "example", "namespace": "ns"},
			"spec": map[string]any{"replicas": int64(1), "version": tag}},
		"apps/v1/StatefulSet/ns/alertmanager-example": {"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"name": "alertmanager-example", "namespace": "ns", "labels": labels(), "ownerReferences": owner},
			"spec": map[string]any{"replicas": int64(1), "template": map[string]any{"metadata": map[string]any{"labels": labels()},
				"spec": map[string]any{"containers": container()}}}},
		"/v1/Pod/ns/alertmanager-example-0": {"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "alertmanager-example-0", "namespace": "ns", "labels": labels()},
			"spec":     map[string]any{"containers": container()}},
		"/v1/Secret/ns/alertmanager-example-generated": {"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "alertmanager-example-generated", "namespace": "ns"}},
	}}
}

func versionTransition(prev, des string) *model.Transition {
	return &model.Transition{
		Step:        &model.Step{Kind: model.StepApply, Changed: []string{"spec.version"}},
		PrevDesired: model.Object{"spec": map[string]any{"replicas": int64(1), "version": prev}},
		Desired:     model.Object{"spec": map[string]any{"replicas": int64(1), "version": des}},
		Prev:        versionState(prev), Curr: versionState(des),
	}
}

// TestConsistencyVersionTagAndLabel: a property holding "v0.25.1" is
// reflected by the image tag ":v0.25.1" and the label "0.25.1" (untuned
// Prometheus-operator campaign, seed 1, group 29: "spec.version changed to
// "v0.25.1" but the value was overruled: Secret … apiVersion holds "v1"").
func TestConsistencyVersionTagAndLabel(t *testing.T) {
	c := NewConsistency(Config{})
	if fs := c.Check(context.Background(), versionTransition("v0.25.0", "v0.25.1")); len(fs) != 0 {
		t.Fatalf("version change reflected by image tag and label: got %d findings, first %q", len(fs), fs[0].Summary)
	}
	// The same state when the operator kept the old version is still an inconsistency.
	tr := versionTransition("v0.25.0", "v0.25.1")
	tr.Curr = versionState("v0.25.0")
	if fs := c.Check(context.Background(), tr); len(fs) != 1 {
		t.Fatalf("version ignored: got %d findings, want 1", len(fs))
	}
	// Only the label shows it (an operator that tags images by digest).
	tr = versionTransition("v0.25.0", "v0.25.1")
	for _, key := range []string{"apps/v1/StatefulSet/ns/alertmanager-example", "/v1/Pod/ns/alertmanager-example-0"} {
		o := tr.Curr.Objects[key]
		setIn(t, o, "spec.template.spec.containers[0].image", "quay.io/prometheus/alertmanager@sha256:0123")
		setIn(t, o, "spec.containers[0].image", "quay.io/prometheus/alertmanager@sha256:0123")
	}
	if fs := c.Check(context.Background(), tr); len(fs) != 0 {
		t.Fatalf("version change reflected by the label alone: got %q", fs[0].Summary)
	}
}

// TestConsistencyVersionAlreadyInEffect: a version newly set to the one the
// image and label already show (the operator's default) changes nothing and
// is consistent.
func TestConsistencyVersionAlreadyInEffect(t *testing.T) {
	tr := versionTransition("v0.25.0", "v0.25.0")
	tr.PrevDesired = model.Object{"spec": map[string]any{"replicas": int64(1)}}
	delete(tr.Prev.CRObject()["spec"].(map[string]any), "version")
	if fs := NewConsistency(Config{}).Check(context.Background(), tr); len(fs) != 0 {
		t.Fatalf("default version set explicitly: got %q", fs[0].Summary)
	}
}

func TestVersionMatching(t *testing.T) {
	for _, tt := range []struct {
		d, v any
		want bool
	}{
		{"v0.25.1", "0.25.1", true},
		{"0.25.1", "v0.25.1", true},
		{"v0.25.1", "quay.io/prometheus/alertmanager:v0.25.1", true},
		{"0.25.1", "quay.io/prometheus/alertmanager:v0.25.1", true},
		{"v0.25.1", "registry:5000/alertmanager:0.25.1@sha256:abcd", true},
		{"v0.25.1", "quay.io/prometheus/alertmanager:v0.25.0", false},
		{"v0.25.1", "0.25.10", false},
		{"v1", "1", false},                               // an apiVersion is no version
		{"v0.25.1", "registry:5000/alertmanager", false}, // a port is no tag
		{"v0.25.1", "see quay.io/a:v0.25.1 for details", false},
	} {
		if got, _ := matchValue(tt.d, "version", tt.v); got != tt.want {
			t.Errorf("matchValue(%v, version, %v) = %v, want %v", tt.d, tt.v, got, tt.want)
		}
	}
}

// alertmanagerArgs are the Alertmanager container's arguments of the untuned
// Prometheus-operator campaign (seed 1), with extra ones appended.
func alertmanagerArgs(extra ...string) []any {
	args := []any{"--config.file=/etc/alertmanager/config_out/alertmanager.env.yaml", "--storage.path=/alertmanager",
		"--data.retention=120h", "--cluster.listen-address=", "--web.listen-address=:9093", "--web.route-prefix=/",
		"--cluster.peer=alertmanager-example-0.alertmanager-operated:9094"}
	for _, e := range extra {
		args = append(args, e)
	}
	return append(args, "--cluster.reconnect-timeout=5m", "--web.config.file=/etc/alertmanager/web_config/web-config.yaml")
}

// TestConsistencyPassedOnFlags: a generated peer passed on as
// --cluster.peer=gauntlet-xowbr (seed 1, w2/s12, group 26: "additionalPeers
// changed to ["gauntlet-xowbr"] but no field of the state reflects it") and
// a pass-through argument {name, value} rendered --name=value (w4/s7, group
// 11: "overruled" while the args held it) are reflected.
func TestConsistencyPassedOnFlags(t *testing.T) {
	c := NewConsistency(Config{})
	check := func(prop string, des any, argsBefore, argsAfter []any) []model.Finding {
		tr := versionTransition("v0.25.0", "v0.25.0")
		tr.Step.Changed = []string{"spec." + prop}
		tr.Desired["spec"].(map[string]any)[prop] = des
		for _, st := range []struct {
			s    *model.Snapshot
			args []any
		}{{tr.Prev, argsBefore}, {tr.Curr, argsAfter}} {
			setIn(t, st.s.Objects["apps/v1/StatefulSet/ns/alertmanager-example"], "spec.template.spec.containers[0].args", st.args)
			setIn(t, st.s.Objects["/v1/Pod/ns/alertmanager-example-0"], "spec.containers[0].args", st.args)
		}
		tr.Curr.CRObject()["spec"].(map[string]any)[prop] = des
		return c.Check(context.Background(), tr)
	}
	if fs := check("additionalPeers", []any{"gauntlet-xowbr"}, alertmanagerArgs(), alertmanagerArgs("--cluster.peer=gauntlet-xowbr")); len(fs) != 0 {
		t.Errorf("a peer passed on as --cluster.peer: %q", fs[0].Summary)
	}
	if fs := check("additionalPeers", []any{"gauntlet-xowbr"}, alertmanagerArgs(), alertmanagerArgs()); len(fs) != 1 {
		t.Errorf("a peer not passed on: %d findings, want 1", len(fs))
	}
	args := []any{map[string]any{"name": "gauntlet-nz5qp", "value": "gauntlet-dibjn"}}
	if fs := check("additionalArgs", args, alertmanagerArgs(), alertmanagerArgs("--gauntlet-nz5qp=gauntlet-dibjn")); len(fs) != 0 {
		t.Errorf("an argument rendered --name=value: %q", fs[0].Summary)
	}
	if fs := check("additionalArgs", args, alertmanagerArgs(), alertmanagerArgs("--gauntlet-nz5qp=other")); len(fs) != 1 {
		t.Errorf("an argument rendered with another value: %d findings, want 1", len(fs))
	}
	flagOnly := []any{map[string]any{"name": "web.cors.origin"}}
	if fs := check("additionalArgs", flagOnly, alertmanagerArgs(), alertmanagerArgs("--web.cors.origin")); len(fs) != 0 {
		t.Errorf("an argument without a value rendered --name: %q", fs[0].Summary)
	}
}
