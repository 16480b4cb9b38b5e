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
