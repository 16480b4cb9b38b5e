package campaign

import (
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

// crashingPod is alertmanager-example-0 of the untuned Prometheus-operator
// campaign (seed 1) with its alertmanager container crash-looping after
// terminating with msg.
func crashingPod(msg string) *model.Snapshot {
	return &model.Snapshot{Objects: map[string]model.Object{
		"/v1/Pod/ns/alertmanager-example-0": {"kind": "Pod", "metadata": map[string]any{"name": "alertmanager-example-0", "namespace": "ns"},
			"status": map[string]any{"containerStatuses": []any{
				map[string]any{"name": "alertmanager", "ready": false, "restartCount": int64(3),
					"lastState": map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": "Error", "message": msg}},
					"state":     map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container=alertmanager"}}},
				map[string]any{"name": "config-reloader", "ready": true, "restartCount": int64(0)},
			}}},
	}}
}

func alertmanagerSpec(extra map[string]any) model.Object {
	spec := map[string]any{"logFormat": "json", "replicas": int64(1), "version": "v0.25.0"}
	for k, v := range extra {
		spec[k] = v
	}
	return model.Object{"spec": spec}
}

// TestMissingReferenced: spec.secrets naming a Secret that does not exist
// (seed 1, w3/s5): the pod waits in FailedMount, which raised groups 5 and 6
// (Available=False, 0 of 1 replicas ready) as alarms. It is a misoperation.
func TestMissingReferenced(t *testing.T) {
	prev := alertmanagerSpec(nil)
	d := alertmanagerSpec(map[string]any{"secrets": []any{"gauntlet-t4hbf"}})
	mount := &model.Snapshot{Events: []model.Event{
		{Reason: "Scheduled", Object: "/v1/Pod/ns/alertmanager-example-0", Message: "Successfully assigned ns/alertmanager-example-0 to node-1"},
		{Reason: "FailedMount", Object: "/v1/Pod/ns/alertmanager-example-0", Type: "Warning",
			Message: `MountVolume.SetUp failed for volume "secret-gauntlet-t4hbf" : secret "gauntlet-t4hbf" not found`},
	}}
	got := missingReferenced(prev, d, []string{"spec.secrets"}, mount)
	if !strings.Contains(got, `spec.secrets[0] names Secret "gauntlet-t4hbf", which does not exist`) || !strings.Contains(got, "FailedMount") {
		t.Fatalf("missingReferenced = %q", got)
	}
	// The same message from a container the kubelet cannot configure.
	env := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/p-0": {"kind": "Pod", "metadata": map[string]any{"name": "p-0"},
		"status": map[string]any{"containerStatuses": []any{map[string]any{"name": "c", "state": map[string]any{"waiting": map[string]any{
			"reason": "CreateContainerConfigError", "message": `configmap "gauntlet-ab12c" not found`}}}}}}}}
	d2 := alertmanagerSpec(map[string]any{"configMaps": []any{"gauntlet-ab12c"}})
	if got := missingReferenced(prev, d2, []string{"spec.configMaps"}, env); !strings.Contains(got, `ConfigMap "gauntlet-ab12c"`) {
		t.Fatalf("CreateContainerConfigError: missingReferenced = %q", got)
	}
	// A missing object the step did not name is not its misoperation.
	if got := missingReferenced(prev, alertmanagerSpec(map[string]any{"replicas": int64(2)}), []string{"spec.replicas"}, mount); got != "" {
		t.Fatalf("an object the step did not name: %q", got)
	}
	// Nor is one the previous desired state named already.
	if got := missingReferenced(d, d, []string{"spec.secrets"}, mount); got != "" {
		t.Fatalf("an object named before the step: %q", got)
	}
}

// TestOperandRefusedInvented: a generated flag name the operand refuses
// (seed 1, w4/s7: additionalArgs [{name: gauntlet-nz5qp, value:
// gauntlet-dibjn}], "unknown long flag '--gauntlet-nz5qp'", groups 11–14 and
// 31) is a misoperation; a typed value of the schema the operator renders
// wrongly (w5/s7, operator bug B: web.timeout 6, "time: missing unit in
// duration "6"") stays an alarm.
func TestOperandRefusedInvented(t *testing.T) {
	prev := alertmanagerSpec(nil)
	logsOf := func(text string) func(pod, container string, previous bool) string {
		return func(pod, container string, previous bool) string {
			if pod == "alertmanager-example-0" && container == "alertmanager" {
				return text
			}
			return ""
		}
	}
	flagLine := "prometheus-alertmanager: error: unknown long flag '--gauntlet-nz5qp', try --help"
	d := alertmanagerSpec(map[string]any{"additionalArgs": []any{map[string]any{"name": "gauntlet-nz5qp", "value": "gauntlet-dibjn"}}})
	got := operandRefusedInvented(prev, d, []string{"spec.additionalArgs"}, crashingPod(""), nil, logsOf(flagLine+"\n"))
	if !strings.Contains(got, `spec.additionalArgs[0].name = "gauntlet-nz5qp"`) || !strings.Contains(got, "unknown long flag") {
		t.Fatalf("the generated flag: operandRefusedInvented = %q", got)
	}
	// The termination message alone says it when the log cannot be read.
	if got := operandRefusedInvented(prev, d, []string{"spec.additionalArgs"}, crashingPod(flagLine), nil, logsOf("")); got == "" {
		t.Fatal("the generated flag named by the termination message only: not recognised")
	}
	// Seed 2: clusterAdvertiseAddress: gauntlet-gudjd.
	addr := alertmanagerSpec(map[string]any{"clusterAdvertiseAddress": "gauntlet-gudjd"})
	if got := operandRefusedInvented(prev, addr, []string{"spec.clusterAdvertiseAddress"}, crashingPod(""), nil,
		logsOf(`level=error component=cluster err="couldn't deduce an advertise address: address gauntlet-gudjd: missing port in address"`)); got == "" {
		t.Fatal("a generated address the operand refuses: not recognised")
	}

	bugB := "prometheus-alertmanager: error: time: missing unit in duration \"6\", try --help"
	web := alertmanagerSpec(map[string]any{"web": map[string]any{"timeout": int64(6)}})
	if got := operandRefusedInvented(prev, web, []string{"spec.web"}, crashingPod(bugB), nil, logsOf(bugB)); got != "" {
		t.Fatalf("operator bug B (a valid integer rendered as a duration) labelled a misoperation: %q", got)
	}
	// The operator failing on a generated value is its bug.
	op := crashingPod(flagLine)
	op.Objects["/v1/Pod/ns/alertmanager-example-0"]["metadata"].(map[string]any)["labels"] = map[string]any{"app": "operator", "x": "y"}
	if got := operandRefusedInvented(prev, d, []string{"spec.additionalArgs"}, op, map[string]string{"app": "operator"}, logsOf(flagLine)); got != "" {
		t.Fatalf("the operator's own pod failing: %q", got)
	}
	// A generated value in the log of a container that is fine is no refusal.
	healthy := crashingPod("")
	cs := healthy.Objects["/v1/Pod/ns/alertmanager-example-0"]["status"].(map[string]any)["containerStatuses"].([]any)
	healthy.Objects["/v1/Pod/ns/alertmanager-example-0"]["status"].(map[string]any)["containerStatuses"] = cs[1:]
	if got := operandRefusedInvented(prev, d, []string{"spec.additionalArgs"}, healthy, nil, logsOf(flagLine)); got != "" {
		t.Fatalf("no container fails: %q", got)
	}
}

// TestHostLimited: config reloaders of six embedded clusters used up the
// host's inotify instances (seed 2: "create watcher: too many open files");
// the finding names the host setting and how to raise it.
func TestHostLimited(t *testing.T) {
	snap := crashingPod("")
	logs := func(pod, container string, previous bool) string {
		if container == "alertmanager" && previous {
			return `level=info msg="Starting config-reloader"` + "\n" + `level=error msg="Failed to run" err="create watcher: too many open files"` + "\n"
		}
		return ""
	}
	got := hostLimited(snap, logs, "128")
	if !strings.Contains(got, "fs.inotify.max_user_instances (128 on this host)") || !strings.Contains(got, "create watcher: too many open files") {
		t.Fatalf("hostLimited = %q", got)
	}
	// Too many open files without a watcher is the program's own descriptors: not the host's inotify limit.
	if got := hostLimited(snap, func(string, string, bool) string { return "accept: too many open files" }, "128"); got != "" {
		t.Fatalf("a descriptor leak named the inotify limit: %q", got)
	}
}

// TestSeedGateHostLimit: a seed whose config reloader cannot create its
// watcher stops the campaign with the host's inotify limit as the cause and
// the command that raises it.
func TestSeedGateHostLimit(t *testing.T) {
	rec := &StepRecord{Step: model.Step{Kind: model.StepSeed, Stuck: true}}
	logs := func(pod, container string, previous bool) string {
		return `level=error msg="Failed to run" err="create watcher: too many open files"`
	}
	err := seedGate(rec, crashingPod(""), logs)
	if err == nil || !strings.Contains(err.Error(), "fs.inotify.max_user_instances") || !strings.Contains(err.Error(), "sysctl -w") {
		t.Fatalf("seedGate = %v, want the host's inotify limit named with its fix", err)
	}
}
