package oracles

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

func staleObj(apiVersion, kind, name string, extra map[string]any, meta map[string]any) model.Object {
	md := map[string]any{"name": name, "namespace": "ns"}
	for k, v := range meta {
		md[k] = v
	}
	o := model.Object{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func TestStaleView(t *testing.T) {
	cr := staleObj("valkey.gauntlet.dev/v1alpha1", "ValkeyCluster", "c", nil, nil)
	svc := staleObj("v1", "Service", "c", map[string]any{"spec": map[string]any{"port": int64(6379)}}, map[string]any{"uid": "1"})
	svcAgain := staleObj("v1", "Service", "c", map[string]any{"spec": map[string]any{"port": int64(6379)}}, map[string]any{"uid": "2"})
	pvc := staleObj("v1", "PersistentVolumeClaim", "data-c-1", map[string]any{"spec": map[string]any{"size": "1Gi"}},
		map[string]any{"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": []any{"kubernetes.io/pvc-protection"}})
	pod := staleObj("v1", "Pod", "c-0", nil, map[string]any{"ownerReferences": []any{map[string]any{"kind": "StatefulSet", "name": "c", "controller": true}}})
	sts := staleObj("apps/v1", "StatefulSet", "c", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, nil)
	stsNew := staleObj("apps/v1", "StatefulSet", "c", map[string]any{"spec": map[string]any{"replicas": int64(3), "claims": "2Gi"}}, nil)
	snap := func(objs ...model.Object) *model.Snapshot {
		s := &model.Snapshot{Objects: map[string]model.Object{}, CR: "cr"}
		for _, o := range objs {
			s.Objects[o["kind"].(string)] = o
		}
		s.Objects["cr"] = cr
		return s
	}
	del := func(group, res, name string) model.ViewWrite {
		return model.ViewWrite{Verb: "delete", Group: group, Resource: res, Namespace: "ns", Name: name, Time: time.Unix(0, 0)}
	}
	writes := []model.ViewWrite{del("", "services", "c"), del("", "persistentvolumeclaims", "data-c-1"), del("", "pods", "c-0"), del("apps", "statefulsets", "c"),
		{Verb: "update", Resource: "services", Namespace: "ns", Name: "c"}}
	tr := &model.Transition{Prev: snap(svc, sts, pod), Curr: snap(svcAgain, pvc, pod, stsNew),
		OperatorView: &model.OperatorView{Faults: []model.FaultKind{model.FaultStaleRead}, Writes: writes}}

	got := StaleView{}.Check(context.Background(), tr)
	if len(got) != 2 {
		t.Fatalf("findings %+v, want the re-created Service and the terminating claim", got)
	}
	if !strings.Contains(got[0].Summary, "services ns/c") || !strings.Contains(got[0].Summary, "unchanged") {
		t.Errorf("first finding %q: want the Service deleted and re-created unchanged", got[0].Summary)
	}
	if !strings.Contains(got[1].Summary, "persistentvolumeclaims ns/data-c-1") || !strings.Contains(got[1].Summary, "terminating") {
		t.Errorf("second finding %q: want the claim left terminating", got[1].Summary)
	}
	if got[0].Signature == got[1].Signature {
		t.Errorf("one signature for two kinds: %s", got[0].Signature)
	}

	// Without a stale-read fault (a crash, no fault at all) the deletes are not judged.
	tr.OperatorView.Faults = []model.FaultKind{model.FaultCrashAfterWrite}
	if got := (StaleView{}).Check(context.Background(), tr); len(got) != 0 {
		t.Errorf("judged a step without a stale view: %+v", got)
	}
	tr.OperatorView = nil
	if got := (StaleView{}).Check(context.Background(), tr); len(got) != 0 {
		t.Errorf("judged a step without the proxy: %+v", got)
	}
}

func TestResourceOf(t *testing.T) {
	for kind, want := range map[string]string{"Service": "services", "PersistentVolumeClaim": "persistentvolumeclaims", "Ingress": "ingresses",
		"NetworkPolicy": "networkpolicies", "Gateway": "gateways"} {
		if got := resourceOf(kind); got != want {
			t.Errorf("resourceOf(%s) = %s, want %s", kind, got, want)
		}
	}
}
