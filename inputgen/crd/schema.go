package crd

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrNotStructural is returned when a CRD version has no schema or its schema is not structural, so
// the API server could neither prune nor validate objects with it.
var ErrNotStructural = errors.New("CRD schema is not structural (see https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema): give every property a type and keep combinators free of types, defaults and descriptions")

// ErrVersionNotFound is returned when the requested version is not declared by the CRD.
var ErrVersionNotFound = errors.New("CRD version not found")

// ErrKindNotFound is returned when no CRD in a file serves the requested kind.
var ErrKindNotFound = errors.New("no CRD serves the requested kind")

// ErrAmbiguousCRD is returned when a file holds several CRDs and none was chosen.
var ErrAmbiguousCRD = errors.New("file holds several CRDs: choose one by kind")

// Schema is the model of one version of one CRD.
type Schema struct {
	// CRD is the decoded definition the schema comes from.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Name is the CRD's metadata.name, e.g. kafkas.kafka.strimzi.io.
	Name    string
	Group   string
	Version string
	Kind    string
	Plural  string
	// Namespaced is true for namespace-scoped resources.
	Namespaced bool
	// StatusSubresource is true when the version enables the status subresource (status is then
	// ignored on create and update of the main resource).
	StatusSubresource bool
	// Scale is the scale subresource of the version, if any.
	Scale *apiextensionsv1.CustomResourceSubresourceScale

	// Root is the whole object schema (type object with apiVersion, kind, metadata, spec, ...).
	Root *Property
	// Structural is the structural schema with defaults pruned, exactly as the API server holds it.
	Structural *structuralschema.Structural
	// Internal is the internal-version schema the API server's validators are built from.
	Internal *apiextensions.JSONSchemaProps

	props  []*Property
	byPath map[string]*Property

	annotateOnce sync.Once
	annotation   any
}

// Annotate runs compute once per schema and returns its result on every call. Passes that write
// into the properties (semantic inference) go through it, so concurrent users of one schema neither
// race nor repeat the work.
func (s *Schema) Annotate(compute func() any) any {
	s.annotateOnce.Do(func() { s.annotation = compute() })
	return s.annotation
}

// APIVersion returns group/version.
func (s *Schema) APIVersion() string { return s.Group + "/" + s.Version }

// Properties returns every property a desired state can change, depth first: everything below the
// root except apiVersion, kind, metadata and status (and the subtree of each).
func (s *Schema) Properties() []*Property { return s.props }

// Lookup returns the property at a path in its string form, or nil.
func (s *Schema) Lookup(path string) *Property { return s.byPath[path] }

// LookupPath returns the property at p, or nil.
func (s *Schema) LookupPath(p Path) *Property { return s.byPath[p.String()] }

// Select picks one CRD from crds: the one whose kind, plural, singular, short name or full name
// equals kind (case-insensitive); when kind is empty, the only CRD.
func Select(crds []*apiextensionsv1.CustomResourceDefinition, kind string) (*apiextensionsv1.CustomResourceDefinition, error) {
	if kind == "" {
		if len(crds) == 1 {
			return crds[0], nil
		}
		return nil, fmt.Errorf("%w (kinds: %s)", ErrAmbiguousCRD, strings.Join(kinds(crds), ", "))
	}
	for _, c := range crds {
		n := c.Spec.Names
		cands := append([]string{n.Kind, n.Plural, n.Singular, c.Name}, n.ShortNames...)
		for _, cand := range cands {
			if cand != "" && strings.EqualFold(cand, kind) {
				return c, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: %q (kinds in file: %s)", ErrKindNotFound, kind, strings.Join(kinds(crds), ", "))
}

// SelectByGVK picks the CRD whose group and kind match an object's apiVersion and kind.
func SelectByGVK(crds []*apiextensionsv1.CustomResourceDefinition, apiVersion, kind string) (*apiextensionsv1.CustomResourceDefinition, error) {
	group := apiVersion
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	for _, c := range crds {
		if c.Spec.Group == group && c.Spec.Names.Kind == kind {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: %s %s (kinds in file: %s)", ErrKindNotFound, apiVersion, kind, strings.Join(kinds(crds), ", "))
}

func kinds(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	out := make([]string, 0, len(crds))
	for _, c := range crds {
		out = append(out, c.Spec.Names.Kind)
	}
	return out
}

// NewSchema builds the model of one version of c: version "" means the storage version.
func NewSchema(c *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	v, err := pickVersion(c, version)
	if err != nil {
		return nil, err
	}
	val := v.Schema
	if val == nil || val.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("CRD %s version %s has no openAPIV3Schema: %w", c.Name, v.Name, ErrNotStructural)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, fmt.Errorf("CRD %s version %s: convert schema to internal version: %w", c.Name, v.Name, err)
	}
	ss, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: %v: %w", c.Name, v.Name, err, ErrNotStructural)
	}
	fldPath := field.NewPath("spec", "versions").Key(v.Name).Child("schema", "openAPIV3Schema")
	if errs := structuralschema.ValidateStructural(fldPath, ss); len(errs) > 0 {
		return nil, fmt.Errorf("CRD %s version %s: %s: %w", c.Name, v.Name, summarize(errs, 8), ErrNotStructural)
	}
	ss = ss.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(ss); err != nil {
		return nil, fmt.Errorf("CRD %s version %s: prune defaults: %w", c.Name, v.Name, err)
	}
	s := &Schema{
		CRD:        c,
		Name:       c.Name,
		Group:      c.Spec.Group,
		Version:    v.Name,
		Kind:       c.Spec.Names.Kind,
		Plural:     c.Spec.Names.Plural,
		Namespaced: c.Spec.Scope == apiextensionsv1.NamespaceScoped,
		Structural: ss,
		Internal:   internal.OpenAPIV3Schema,
		byPath:     map[string]*Property{},
	}
	if v.Subresources != nil {
		s.StatusSubresource = v.Subresources.Status != nil
		s.Scale = v.Subresources.Scale
	}
	s.Root = build(ss, nil, nil, false)
	s.Root.Walk(func(p *Property) bool {
		if len(p.Path) == 0 {
			return true
		}
		s.byPath[p.Path.String()] = p
		if len(p.Path) == 1 {
			switch p.Path[0].Key {
			case "apiVersion", "kind", "metadata", "status":
				return false
			}
		}
		s.props = append(s.props, p)
		return true
	})
	return s, nil
}

func pickVersion(c *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensionsv1.CustomResourceDefinitionVersion, error) {
	var names []string
	for i := range c.Spec.Versions {
		v := &c.Spec.Versions[i]
		names = append(names, v.Name)
		if version == "" && v.Storage {
			return v, nil
		}
		if version != "" && v.Name == version {
			return v, nil
		}
	}
	if version == "" {
		if len(c.Spec.Versions) == 1 {
			return &c.Spec.Versions[0], nil
		}
		return nil, fmt.Errorf("CRD %s marks no version as storage: choose one of %s: %w", c.Name, strings.Join(names, ", "), ErrVersionNotFound)
	}
	return nil, fmt.Errorf("CRD %s has no version %q (versions: %s): %w", c.Name, version, strings.Join(names, ", "), ErrVersionNotFound)
}

func summarize(errs field.ErrorList, max int) string {
	var msgs []string
	for i, e := range errs {
		if i == max {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(errs)-max))
			break
		}
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}

var oldSelfRE = regexp.MustCompile(`\boldSelf\b`)

func build(s *structuralschema.Structural, path Path, parent *Property, required bool) *Property {
	p := &Property{
		Path:                  path,
		Type:                  s.Type,
		Description:           s.Description,
		Required:              required,
		Nullable:              s.Nullable,
		IntOrString:           s.XIntOrString,
		PreserveUnknownFields: s.XPreserveUnknownFields,
		EmbeddedResource:      s.XEmbeddedResource,
		ListMapKeys:           s.XListMapKeys,
		Parent:                parent,
		Structural:            s,
	}
	if s.Default.Object != nil {
		p.Default = s.Default.Object
		p.HasDefault = true
	}
	if s.XListType != nil {
		p.ListType = *s.XListType
	}
	if s.XMapType != nil {
		p.MapType = *s.XMapType
	}
	for _, r := range s.XValidations {
		rule := Rule{
			Rule:              r.Rule,
			Message:           r.Message,
			MessageExpression: r.MessageExpression,
			FieldPath:         r.FieldPath,
			Transition:        oldSelfRE.MatchString(r.Rule),
		}
		if r.Reason != nil {
			rule.Reason = string(*r.Reason)
		}
		if r.OptionalOldSelf != nil {
			rule.OptionalOldSelf = *r.OptionalOldSelf
		}
		p.Rules = append(p.Rules, rule)
	}
	if vv := s.ValueValidation; vv != nil {
		p.Format = vv.Format
		p.Minimum, p.Maximum = vv.Minimum, vv.Maximum
		p.ExclusiveMinimum, p.ExclusiveMaximum = vv.ExclusiveMinimum, vv.ExclusiveMaximum
		p.MultipleOf = vv.MultipleOf
		p.MinLength, p.MaxLength = vv.MinLength, vv.MaxLength
		p.Pattern = vv.Pattern
		p.MinItems, p.MaxItems, p.UniqueItems = vv.MinItems, vv.MaxItems, vv.UniqueItems
		p.MinProperties, p.MaxProperties = vv.MinProperties, vv.MaxProperties
		p.RequiredFields = append([]string(nil), vv.Required...)
		sort.Strings(p.RequiredFields)
		for _, e := range vv.Enum {
			p.Enum = append(p.Enum, e.Object)
		}
		p.HasCombinators = len(vv.AllOf) > 0 || len(vv.OneOf) > 0 || vv.Not != nil ||
			(len(vv.AnyOf) > 0 && !isIntOrStringAnyOf(vv.AnyOf))
	}
	req := map[string]bool{}
	for _, r := range p.RequiredFields {
		req[r] = true
	}
	names := slices.Sorted(maps.Keys(s.Properties))
	for _, n := range names {
		child := s.Properties[n]
		// Embedded resources must carry apiVersion and kind (the API server requires them).
		required := req[n] || (s.XEmbeddedResource && (n == "apiVersion" || n == "kind"))
		p.Fields = append(p.Fields, build(&child, path.Child(n), p, required))
	}
	if s.Items != nil {
		p.Items = build(s.Items, path.AnyIndex(), p, false)
	}
	if ap := s.AdditionalProperties; ap != nil {
		if ap.Structural != nil {
			p.Values = build(ap.Structural, path.AnyKey(), p, false)
		} else if ap.Bool {
			p.AnyValues = true
		}
	}
	return p
}

// isIntOrStringAnyOf recognises the anyOf [{type: integer}, {type: string}] that accompanies
// x-kubernetes-int-or-string.
func isIntOrStringAnyOf(alts []structuralschema.NestedValueValidation) bool {
	for _, a := range alts {
		t := a.ForbiddenGenerics.Type
		if t != TypeInteger && t != TypeString {
			return false
		}
	}
	return true
}

// ErrVersionNotServed is returned when an object's (a seed's) version is declared by the CRD but not
// served: the API server refuses every request in it.
var ErrVersionNotServed = errors.New("CRD version is not served")

// ObjectVersion returns the version of c an object with the given apiVersion (group/version) is
// written in, for generation to use by default: the version part when c declares and serves it.
// It returns "" (the storage version) when apiVersion carries no version or is of another group,
// and an error naming the served versions when the version is unknown or not served.
func ObjectVersion(c *apiextensionsv1.CustomResourceDefinition, apiVersion string) (string, error) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group != c.Spec.Group || version == "" {
		return "", nil
	}
	var served []string
	var found *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range c.Spec.Versions {
		v := &c.Spec.Versions[i]
		if v.Served {
			served = append(served, v.Name)
		}
		if v.Name == version {
			found = v
		}
	}
	switch {
	case found == nil:
		return "", fmt.Errorf("object is %s but CRD %s has no version %q (served: %s): write it in a served version: %w",
			apiVersion, c.Name, version, strings.Join(served, ", "), ErrVersionNotFound)
	case !found.Served:
		return "", fmt.Errorf("object is %s but CRD %s does not serve %s (served: %s): write it in a served version: %w",
			apiVersion, c.Name, version, strings.Join(served, ", "), ErrVersionNotServed)
	}
	return version, nil
}

// ErrVersionMismatch is returned when a version is asked for explicitly and the object (the seed)
// is written in another one.
var ErrVersionMismatch = errors.New("object is written in another version than the one asked for")

// NewSchemaForObject builds the model of the version of c an object with the given apiVersion is
// written in (ObjectVersion): by default the object's own served version, the storage version when
// apiVersion names none. An explicit version must be the object's.
func NewSchemaForObject(c *apiextensionsv1.CustomResourceDefinition, version, apiVersion string) (*Schema, error) {
	if version != "" {
		if _, err := pickVersion(c, version); err != nil {
			return nil, err
		}
	}
	own, err := ObjectVersion(c, apiVersion)
	if err != nil {
		return nil, err
	}
	switch {
	case version == "":
		version = own
	case own != "" && own != version:
		return nil, fmt.Errorf("version %s asked for, but the object is %s: drop the version to test %s, or write the object in %s/%s: %w",
			version, apiVersion, own, c.Spec.Group, version, ErrVersionMismatch)
	}
	return NewSchema(c, version)
}
