package campaign

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen"
)

func TestOrderCasesBreadth(t *testing.T) {
	var cases []*inputgen.TestCase
	add := func(prop string, n int) {
		for i := range n {
			cases = append(cases, &inputgen.TestCase{ID: fmt.Sprintf("%s#%d", prop, i), Property: prop})
		}
	}
	// Alphabetical, as the plan is: affinity dominates it.
	add("spec.affinity", 2)
	add("spec.affinity.nodeAffinity", 40)
	add("spec.auth", 2)
	add("spec.config", 3)
	add("spec.exporter", 2)
	add("spec.replicas", 2)
	add("spec.scheduling.tolerations", 30)
	add("spec.service", 1)

	got, err := orderCases(cases, OrderBreadth, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("%d cases out, %d in", len(got), len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range got {
		if seen[tc.ID] {
			t.Fatalf("%s twice", tc.ID)
		}
		seen[tc.ID] = true
	}
	// The first 7 cases touch all 7 top-level properties, heavy ones first.
	tops := map[string]bool{}
	for _, tc := range got[:7] {
		tops[topLevel(tc.Property)] = true
	}
	if len(tops) != 7 {
		t.Fatalf("the first 7 cases touch %d top-level properties: %v", len(tops), tops)
	}
	if topLevel(got[0].Property) != "replicas" || topLevel(got[1].Property) != "config" || topLevel(got[2].Property) != "auth" {
		t.Fatalf("operation-heavy properties do not come first: %s, %s, %s", got[0].ID, got[1].ID, got[2].ID)
	}
	// Within affinity, the shallow property comes before the deep one.
	var aff []string
	for _, tc := range got {
		if topLevel(tc.Property) == "affinity" {
			aff = append(aff, tc.Property)
		}
	}
	if aff[0] != "spec.affinity" || aff[1] != "spec.affinity.nodeAffinity" {
		t.Fatalf("affinity order starts %v", aff[:2])
	}
	// Same seed, same order; another seed may differ; plan order unchanged.
	again, _ := orderCases(cases, OrderBreadth, 7, 0)
	if !reflect.DeepEqual(ids(got), ids(again)) {
		t.Fatal("the same seed gave another order")
	}
	plan, _ := orderCases(cases, OrderPlan, 7, 0)
	if !reflect.DeepEqual(ids(plan), ids(cases)) {
		t.Fatal("plan order changed")
	}
	if _, err := orderCases(cases, "random", 7, 0); err == nil {
		t.Fatal("an unknown order was accepted")
	}
}

func ids(cs []*inputgen.TestCase) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestOrderBudgetAware reproduces the sharded operator's first night: the
// breadth order used to open with spec.replicas beyond capacity (3,003 pods).
// The first round must give every top-level property a valid case that
// changes something, no misoperation or boundary case may come before it ends,
// and the cases beyond the cluster's capacity come last.
func TestOrderBudgetAware(t *testing.T) {
	mk := func(id string, label inputgen.Label, pods int, effective ...string) *inputgen.TestCase {
		prop, gen, _ := strings.Cut(id, "#")
		return &inputgen.TestCase{ID: id, Property: prop, Generator: gen, Label: label, Pods: pods, Effective: effective, Covers: []string{prop}}
	}
	v, m := inputgen.Valid, inputgen.Misoperation
	cases := []*inputgen.TestCase{
		mk("spec.replicas#replicas/beyond-capacity", m, 3003, "spec.replicas"),
		mk("spec.replicas#number/max", m, 3003, "spec.replicas"),
		mk("spec.replicas#number/min", v, 3, "spec.replicas"),
		mk("spec.replicas#replicas/scale-up-down", v, 9, "spec.replicas"),
		mk("spec.nodes#replicas/beyond-capacity", m, 1000, "spec.nodes"),
		mk("spec.nodes#number/min", v, 1, "spec.nodes"),
		mk("spec.nodes#replicas/scale-up-down", v, 5, "spec.nodes"),
		mk("spec.image#string/generated", m, 3, "spec.image"),
		mk("spec.image#image/upgrade", v, 3, "spec.image"),
		mk("spec.tls#object/add", v, 3, "spec.tls", "spec.tls.enabled"),
		mk("spec.tls.enabled#boolean/flip", v, 3, "spec.tls.enabled"),
		mk("spec.exporter#object/remove", v, 3, "spec.exporter"),
		mk("spec.exporter.image#string/pool", v, 3, "spec.exporter.image"),
		mk("spec.storage#storage/exceed", m, 3, "spec.storage"),
		mk("spec.storage#storage/grow", v, 3, "spec.storage"),
		// Only a boundary case and a misoperation: no opening case of its own.
		mk("spec.grace#number/min", v, 3, "spec.grace"),
		mk("spec.grace#string/generated", m, 3, "spec.grace"),
	}
	tops := map[string]bool{}
	for _, tc := range cases {
		tops[topLevel(tc.Property)] = true
	}
	for seed := int64(1); seed <= 5; seed++ {
		got, err := orderCases(cases, OrderBreadth, seed, 24)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(cases) {
			t.Fatalf("%d cases out, %d in", len(got), len(cases))
		}
		opened := map[string]bool{}
		for i, tc := range got[:len(tops)] {
			if tc.Label != inputgen.Valid || IsBoundary(tc) {
				t.Errorf("seed %d: case %d of the first round is %s %s", seed, i+1, tc.Label, tc.ID)
			}
			opened[topLevel(tc.Property)] = true
		}
		if len(opened) < len(tops)-1 { // spec.grace has no opening case
			t.Errorf("seed %d: the first round opens %d of %d top-level properties: %v", seed, len(opened), len(tops), ids(got[:len(tops)]))
		}
		if opened["exporter"] && got[0].Generator == "object/remove" {
			t.Errorf("seed %d: a removal opens the order", seed)
		}
		tail := ids(got[len(got)-3:])
		for _, id := range tail {
			if tc := find(got, id); tc.Pods <= 24 {
				t.Errorf("seed %d: the last cases are %v, want the three beyond capacity", seed, tail)
			}
		}
		for _, tc := range got[:len(got)-3] {
			if tc.Pods > 24 {
				t.Errorf("seed %d: %s (%d pods) runs before the end", seed, tc.ID, tc.Pods)
			}
		}
	}
	held := HeldBackCases(&inputgen.Plan{PodCapacity: 24}, cases)
	if len(held) != 3 || !strings.Contains(held[0].Reason, "3003 pods") {
		t.Fatalf("held back: %+v", held)
	}
}

func find(cs []*inputgen.TestCase, id string) *inputgen.TestCase {
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	return nil
}
