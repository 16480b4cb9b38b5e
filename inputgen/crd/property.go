package crd

import (
	"sort"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// Schema types as they appear in OpenAPI v3 schemas.
const (
	TypeObject  = "object"
	TypeArray   = "array"
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
)

// Rule is one x-kubernetes-validations CEL rule.
type Rule struct {
	Rule              string `json:"rule"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	FieldPath         string `json:"fieldPath,omitempty"`
	Reason            string `json:"reason,omitempty"`
	OptionalOldSelf   bool   `json:"optionalOldSelf,omitempty"`
	// Transition is true when the rule refers to oldSelf, i.e. constrains updates.
	Transition bool `json:"transition,omitempty"`
}

// Semantic is what inference found a property to mean: a Kubernetes core type the sub-schema matches
// structurally (with the property's field path inside that type) and/or a name hint for primitives.
type Semantic struct {
	// Type is the Go type the property's value corresponds to, e.g. "k8s.io/api/core/v1.Affinity"
	// for the matched root or for a field inside it ("k8s.io/api/core/v1.NodeAffinity").
	Type string `json:"type,omitempty"`
	// Root is the path of the property that matched Type's root structurally.
	Root string `json:"root,omitempty"`
	// Field is the path of this property inside the root type, e.g. "limits{*}" ("" for the root).
	Field string `json:"field,omitempty"`
	// Score is the structural similarity of the root match in [0,1].
	Score float64 `json:"score,omitempty"`
	// Hint is a primitive role inferred from names and formats: replicas, image, version,
	// storage-size, toggle, quantity, port, ...
	Hint string `json:"hint,omitempty"`
}

// Mapped reports whether anything was inferred.
func (s *Semantic) Mapped() bool { return s != nil && (s.Root != "" || s.Hint != "") }

// Property is one node of a CRD schema with its constraints.
type Property struct {
	Path        Path   `json:"path"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	// Required is true when the parent object lists this property as required.
	Required bool `json:"required,omitempty"`
	Nullable bool `json:"nullable,omitempty"`
	// Default is the schema default (nil when HasDefault is false).
	Default    any  `json:"default,omitempty"`
	HasDefault bool `json:"hasDefault,omitempty"`

	Format           string   `json:"format,omitempty"`
	Enum             []any    `json:"enum,omitempty"`
	Minimum          *float64 `json:"minimum,omitempty"`
	Maximum          *float64 `json:"maximum,omitempty"`
	ExclusiveMinimum bool     `json:"exclusiveMinimum,omitempty"`
	ExclusiveMaximum bool     `json:"exclusiveMaximum,omitempty"`
	MultipleOf       *float64 `json:"multipleOf,omitempty"`
	MinLength        *int64   `json:"minLength,omitempty"`
	MaxLength        *int64   `json:"maxLength,omitempty"`
	Pattern          string   `json:"pattern,omitempty"`
	MinItems         *int64   `json:"minItems,omitempty"`
	MaxItems         *int64   `json:"maxItems,omitempty"`
	UniqueItems      bool     `json:"uniqueItems,omitempty"`
	MinProperties    *int64   `json:"minProperties,omitempty"`
	MaxProperties    *int64   `json:"maxProperties,omitempty"`
	// RequiredFields lists the object's required property names.
	RequiredFields []string `json:"requiredFields,omitempty"`
	// HasCombinators is true when the schema carries allOf/anyOf/oneOf/not value validations
	// (other than the int-or-string anyOf), which only validation can check completely.
	HasCombinators bool `json:"hasCombinators,omitempty"`

	IntOrString           bool     `json:"intOrString,omitempty"`
	PreserveUnknownFields bool     `json:"preserveUnknownFields,omitempty"`
	EmbeddedResource      bool     `json:"embeddedResource,omitempty"`
	ListType              string   `json:"listType,omitempty"`
	ListMapKeys           []string `json:"listMapKeys,omitempty"`
	MapType               string   `json:"mapType,omitempty"`
	Rules                 []Rule   `json:"rules,omitempty"`

	// Fields are the object's declared properties, sorted by name.
	Fields []*Property `json:"-"`
	// Items is the schema of array elements.
	Items *Property `json:"-"`
	// Values is the schema of map values (additionalProperties with a schema).
	Values *Property `json:"-"`
	// AnyValues is true for additionalProperties: true.
	AnyValues bool `json:"anyValues,omitempty"`

	Parent     *Property                    `json:"-"`
	Structural *structuralschema.Structural `json:"-"`

	// Semantic is filled by semantic inference; nil until then.
	Semantic *Semantic `json:"semantic,omitempty"`
}

// Field returns the declared property name of an object, or nil.
func (p *Property) Field(name string) *Property {
	i := sort.Search(len(p.Fields), func(i int) bool { return p.Fields[i].Name() >= name })
	if i < len(p.Fields) && p.Fields[i].Name() == name {
		return p.Fields[i]
	}
	return nil
}

// Name is the property's own name: the field name, "[*]" for items or "{*}" for map values.
func (p *Property) Name() string {
	if len(p.Path) == 0 {
		return ""
	}
	s := p.Path[len(p.Path)-1]
	switch s.Kind {
	case Item:
		return "[*]"
	case Value:
		return "{*}"
	}
	return s.Key
}

// IsMap reports whether the property is an object whose values are described by additionalProperties.
func (p *Property) IsMap() bool { return p.Type == TypeObject && (p.Values != nil || p.AnyValues) }

// IsFreeForm reports whether the property accepts arbitrary content: an object (or untyped schema)
// with preserve-unknown-fields and no declared properties. A typed primitive with
// preserve-unknown-fields (type: string, as some generators emit for raw configuration) holds only
// values of its type and is not free-form.
func (p *Property) IsFreeForm() bool {
	return p.PreserveUnknownFields && (p.Type == "" || p.Type == TypeObject) && len(p.Fields) == 0 && p.Values == nil && p.Items == nil
}

// IsLeaf reports whether the property has no child properties in the schema.
func (p *Property) IsLeaf() bool { return len(p.Fields) == 0 && p.Items == nil && p.Values == nil }

// Walk calls fn for p and every descendant in depth-first order (fields, then items, then values);
// it stops descending below a property when fn returns false.
func (p *Property) Walk(fn func(*Property) bool) {
	if !fn(p) {
		return
	}
	for _, f := range p.Fields {
		f.Walk(fn)
	}
	if p.Items != nil {
		p.Items.Walk(fn)
	}
	if p.Values != nil {
		p.Values.Walk(fn)
	}
}

// Ancestors returns the chain from the root (exclusive) down to p's parent.
func (p *Property) Ancestors() []*Property {
	var out []*Property
	for q := p.Parent; q != nil && len(q.Path) > 0; q = q.Parent {
		out = append(out, q)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// InsideList reports whether the property lies below an array or a map.
func (p *Property) InsideList() bool {
	for _, s := range p.Path {
		if s.Kind != Field {
			return true
		}
	}
	return false
}
