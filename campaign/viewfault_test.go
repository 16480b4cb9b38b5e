package campaign

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/view"
)

func TestParseViewFaultKinds(t *testing.T) {
	got, on, err := ParseFaultKinds([]string{FaultStaleRead, FaultPodKill, FaultCrashAfterWrite, FaultMissedEvent})
	if err != nil || !on || !reflect.DeepEqual(got, []string{FaultStaleRead, FaultPodKill, FaultCrashAfterWrite, FaultMissedEvent}) {
		t.Fatalf("ParseFaultKinds(view kinds) = %v, %v, %v", got, on, err)
	}
	all, _, _ := ParseFaultKinds([]string{"all"})
	for _, k := range all {
		if viewKind(k) {
			t.Errorf("all draws %s before the view kinds are proven", k)
		}
	}
}

func TestSupportedViewKinds(t *testing.T) {
	inj := fakeInjector{kinds: []faults.Kind{faults.ContainerCrash}}
	kinds := []string{FaultStaleRead, FaultMissedEvent, FaultCrashAfterWrite}
	ok, bad := supportedKinds(inj, kinds, false, true)
	if !reflect.DeepEqual(ok, kinds) || len(bad) != 0 {
		t.Errorf("with the proxy: supported %v, unsupported %q", ok, bad)
	}
	ok, bad = supportedKinds(inj, kinds, false, false)
	if len(ok) != 0 || len(bad) != 3 || !strings.Contains(bad[0], "--operator-view") {
		t.Errorf("without the proxy: supported %v, unsupported %q; want all three refused naming --operator-view", ok, bad)
	}
	if _, bad = supportedKinds(inj, kinds[:1], true, true); len(bad) != 1 || !strings.Contains(bad[0], "out of cluster") {
		t.Errorf("an operator out of cluster: unsupported %q", bad)
	}
}

func TestPlanViewFault(t *testing.T) {
	o := (&FaultOptions{}).withDefaults()
	kinds := []string{FaultStaleRead, FaultMissedEvent, FaultCrashAfterWrite}
	seen := map[string]bool{}
	for i := 0; i < 60; i++ {
		p := planFault(3, 0, i, o, kinds, true)
		if p.Role != "operator" || !p.Persistent || p.Hold != o.Hold || p.View == nil {
			t.Fatalf("drawn %+v: a view fault hits the operator, held while D is declared, with a target", p)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("drawn %+v: %v", p, err)
		}
		switch p.Kind {
		case FaultStaleRead:
			if p.View.Lag < 2e9 || p.View.Lag >= 6e9 {
				t.Errorf("stale read lag %v outside 2–6 s", p.View.Lag)
			}
		case FaultMissedEvent:
			if p.View.StatusOnly == (p.View.Type == "DELETED") {
				t.Errorf("missed event %+v: want deletes or status-only updates", *p.View)
			}
			seen["status"] = seen["status"] || p.View.StatusOnly
		case FaultCrashAfterWrite:
			if p.View.N < 1 || p.View.N > 3 {
				t.Errorf("crash after write #%d", p.View.N)
			}
		}
		seen[p.Kind] = true
	}
	for _, k := range append(kinds, "status") {
		if !seen[k] {
			t.Errorf("60 draws never drew %s", k)
		}
	}
	p1 := FaultPlan{Kind: FaultCrashAfterWrite}
	p2 := p1
	planView(rand.New(rand.NewPCG(1, 2)), &p1)
	planView(rand.New(rand.NewPCG(1, 2)), &p2)
	if !reflect.DeepEqual(p1, p2) {
		t.Errorf("one seed drew %+v and %+v", p1, p2)
	}
}

func TestEffectSummary(t *testing.T) {
	if got := effectSummary(FaultCrashAfterWrite, nil); !strings.Contains(got, "did not fire") {
		t.Errorf("an unfired crash: %q", got)
	}
	if got := effectSummary(FaultMissedEvent, map[string]int{"withheld": 2, "expired": 1}); got != "expired 1, withheld 2" {
		t.Errorf("effects: %q", got)
	}
	if got := effectSummary(string(model.FaultStaleRead), nil); !strings.Contains(got, "nothing perturbed") {
		t.Errorf("an idle lag: %q", got)
	}
}

func TestViewPlansFromReference(t *testing.T) {
	ref := view.Reference{
		Writes: []view.WriteMatch{{Verb: "create", Resource: "services"}},
		Reads:  []view.Resource{{Resource: "services"}},
		Events: []view.EventMatch{{Resource: "services", Type: "DELETED"}},
	}
	r := &runner{views: newViewPlans(), faultKinds: []string{FaultPodKill, FaultCrashAfterWrite, FaultMissedEvent}}
	if n := r.views.add(ref); n != 3 {
		t.Fatalf("queued %d plans, want 3", n)
	}
	if n := r.views.add(ref); n != 0 {
		t.Fatalf("a second reference with the same kinds queued %d plans, want none", n)
	}
	drawn := FaultPlan{Kind: FaultMissedEvent, Role: "operator", Persistent: true, Pick: 7, Hold: 8e9, View: &view.FaultTarget{StatusOnly: true}}
	p := r.viewPlanFor(drawn)
	if p.Kind != FaultCrashAfterWrite || p.View == nil || p.View.Resource != "services" || p.View.Verb != "create" || p.Role != "operator" || !p.Persistent || p.Hold != drawn.Hold || p.Pick != 7 {
		t.Fatalf("first plan %+v (%+v): want the crash after the service create, held like the drawn fault", p, p.View)
	}
	// The stale read is not drawn by this campaign: skipped, the missed delete next.
	if p = r.viewPlanFor(drawn); p.Kind != FaultMissedEvent || p.View.Type != "DELETED" || p.View.Resource != "services" {
		t.Fatalf("second plan %+v (%+v): want the missed service delete", p, p.View)
	}
	if p = r.viewPlanFor(drawn); !reflect.DeepEqual(p, drawn) {
		t.Fatalf("with the queue spent the drawn fault stands: %+v", p)
	}
	other := FaultPlan{Kind: FaultPodKill, Role: "pod"}
	r.views.add(view.Reference{Writes: []view.WriteMatch{{Verb: "delete", Resource: "pods"}}})
	if p = r.viewPlanFor(other); !reflect.DeepEqual(p, other) {
		t.Fatalf("a fault that is not of the view was replaced: %+v", p)
	}
	if p = (&runner{faultKinds: r.faultKinds}).viewPlanFor(drawn); !reflect.DeepEqual(p, drawn) {
		t.Fatalf("a replay (no plans) replaced the fault: %+v", p)
	}
}

func TestNeedsView(t *testing.T) {
	crash := &FaultPlan{Kind: FaultPodKill, Then: &FaultPlan{Kind: FaultCrashAfterWrite}}
	if !needsView([]ReproStep{{}, {Fault: crash}}) {
		t.Error("a reproducer whose second fault is a crash after a write needs the proxy")
	}
	if needsView([]ReproStep{{Fault: &FaultPlan{Kind: FaultPodKill}}, {}}) {
		t.Error("a pod kill needs no proxy")
	}
}

func TestParseFaultKindsView(t *testing.T) {
	all, on, err := ParseFaultKindsView([]string{"all"}, true)
	if err != nil || !on || len(all) != len(DefaultFaultKinds)+3 || !slices.Contains(all, FaultStaleRead) {
		t.Errorf("all with the view: %v, %v, %v; want the default kinds and the view's three", all, on, err)
	}
	if all, _, _ := ParseFaultKindsView([]string{"all"}, false); slices.ContainsFunc(all, viewKind) {
		t.Errorf("all without the view draws its kinds: %v", all)
	}
	if _, _, err := ParseFaultKindsView([]string{FaultPodKill, FaultMissedEvent}, false); err == nil || !strings.Contains(err.Error(), "--operator-view") {
		t.Errorf("a view kind without the view: %v; want an error naming --operator-view", err)
	}
	if got, on, err := ParseFaultKindsView([]string{"none"}, true); got != nil || on || err != nil {
		t.Errorf("none with the view: %v, %v, %v", got, on, err)
	}
}
