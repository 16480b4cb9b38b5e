package crd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// FuzzLoadSchema feeds arbitrary bytes to the schema loader, both as a CRD file and as a bare
// openAPIV3Schema wrapped in a CRD, and runs what follows loading (property tree, paths, semantic
// inference, validator construction, and for small schemas a whole plan). Nothing may panic.
// Run it with: go test ./inputgen/crd -run XXX -fuzz FuzzLoadSchema -fuzztime 60s -fuzzminimizetime 3s
func FuzzLoadSchema(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "testdata", "gen", "*.crd.yaml"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer, minimum: 1}\n",
		"type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
		"type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      l: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, required: [k], properties: {k: {type: string}}}}\n",
		"type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-validations: [{rule: 'self.a > 1'}]\n    properties:\n      a: {type: integer}\n",
		"type: object\nproperties:\n  spec:\n    type: string\n    pattern: '^(a|b)+[0-9]{2,}$'\n    maxLength: 4\n",
		"type: object\nproperties:\n  spec:\n    x-kubernetes-int-or-string: true\n    anyOf: [{type: integer}, {type: string}]\n",
		"not yaml: [",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}

		if crds, err := crd.Parse(data); err == nil {
			for _, c := range crds {
				for _, v := range c.Spec.Versions {
					exercise(t, c, v.Name)
				}
			}
		}
		var props apiextensionsv1.JSONSchemaProps
		if err := yaml.Unmarshal(data, &props); err != nil {
			return
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		c.Name = "fuzzes.test.gauntlet.dev"
		c.Spec.Group = "test.gauntlet.dev"
		c.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: "Fuzz", Plural: "fuzzes"}
		c.Spec.Scope = apiextensionsv1.NamespaceScoped
		c.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &props},
		}}
		exercise(t, c, "v1")
	})
}

func exercise(t *testing.T, c *apiextensionsv1.CustomResourceDefinition, version string) {
	s, err := crd.NewSchema(c, version)
	if err != nil {
		return
	}
	for _, p := range s.Properties() {
		str := p.Path.String()
		q, err := crd.ParsePath(str)
		if err != nil || q.String() != str {
			t.Fatalf("path %q does not round-trip: %v", str, err)
		}
		if s.Lookup(str) == nil {
			t.Fatalf("property %q not found by its own path", str)
		}
	}
	v, err := inputgen.NewLocalValidator(s)
	if err != nil {
		return
	}
	seed := map[string]any{
		"apiVersion": s.APIVersion(),
		"kind":       s.Kind,
		"metadata":   map[string]any{"name": "fuzz"},
	}
	_ = v.ValidateCreate(context.Background(), seed)
	// Whole plans are costly under coverage instrumentation: only for small schemas.
	if len(s.Properties()) > 25 {
		return
	}
	g, err := inputgen.NewGenerator(s, seed, inputgen.Options{Seed: 1, Workers: 1, MaxAttempts: 1})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	plan, err := g.Plan(ctx)
	if err != nil {
		return
	}
	for _, tc := range plan.TestCases {
		if _, err := tc.Apply(plan.Base); err != nil {
			t.Fatalf("test case %s does not apply to its own base: %v", tc.ID, err)
		}
	}
}
