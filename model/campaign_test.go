package model

import (
	"encoding/json"
	"testing"
	"time"
)

func TestBudgetJSON(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`"20m0s"`:         20 * time.Minute,
		`"8m0s,20m0s"`:    20 * time.Minute, // a merged summary of shards
		`1200000000000`:   20 * time.Minute, // result.json's time.Duration
		`""`:              0,
		`null`:            0,
		`"1h30m0s, 5m0s"`: 90 * time.Minute,
	} {
		var b Budget
		if err := json.Unmarshal([]byte(in), &b); err != nil || b.D() != want {
			t.Errorf("%s: %v (err %v), want %v", in, b.D(), err, want)
		}
	}
	if err := json.Unmarshal([]byte(`"soon"`), new(Budget)); err == nil {
		t.Error(`"soon" read as a budget`)
	}
	out, err := json.Marshal(struct {
		B Budget `json:"b,omitempty"`
		Z Budget `json:"z,omitempty"`
	}{B: Budget(20 * time.Minute)})
	if err != nil || string(out) != `{"b":"20m0s"}` {
		t.Errorf("marshal: %s %v", out, err)
	}
}

func TestFaultKinds(t *testing.T) {
	lasting := map[FaultKind]bool{FaultPodFailure: true, FaultPartition: true, FaultOperatorPartition: true}
	for _, k := range FaultKinds() {
		if !k.Known() || k.Lasting() != lasting[k] {
			t.Errorf("%s: known %v lasting %v", k, k.Known(), k.Lasting())
		}
	}
	if FaultKind("network-chaos").Known() {
		t.Error("an unknown kind is known")
	}
}

func TestViewFaultKinds(t *testing.T) {
	for _, k := range ViewFaultKinds() {
		if !k.View() || k.Known() || !k.Lasting() {
			t.Errorf("%s: view %v, known %v (all must not draw it), lasting %v (it holds until healed)", k, k.View(), k.Known(), k.Lasting())
		}
	}
	for _, k := range FaultKinds() {
		if k.View() {
			t.Errorf("%s is not a view kind", k)
		}
	}
}
