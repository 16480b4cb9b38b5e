package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

func loadCRD(t *testing.T, file string) *apiextensions.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatalf("%v (run operator/hack/generate.sh)", err)
	}
	v1 := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, v1); err != nil {
		t.Fatal(err)
	}
	apiextv1.SetObjectDefaults_CustomResourceDefinition(v1)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil); err != nil {
		t.Fatal(err)
	}
	return internal
}

// TestCRDsValid runs the API server's own CRD validation (schema structure,
// CEL compilation and cost estimation) on the generated CRDs.
func TestCRDsValid(t *testing.T) {
	for _, f := range []string{"valkey.gauntlet.dev_valkeyclusters.yaml", "valkey.gauntlet.dev_valkeybackups.yaml"} {
		crd := loadCRD(t, f)
		if errs := apivalidation.ValidateCustomResourceDefinition(context.Background(), crd); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs.ToAggregate())
		}
	}
}

// crdSchema is the (single) version's schema; the internal form keeps a schema
// shared by every version at the top level.
func crdSchema(crd *apiextensions.CustomResourceDefinition) *apiextensions.JSONSchemaProps {
	if crd.Spec.Validation != nil {
		return crd.Spec.Validation.OpenAPIV3Schema
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

type validator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func newValidator(t *testing.T, file string) *validator {
	t.Helper()
	crd := loadCRD(t, file)
	props := crdSchema(crd)
	s, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatal(err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	return &validator{structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// validate defaults and validates obj (and, for an update, against old) as the
// API server does, returning the error messages.
func (v *validator) validate(t *testing.T, obj, old string) []string {
	t.Helper()
	parse := func(s string) map[string]any {
		if s == "" {
			return nil
		}
		j, err := yaml.YAMLToJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		// As the API server decodes: integers stay int64.
		if err := utiljson.Unmarshal(j, &m); err != nil {
			t.Fatal(err)
		}
		structuraldefaulting.Default(m, v.structural)
		return m
	}
	o, p := parse(obj), parse(old)
	var errs field.ErrorList
	errs = append(errs, apiservervalidation.ValidateCustomResource(field.NewPath(""), o, v.schema)...)
	var oldObj any
	if p != nil {
		oldObj = p
	}
	celErrs, _ := v.cel.Validate(context.Background(), field.NewPath(""), v.structural, o, oldObj, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

const header = "apiVersion: valkey.gauntlet.dev/v1alpha1\nkind: ValkeyCluster\nmetadata: {name: c, namespace: n}\n"

func TestValkeyClusterValidation(t *testing.T) {
	v := newValidator(t, "valkey.gauntlet.dev_valkeyclusters.yaml")
	tests := []struct {
		name     string
		obj, old string
		want     string // substring of an error; "" means valid
	}{
		{"empty spec is valid (defaults)", header + "spec: {}", "", ""},
		{"replicas 0", header + "spec: {replicas: 0}", "", "should be greater than or equal to 1"},
		{"operator-owned key", header + "spec: {config: {port: '7000'}}", "", "key the operator owns"},
		{"bad key shape", header + "spec: {config: {MaxMemory: '1'}}", "", "lowercase"},
		{"ordinary keys", header + "spec: {config: {maxmemory: 100mb, databases: '32'}}", "", ""},
		{"maxUnavailable not below replicas", header + "spec: {replicas: 3, podDisruptionBudget: {maxUnavailable: 3}}", "", "less than replicas"},
		{"maxUnavailable below replicas", header + "spec: {replicas: 3, podDisruptionBudget: {maxUnavailable: 2}}", "", ""},
		{"auth without a Secret name", header + "spec: {auth: {passwordSecret: {key: password}}}", "", "passwordSecret needs the name"},
		{"auth with an empty Secret name", header + "spec: {auth: {passwordSecret: {name: '', key: password}}}", "", "passwordSecret needs the name"},
		{"auth with an empty key", header + "spec: {auth: {passwordSecret: {name: s, key: ''}}}", "", "passwordSecret needs the name"},
		{"auth with a Secret and a key", header + "spec: {auth: {passwordSecret: {name: s, key: password}}}", "", ""},
		{"auth Secret optional", header + "spec: {auth: {passwordSecret: {name: s, key: password, optional: true}}}", "", "optional: true is not supported"},
		{"auth Secret explicitly required", header + "spec: {auth: {passwordSecret: {name: s, key: password, optional: false}}}", "", ""},
		{"auth off", header + "spec: {auth: {}}", "", ""},
		{"TLS without Secret", header + "spec: {tls: {enabled: true}}", "", "secretName is required"},
		{"timeout above interval", header + "spec: {failover: {healthCheckInterval: 1s, timeout: 2s}}", "", "must not exceed"},
		{"downAfter below interval", header + "spec: {failover: {healthCheckInterval: 2s, downAfter: 1s}}", "", "at least"},
		{"bad duration", header + "spec: {failover: {downAfter: soon}}", "", "should match"},
		{"persistence.enabled immutable",
			header + "spec: {persistence: {enabled: false}}", header + "spec: {persistence: {enabled: true}}", "immutable"},
		{"size may grow",
			header + "spec: {persistence: {enabled: true, size: 2Gi}}", header + "spec: {persistence: {enabled: true, size: 1Gi}}", ""},
		{"size may not shrink",
			header + "spec: {persistence: {enabled: true, size: 512Mi}}", header + "spec: {persistence: {enabled: true, size: 1Gi}}", "may not shrink"},
		{"storage class immutable",
			header + "spec: {persistence: {enabled: true, storageClassName: b}}", header + "spec: {persistence: {enabled: true, storageClassName: a}}", "storageClassName is immutable"},
		{"restoreFrom only at creation",
			header + "spec: {restoreFrom: {backupName: b}}", header + "spec: {}", "only be set when"},
		{"restoreFrom at creation", header + "spec: {restoreFrom: {backupName: b}}", "", ""},
		{"other changes allowed",
			header + "spec: {replicas: 5, image: 'valkey/valkey:8.1.1', config: {maxmemory: 1gb}}", header + "spec: {replicas: 3}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := v.validate(t, tt.obj, tt.old)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if strings.Contains(e, tt.want) {
					return
				}
			}
			t.Fatalf("want an error containing %q, got %v", tt.want, errs)
		})
	}
}

func TestValkeyBackupValidation(t *testing.T) {
	v := newValidator(t, "valkey.gauntlet.dev_valkeybackups.yaml")
	h := "apiVersion: valkey.gauntlet.dev/v1alpha1\nkind: ValkeyBackup\nmetadata: {name: b, namespace: n}\n"
	if errs := v.validate(t, h+"spec: {clusterName: c}", ""); len(errs) > 0 {
		t.Fatalf("valid backup: %v", errs)
	}
	if errs := v.validate(t, h+"spec: {clusterName: d}", h+"spec: {clusterName: c}"); len(errs) == 0 || !strings.Contains(strings.Join(errs, ";"), "immutable") {
		t.Fatalf("spec change: %v", errs)
	}
	if errs := v.validate(t, h+"spec: {clusterName: ''}", ""); len(errs) == 0 {
		t.Fatal("empty clusterName accepted")
	}
}

// TestReservedKeysMatchCEL keeps the CRD's list of operator-owned keys and the
// operator's own list equal.
func TestReservedKeysMatchCEL(t *testing.T) {
	crd := loadCRD(t, "valkey.gauntlet.dev_valkeyclusters.yaml")
	cfg := crdSchema(crd).Properties["spec"].Properties["config"]
	var rule string
	for _, r := range cfg.XValidations {
		if strings.Contains(r.Rule, "'port'") {
			rule = r.Rule
		}
	}
	if rule == "" {
		t.Fatal("no reserved-keys rule on spec.config")
	}
	start, end := strings.Index(rule, "["), strings.Index(rule, "]")
	var inCEL []string
	for _, part := range strings.Split(rule[start+1:end], ",") {
		inCEL = append(inCEL, strings.Trim(strings.TrimSpace(part), "'"))
	}
	want := conf.Reserved()
	sort.Strings(inCEL)
	sort.Strings(want)
	if !slices.Equal(inCEL, want) {
		t.Fatalf("CEL list %v\n   conf list %v", inCEL, want)
	}
}

// TestSamplesValid validates the shipped samples against the CRDs.
func TestSamplesValid(t *testing.T) {
	for file, crd := range map[string]string{
		"valkeycluster.yaml": "valkey.gauntlet.dev_valkeyclusters.yaml",
		"valkeybackup.yaml":  "valkey.gauntlet.dev_valkeybackups.yaml",
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", file))
		if err != nil {
			t.Fatal(err)
		}
		if errs := newValidator(t, crd).validate(t, string(b), ""); len(errs) > 0 {
			t.Errorf("%s: %v", file, errs)
		}
	}
}
