package inputgen

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
)

func strimzi(b *testing.B) realCase {
	b.Helper()
	for _, rc := range realCases(b) {
		if strings.HasPrefix(rc.name, "strimzi-kafka/") {
			return rc
		}
	}
	b.Fatal("strimzi-kafka not found in ../shared/crds")
	return realCase{}
}

// BenchmarkPlanStrimzi measures plan generation (semantic inference, seed validation, example
// mining, every generator and scenario, validation of every candidate, coverage) for the largest
// real CRD, Strimzi's Kafka (2,170 schema nodes).
func BenchmarkPlanStrimzi(b *testing.B) {
	rc := strimzi(b)
	b.ReportAllocs()
	var cases int
	for b.Loop() {
		g, err := NewGenerator(rc.schema, rc.seed, Options{Seed: 1, Examples: rc.examples})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := g.Plan(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		cases = len(plan.TestCases)
	}
	b.ReportMetric(float64(cases), "testcases/op")
}

// BenchmarkLoadStrimzi measures reading the Strimzi CRD file into the property model.
func BenchmarkLoadStrimzi(b *testing.B) {
	ops, err := testcrds.Operators()
	if err != nil {
		b.Skipf("skipping: %v", err)
	}
	var file string
	for _, op := range ops {
		if op.Name == "strimzi-kafka" {
			file = op.CRDs[0]
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		crds, err := crd.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := crd.NewSchema(crds[0], ""); err != nil {
			b.Fatal(err)
		}
	}
}
