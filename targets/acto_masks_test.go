package targets

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// TestActoIgnoreFieldsHideAlarm: an Acto config's diff_ignore_fields regex
// hides, in the differential oracle, a field that alarms without it.
func TestActoIgnoreFieldsHideAlarm(t *testing.T) {
	tg, err := Load(filepath.Join(testdataAbs(t, "acto"), "data", "widget-operator", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	sts := func(hash string, replicas int) model.Object {
		return model.Object{"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"name": "widget", "namespace": "ns", "annotations": map[string]any{"example.dev/hash": hash}},
			"spec":     map[string]any{"replicas": int64(replicas)}}
	}
	snap := func(o model.Object) *model.Snapshot {
		return &model.Snapshot{Objects: map[string]model.Object{"apps/v1/StatefulSet/ns/widget": o}}
	}
	judge := func(masks []string, curr, ref model.Object) []model.Finding {
		d := oracles.NewDifferential(oracles.Config{Masks: masks})
		return d.Check(context.Background(), &model.Transition{Step: &model.Step{Kind: model.StepApply}, Curr: snap(curr), Reference: snap(ref)})
	}
	if fs := judge(nil, sts("a", 3), sts("b", 3)); len(fs) == 0 {
		t.Fatal("a different hash annotation does not alarm without masks: the test shows nothing")
	}
	if fs := judge(tg.IgnoreFields, sts("a", 3), sts("b", 3)); len(fs) != 0 {
		t.Errorf("ignore fields %v: the hash annotation still alarms: %v", tg.IgnoreFields, fs[0].Summary)
	}
	// Only the named field is hidden.
	if fs := judge(tg.IgnoreFields, sts("a", 3), sts("b", 4)); len(fs) == 0 {
		t.Errorf("ignore fields %v hide spec.replicas too", tg.IgnoreFields)
	}
}

// TestActoUnhonouredFieldsWarn: every set Acto field that configures Acto's
// own machinery is named in Target.Warnings.
func TestActoUnhonouredFieldsWarn(t *testing.T) {
	tg, err := Load(filepath.Join(testdataAbs(t, "acto"), "data", "widget-operator", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(tg.Warnings, "\n")
	for _, want := range []string{"num_nodes", "wait_time", "kubernetes_version", "custom_module", "analysis", `operator_container_name "manager"`} {
		if !strings.Contains(all, want+" ") {
			t.Errorf("warnings do not name %s:\n%s", want, all)
		}
	}
	for _, not := range []string{"custom_oracle", "k8s_fields", "monkey_patch"} {
		if strings.Contains(all, not) {
			t.Errorf("warnings name %s, which the config does not set:\n%s", not, all)
		}
	}
}

// TestTargetRefusesBadMask: a mask the oracles cannot parse is an error at load.
func TestTargetRefusesBadMask(t *testing.T) {
	tg, err := Load(filepath.Join(testdataAbs(t, "acto"), "data", "widget-operator", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tg.IgnoreFields = append(tg.IgnoreFields, `acto:\['a'\](?=x)`)
	if err := tg.Validate(); err == nil || !strings.Contains(err.Error(), "(?=x)") {
		t.Errorf("Validate = %v, want an error naming the bad regex", err)
	}
}
