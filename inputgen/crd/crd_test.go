package crd

import (
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
)

const twoCRDs = `
# a bundle with a non-CRD document
apiVersion: v1
kind: Namespace
metadata:
  name: ops
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.gauntlet.dev
spec:
  group: test.gauntlet.dev
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              old: {type: string}
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - rule: self.size >= self.minSize
              message: size below minSize
            - rule: self.size >= oldSelf.size
              message: size may only grow
            properties:
              size: {type: integer, format: int32, minimum: 1, maximum: 9, exclusiveMaximum: true, multipleOf: 1}
              minSize: {type: integer, default: 1}
              ratio: {type: number, minimum: 0, exclusiveMinimum: true}
              name: {type: string, minLength: 1, maxLength: 10, pattern: '^[a-z]+$', nullable: true}
              mode: {type: string, enum: [a, b]}
              when: {type: string, format: date-time}
              ports:
                type: array
                minItems: 1
                maxItems: 4
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
              labels:
                type: object
                minProperties: 1
                maxProperties: 5
                x-kubernetes-map-type: granular
                additionalProperties: {type: string}
              free:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              any:
                type: object
                additionalProperties: true
              port:
                x-kubernetes-int-or-string: true
                anyOf: [{type: integer}, {type: string}]
              choice:
                type: object
                oneOf: [{required: [first]}, {required: [second]}]
                properties:
                  first: {type: string}
                  second: {type: string}
              pod:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas: {type: integer}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.test.gauntlet.dev
spec:
  group: test.gauntlet.dev
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {on: {type: boolean}}}
`

func TestParseAndSelect(t *testing.T) {
	crds, err := Parse([]byte(twoCRDs))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 2 {
		t.Fatalf("got %d CRDs, want 2 (the Namespace is skipped)", len(crds))
	}
	tests := []struct {
		kind, want string
		err        error
	}{
		{"Widget", "widgets.test.gauntlet.dev", nil},
		{"widgets", "widgets.test.gauntlet.dev", nil},
		{"wd", "widgets.test.gauntlet.dev", nil},
		{"gadgets.test.gauntlet.dev", "gadgets.test.gauntlet.dev", nil},
		{"", "", ErrAmbiguousCRD},
		{"Doohickey", "", ErrKindNotFound},
	}
	for _, tt := range tests {
		c, err := Select(crds, tt.kind)
		if !errors.Is(err, tt.err) {
			t.Errorf("Select(%q): err %v, want %v", tt.kind, err, tt.err)
			continue
		}
		if err == nil && c.Name != tt.want {
			t.Errorf("Select(%q) = %s, want %s", tt.kind, c.Name, tt.want)
		}
	}
	if c, err := SelectByGVK(crds, "test.gauntlet.dev/v1", "Gadget"); err != nil || c.Name != "gadgets.test.gauntlet.dev" {
		t.Errorf("SelectByGVK = %v, %v", c, err)
	}
}

func TestVersions(t *testing.T) {
	crds, err := Parse([]byte(twoCRDs))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		version, want string
		err           error
	}{
		{"", "v1", nil}, // storage version
		{"v1alpha1", "v1alpha1", nil},
		{"v2", "", ErrVersionNotFound},
	}
	for _, tt := range tests {
		s, err := NewSchema(crds[0], tt.version)
		if !errors.Is(err, tt.err) {
			t.Errorf("NewSchema(%q): err %v, want %v", tt.version, err, tt.err)
			continue
		}
		if err == nil && s.Version != tt.want {
			t.Errorf("NewSchema(%q).Version = %s, want %s", tt.version, s.Version, tt.want)
		}
	}
}

func TestPropertyModel(t *testing.T) {
	crds, err := Parse([]byte(twoCRDs))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSchema(crds[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Namespaced || !s.StatusSubresource || s.Scale == nil || s.APIVersion() != "test.gauntlet.dev/v1" {
		t.Errorf("schema metadata wrong: %+v", s)
	}
	get := func(path string) *Property {
		t.Helper()
		p := s.Lookup(path)
		if p == nil {
			t.Fatalf("property %s missing", path)
		}
		return p
	}
	if p := get("spec.size"); !p.Required || p.Format != "int32" || *p.Minimum != 1 || *p.Maximum != 9 || !p.ExclusiveMaximum || *p.MultipleOf != 1 {
		t.Errorf("spec.size constraints: %+v", p)
	}
	if p := get("spec.minSize"); !p.HasDefault || p.Default != int64(1) {
		t.Errorf("spec.minSize default = %#v", p.Default)
	}
	if p := get("spec.ratio"); !p.ExclusiveMinimum {
		t.Error("spec.ratio exclusiveMinimum lost")
	}
	if p := get("spec.name"); !p.Nullable || *p.MinLength != 1 || *p.MaxLength != 10 || p.Pattern != "^[a-z]+$" {
		t.Errorf("spec.name constraints: %+v", p)
	}
	if p := get("spec.mode"); len(p.Enum) != 2 || p.Enum[0] != "a" {
		t.Errorf("spec.mode enum = %v", p.Enum)
	}
	if p := get("spec.when"); p.Format != "date-time" {
		t.Errorf("spec.when format = %q", p.Format)
	}
	if p := get("spec.ports"); p.ListType != "map" || len(p.ListMapKeys) != 1 || *p.MinItems != 1 || *p.MaxItems != 4 || p.Items == nil {
		t.Errorf("spec.ports: %+v", p)
	}
	if p := get("spec.ports[*].name"); !p.Required || !p.InsideList() {
		t.Errorf("spec.ports[*].name: %+v", p)
	}
	if p := get("spec.labels"); !p.IsMap() || p.MapType != "granular" || *p.MinProperties != 1 || *p.MaxProperties != 5 || p.Values.Type != TypeString {
		t.Errorf("spec.labels: %+v", p)
	}
	if p := get("spec.labels{*}"); p.Parent != get("spec.labels") {
		t.Error("spec.labels{*} parent wrong")
	}
	if p := get("spec.free"); !p.IsFreeForm() {
		t.Error("spec.free is not free-form")
	}
	if p := get("spec.any"); !p.AnyValues || !p.IsMap() {
		t.Error("spec.any is not additionalProperties: true")
	}
	if p := get("spec.port"); !p.IntOrString || p.HasCombinators {
		t.Errorf("spec.port: %+v", p)
	}
	if p := get("spec.choice"); !p.HasCombinators {
		t.Error("spec.choice oneOf not recorded")
	}
	if p := get("spec.pod"); !p.EmbeddedResource || !p.PreserveUnknownFields {
		t.Error("spec.pod embedded resource lost")
	}
	rules := get("spec").Rules
	if len(rules) != 2 || rules[0].Transition || !rules[1].Transition || rules[1].Message != "size may only grow" {
		t.Errorf("spec rules = %+v", rules)
	}
	for _, p := range s.Properties() {
		if p.Path[0].Key == "status" || p.Path[0].Key == "metadata" {
			t.Errorf("%s listed as a changeable property", p.Path)
		}
	}
	if n := len(s.Properties()); n != 19 {
		t.Errorf("got %d properties, want 19", n)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		err       error
		contains  string
	}{
		{"no CRD", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", ErrNoCRD, ""},
		{"empty", "# nothing\n---\n", ErrNoCRD, ""},
		{"v1beta1", "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n", ErrUnsupportedCRDVersion, ""},
		{"unknown field", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {group: g, bogus: 1}\n", nil, "unknown field"},
		{"unknown field in a property schema", testcrds.CRD("X", `
        type: object
        properties:
          spec: {type: object, maxitems: 3}
`), nil, "unknown field"},
		{"duplicate key", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nmetadata: {name: y}\n", nil, "already set"},
		{"bad YAML", "apiVersion: [\n", nil, "YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("no error")
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			if tt.contains != "" && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("err = %v, want it to mention %q", err, tt.contains)
			}
		})
	}
}

func TestNotStructural(t *testing.T) {
	tests := []struct {
		name, schema, contains string
	}{
		{"missing type", `
        type: object
        properties:
          spec:
            properties:
              size: {type: integer}`, "properties[spec].type"},
		{"type in anyOf", `
        type: object
        properties:
          spec:
            type: object
            anyOf: [{type: string}]`, "anyOf"},
		{"no schema", "", "no openAPIV3Schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crds, err := Parse([]byte(testcrds.CRD("Thing", tt.schema)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewSchema(crds[0], "")
			if !errors.Is(err, ErrNotStructural) {
				t.Fatalf("err = %v, want ErrNotStructural", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("err = %v, want it to name %q", err, tt.contains)
			}
		})
	}
}

func TestPathRoundTrip(t *testing.T) {
	tests := []Path{
		{{Kind: Field, Key: "spec"}, {Kind: Field, Key: "tolerations"}, {Kind: Item}, {Kind: Field, Key: "key"}},
		{{Kind: Field, Key: "spec"}, {Kind: Field, Key: "config"}, {Kind: Value}},
		{{Kind: Field, Key: "spec"}, {Kind: Field, Key: "net.port"}, {Kind: Field, Key: "x"}},
		{{Kind: Field, Key: "spec"}, {Kind: Item}, {Kind: Item}},
		{{Kind: Field, Key: `we"ird [name]`}},
	}
	for _, p := range tests {
		s := p.String()
		q, err := ParsePath(s)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", s, err)
			continue
		}
		if q.String() != s || len(q) != len(p) {
			t.Errorf("round trip %q -> %q", s, q.String())
		}
	}
	if got := tests[0].String(); got != "spec.tolerations[*].key" {
		t.Errorf("String = %q", got)
	}
	if got := tests[2].String(); got != `spec["net.port"].x` {
		t.Errorf("String = %q", got)
	}
	// The text form is jsonv's: "*" reads as {*}, a JSON pointer as field names.
	for in, want := range map[string]Path{
		"spec.*":           {{Kind: Field, Key: "spec"}, {Kind: Value}},
		"/spec/a.b":        {{Kind: Field, Key: "spec"}, {Kind: Field, Key: "a.b"}},
		`spec["*"]["a b"]`: {{Kind: Field, Key: "spec"}, {Kind: Field, Key: "*"}, {Kind: Field, Key: "a b"}},
	} {
		got, err := ParsePath(in)
		if err != nil || !got.HasPrefix(want) || len(got) != len(want) {
			t.Errorf("ParsePath(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{".spec", "spec.", `spec["x`, "spec..x", "spec[0]", "spec.**", "spec.a*", "spec[name=x]", "spec[a.b]"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}
