package readiness

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil { // numbers as float64, as JSON decodes them
		t.Fatal(err)
	}
	return m
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name        string
		group, kind string
		obj         string
		want        []string // messages
		short       []bool
	}{
		{"pod running ready", "", "Pod", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, nil, nil},
		{"pod succeeded", "", "Pod", `{"status":{"phase":"Succeeded"}}`, nil, nil},
		{"pod failed", "", "Pod", `{"status":{"phase":"Failed"}}`, []string{`phase "Failed"`}, []bool{true}},
		{"pod running not ready", "", "Pod", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}}`, []string{"not ready"}, []bool{true}},
		{"pod pending", "", "Pod", `{"status":{"phase":"Pending"}}`, []string{`phase "Pending"`}, []bool{true}},
		{"pod being deleted", "", "Pod", `{"metadata":{"deletionTimestamp":"2025-01-01T00:00:00Z"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`,
			[]string{"being deleted"}, []bool{false}},
		{"deployment ready", "apps", "Deployment", `{"metadata":{"generation":2},"spec":{"replicas":2},"status":{"observedGeneration":2,"replicas":2,"updatedReplicas":2,"availableReplicas":2,"readyReplicas":2}}`, nil, nil},
		// The new pod cannot start and the old one still runs: the counts are whole, the old replica is left.
		{"deployment old replica pending termination", "apps", "Deployment", `{"spec":{"replicas":1},"status":{"replicas":2,"updatedReplicas":1,"availableReplicas":1,"readyReplicas":1}}`,
			[]string{"2 of 1 replicas exist"}, []bool{false}},
		{"deployment default one replica", "apps", "Deployment", `{"status":{"replicas":1,"updatedReplicas":1,"availableReplicas":1,"readyReplicas":1}}`, nil, nil},
		{"deployment rolling", "apps", "Deployment", `{"metadata":{"generation":2},"spec":{"replicas":2},"status":{"observedGeneration":2,"replicas":2,"updatedReplicas":1,"availableReplicas":1,"readyReplicas":1}}`,
			[]string{"1 of 2 replicas run the current template", "1 of 2 replicas available", "1 of 2 replicas ready"}, []bool{true, true, false}},
		{"deployment surge", "apps", "Deployment", `{"spec":{"replicas":2},"status":{"replicas":3,"updatedReplicas":2,"availableReplicas":3,"readyReplicas":3}}`,
			[]string{"3 of 2 replicas available", "3 of 2 replicas ready", "3 of 2 replicas exist"}, []bool{false, false, false}},
		{"deployment generation not observed", "apps", "Deployment", `{"metadata":{"generation":3},"status":{"observedGeneration":2,"replicas":1,"updatedReplicas":1,"availableReplicas":1,"readyReplicas":1}}`,
			[]string{"generation 3 not observed (observedGeneration 2)"}, []bool{false}},
		// The bundled operator's StatefulSet is OnDelete: its replicas still count, its revision does not.
		{"statefulset OnDelete short", "apps", "StatefulSet", `{"spec":{"replicas":3,"updateStrategy":{"type":"OnDelete"}},"status":{"replicas":2,"readyReplicas":2,"updatedReplicas":2,"currentRevision":"a","updateRevision":"b"}}`,
			[]string{"2 of 3 replicas ready", "2 of 3 replicas run the current template", "2 of 3 replicas exist"}, []bool{true, true, false}},
		{"statefulset OnDelete revision", "apps", "StatefulSet", `{"spec":{"replicas":1,"updateStrategy":{"type":"OnDelete"}},"status":{"replicas":1,"readyReplicas":1,"updatedReplicas":1,"currentRevision":"a","updateRevision":"b"}}`, nil, nil},
		{"statefulset rolling revision", "apps", "StatefulSet", `{"spec":{"replicas":1},"status":{"replicas":1,"readyReplicas":1,"updatedReplicas":1,"currentRevision":"a","updateRevision":"b"}}`,
			[]string{"rolling out revision b (current a)"}, []bool{false}},
		// The API server omits zero counts: an absent updatedReplicas is 0.
		{"statefulset absent count", "apps", "StatefulSet", `{"spec":{"replicas":1},"status":{"replicas":1,"readyReplicas":1}}`,
			[]string{"0 of 1 replicas run the current template"}, []bool{true}},
		{"daemonset", "apps", "DaemonSet", `{"status":{"desiredNumberScheduled":3,"numberReady":1}}`, []string{"1 of 3 pods ready"}, []bool{true}},
		{"replicaset", "apps", "ReplicaSet", `{"spec":{"replicas":2},"status":{"readyReplicas":2}}`, nil, nil},
		{"job failed", "batch", "Job", `{"status":{"conditions":[{"type":"Complete","status":"False"},{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}}`,
			[]string{"failed: BackoffLimitExceeded"}, []bool{true}},
		{"unknown kind", "", "ConfigMap", `{"metadata":{"generation":5}}`, nil, nil},
		{"same kind, other group", "example.com", "Deployment", `{"spec":{"replicas":5}}`, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := Check(tc.group, tc.kind, obj(t, tc.obj))
			var msgs []string
			var short []bool
			for _, p := range ps {
				msgs = append(msgs, p.Message)
				short = append(short, p.Short)
			}
			if !reflect.DeepEqual(msgs, tc.want) || !reflect.DeepEqual(short, tc.short) {
				t.Errorf("Check = %q (short %v), want %q (short %v)", msgs, short, tc.want, tc.short)
			}
			if Ready(tc.group, tc.kind, obj(t, tc.obj)) != (len(tc.want) == 0) {
				t.Errorf("Ready disagrees with Check")
			}
		})
	}
}

// TestNumberTypes: the same object judges alike whether its numbers are int64
// (from the API server), float64 (from JSON) or json.Number.
func TestNumberTypes(t *testing.T) {
	for _, n := range []any{int64(2), float64(2), 2, int32(2), json.Number("2")} {
		o := map[string]any{"spec": map[string]any{"replicas": n}, "status": map[string]any{"readyReplicas": int64(1), "updatedReplicas": n, "replicas": n}}
		ps := Check("apps", "StatefulSet", o)
		if len(ps) != 1 || ps[0].Field != "status.readyReplicas" || ps[0].Want != int64(2) || ps[0].Got != int64(1) {
			t.Errorf("replicas as %T: %+v, want one shortfall of readyReplicas 1 of 2", n, ps)
		}
	}
}

func TestPodDetail(t *testing.T) {
	p := obj(t, `{"status":{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False","reason":"ContainersNotReady","message":"containers with unready status: [valkey]"}],
		"containerStatuses":[{"name":"valkey","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}`)
	ps := Check("", "Pod", p)
	if len(ps) != 1 {
		t.Fatalf("Check = %+v", ps)
	}
	want := "phase Running; ContainersNotReady containers with unready status: [valkey]; valkey: CrashLoopBackOff"
	if ps[0].Detail != want || ps[0].Field != "status.conditions[1].status" || ps[0].Message != "not ready" {
		t.Errorf("pod problem = %+v, want detail %q at status.conditions[1].status", ps[0], want)
	}
}

// Pod (typed) and PodReady (unstructured) are one rule.
func TestTypedPod(t *testing.T) {
	cond := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: s}}
	}
	cases := []struct {
		status corev1.PodStatus
		want   bool
	}{
		{corev1.PodStatus{Phase: corev1.PodRunning, Conditions: cond(corev1.ConditionTrue)}, true},
		{corev1.PodStatus{Phase: corev1.PodRunning, Conditions: cond(corev1.ConditionFalse)}, false},
		{corev1.PodStatus{Phase: corev1.PodRunning}, false},
		{corev1.PodStatus{Phase: corev1.PodPending, Conditions: cond(corev1.ConditionTrue)}, false},
		{corev1.PodStatus{Phase: corev1.PodFailed, Conditions: cond(corev1.ConditionTrue)}, false},
		{corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: cond(corev1.ConditionFalse)}, true},
	}
	for _, c := range cases {
		p := &corev1.Pod{Status: c.status}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		untyped, _ := PodReady(obj)
		if got := Pod(p); got != c.want || untyped != c.want {
			t.Errorf("%s %v: Pod = %v, PodReady = %v, want %v", c.status.Phase, c.status.Conditions, got, untyped, c.want)
		}
	}
}
