package testcrds

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestDirAbsent(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(repo, "pkg"))
	if _, err := Dir(); !errors.Is(err, ErrAbsent) {
		t.Errorf("Dir() err = %v, want ErrAbsent", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "shared", "crds", "op", "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "shared", "crds", "op", "crds", "a.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ops, err := Operators()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Name != "op" || len(ops[0].CRDs) != 1 || len(ops[0].Examples) != 0 {
		t.Errorf("Operators() = %+v", ops)
	}
}

func TestCRD(t *testing.T) {
	decode := func(doc string) apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		return c
	}
	c := decode(CRD("Lock", `
      type: object
      properties:
        spec: {type: object}
`))
	if c.Name != "locks.test.gauntlet.dev" || c.Spec.Names.Kind != "Lock" || c.Spec.Names.Plural != "locks" || len(c.Spec.Versions) != 1 {
		t.Fatalf("CRD = %+v, want locks.test.gauntlet.dev of kind Lock with one version", c)
	}
	v := c.Spec.Versions[0]
	if !v.Served || !v.Storage || v.Schema == nil || v.Schema.OpenAPIV3Schema.Properties["spec"].Type != "object" {
		t.Errorf("version = %+v, want served, stored, with the schema's object spec", v)
	}
	if v := decode(CRD("Lock", " \n")).Spec.Versions[0]; v.Schema != nil {
		t.Errorf("an empty schema gave %+v, want none", v.Schema)
	}
}
