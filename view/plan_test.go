package view

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

// reference is a step's record: the operator watched its CR and StatefulSets,
// saw the CR change, got the Service, created a ConfigMap, updated the
// StatefulSet and wrote the CR's status (twice); its Events, Lease and a
// write in another namespace are bookkeeping or not the step's.
const reference = `{"seq":1,"what":"watch-event","verb":"watch","group":"valkey.gauntlet.dev","resource":"valkeyclusters","namespace":"ns","name":"c","type":"MODIFIED","action":"passed"}
{"seq":2,"what":"request","verb":"get","resource":"services","namespace":"ns","name":"c","status":200,"action":"passed"}
{"seq":3,"what":"request","verb":"update","group":"coordination.k8s.io","resource":"leases","namespace":"op","name":"l","status":200,"action":"passed"}
{"seq":4,"what":"request","verb":"create","resource":"configmaps","namespace":"ns","name":"c-conf","status":201,"action":"passed"}
{"seq":5,"what":"request","verb":"create","resource":"events","namespace":"ns","status":201,"action":"passed"}
{"seq":6,"what":"watch-event","verb":"watch","group":"apps","resource":"statefulsets","namespace":"ns","name":"c","type":"MODIFIED","action":"delayed"}
{"seq":7,"what":"watch-event","verb":"watch","resource":"pods","namespace":"other","name":"p","type":"DELETED","action":"passed"}
{"seq":8,"what":"request","verb":"update","group":"apps","resource":"statefulsets","namespace":"ns","name":"c","status":200,"action":"passed"}
{"seq":9,"what":"request","verb":"create","resource":"services","namespace":"ns","name":"c","status":409,"action":"passed"}
{"seq":10,"what":"request","verb":"update","group":"valkey.gauntlet.dev","resource":"valkeyclusters","subresource":"status","namespace":"ns","name":"c","status":200,"action":"passed"}
{"seq":11,"what":"request","verb":"update","group":"valkey.gauntlet.dev","resource":"valkeyclusters","subresource":"status","namespace":"ns","name":"c","status":200,"action":"passed"}
{"seq":12,"what":"watch-event","verb":"watch","resource":"pods","namespace":"ns","name":"p","type":"DELETED","action":"passed"}
{"seq":13,"what":"request","verb":"create","resource":"configmaps","namespace":"other","status":201,"action":"passed"}
`

func TestAnalyzeAndPlans(t *testing.T) {
	recs, err := ReadRecord(strings.NewReader(reference))
	if err != nil {
		t.Fatal(err)
	}
	ref := Analyze(recs, "ns")
	wantW := []WriteMatch{
		{Verb: "create", Resource: "configmaps"},
		{Verb: "update", Group: "apps", Resource: "statefulsets"},
		{Verb: "update", Group: "valkey.gauntlet.dev", Resource: "valkeyclusters", Subresource: "status"},
	}
	if !reflect.DeepEqual(ref.Writes, wantW) {
		t.Errorf("writes %+v, want %+v (a refused create, events, leases and other namespaces left out)", ref.Writes, wantW)
	}
	wantR := []Resource{{Group: "valkey.gauntlet.dev", Resource: "valkeyclusters"}, {Resource: "services"}, {Group: "apps", Resource: "statefulsets"}}
	if !reflect.DeepEqual(ref.Reads, wantR) {
		t.Errorf("reads %+v, want %+v (the pod delete came after the last write)", ref.Reads, wantR)
	}
	wantE := []EventMatch{{Group: "valkey.gauntlet.dev", Resource: "valkeyclusters", Type: "MODIFIED"}, {Group: "apps", Resource: "statefulsets", Type: "MODIFIED"}}
	if !reflect.DeepEqual(ref.Events, wantE) {
		t.Errorf("events %+v, want %+v", ref.Events, wantE)
	}

	plans := Plans(ref, 0)
	if len(plans) != 8 {
		t.Fatalf("%d plans, want 3 crashes + 3 stale views + 2 missed events: %v", len(plans), plans)
	}
	kinds := []model.FaultKind{plans[0].Kind, plans[1].Kind, plans[2].Kind}
	if !reflect.DeepEqual(kinds, []model.FaultKind{model.FaultCrashAfterWrite, model.FaultStaleRead, model.FaultMissedEvent}) {
		t.Errorf("the first three plans are %v: want one of each kind first", kinds)
	}
	seen := map[string]bool{}
	for _, p := range plans {
		if seen[p.Key()] {
			t.Errorf("plan %s twice", p)
		}
		seen[p.Key()] = true
		if _, err := RulesFor(p.Kind, p.Target); err != nil {
			t.Errorf("plan %s: %v", p, err)
		}
	}
	if c := plans[0].Target; c.Verb != "create" || c.Resource != "configmaps" || c.N != 1 {
		t.Errorf("first crash %+v, want after the first config map create", c)
	}
	if s := plans[1].Target; s.Resource != "valkeyclusters" || s.Lag != PlanLag {
		t.Errorf("first stale view %+v", s)
	}
	if got := Plans(ref, 4); len(got) != 4 || !reflect.DeepEqual(got, plans[:4]) {
		t.Errorf("bounded plans %v, want the first four of %v", got, plans)
	}
	if !Analyze(recs, "elsewhere").Empty() {
		t.Error("a namespace the operator did not write in has a reference")
	}
	if _, err := ReadRecord(strings.NewReader("{\"seq\":1}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad record line: %v", err)
	}
}

func TestLagOnly(t *testing.T) {
	r, err := RulesFor(model.FaultStaleRead, FaultTarget{Group: "apps", Resource: "statefulsets"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.lagFor(info(t, "GET", "/apis/apps/v1/namespaces/ns/statefulsets")); got != r.Lag || got == 0 {
		t.Errorf("lag of the chosen resource %v, want %v", got, r.Lag)
	}
	if got := r.lagFor(info(t, "GET", "/api/v1/namespaces/ns/pods")); got != 0 {
		t.Errorf("lag of another resource %v, want none", got)
	}
	all, _ := RulesFor(model.FaultStaleRead, FaultTarget{})
	if got := all.lagFor(info(t, "GET", "/api/v1/namespaces/ns/pods")); got != all.Lag {
		t.Errorf("an unnarrowed lag does not reach pods: %v", got)
	}
}
