package campaign

import (
	"fmt"
	"reflect"
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
