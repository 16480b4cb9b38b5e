package inputgen

import (
	"context"
	"errors"
	"fmt"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// ErrInvalid is the invariant every desired state must meet: the API server accepts it.
var ErrInvalid = errors.New("object does not pass the CRD's validation (schema, list types, embedded metadata and CEL rules)")

// InvalidError carries the field errors that rejected an object, each naming the path and the rule.
type InvalidError struct {
	// Errs are the field errors, in the order the API server reports them.
	Errs field.ErrorList
}

// Error lists the field errors.
func (e *InvalidError) Error() string {
	msgs := make([]string, 0, len(e.Errs))
	for i, fe := range e.Errs {
		if i == 10 {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(e.Errs)-i))
			break
		}
		msgs = append(msgs, fe.Error())
	}
	return fmt.Sprintf("%v: %s", ErrInvalid, strings.Join(msgs, "; "))
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Validator decides whether the API server would accept a desired state. The local implementation
// runs the API server's own code; DryRunValidator asks a real API server.
type Validator interface {
	// ValidateCreate checks obj as a create request.
	ValidateCreate(ctx context.Context, obj map[string]any) error
	// ValidateUpdate checks obj as an update of old (transition rules and ratcheting apply).
	ValidateUpdate(ctx context.Context, obj, old map[string]any) error
}

// LocalValidator validates custom resources with the code kube-apiserver runs for a CRD version:
// pruning, null pruning, ObjectMeta coercion and defaulting (as the decoder does), then the OpenAPI
// schema validator, embedded-resource checks, list-type invariants and x-kubernetes-validations CEL
// rules (as the registry strategy does), with validation ratcheting on update. It is safe for
// concurrent use.
type LocalValidator struct {
	schema          *crd.Schema
	schemaValidator apiservervalidation.SchemaValidator
	cel             *cel.Validator
	// DefaultNamespace fills metadata.namespace of namespaced objects that have none (the API
	// server takes it from the request URL). Defaults to "default".
	DefaultNamespace string
}

// NewLocalValidator builds the validators for one schema; CEL rules are compiled here.
func NewLocalValidator(s *crd.Schema) (*LocalValidator, error) {
	sv, _, err := apiservervalidation.NewSchemaValidator(s.Internal)
	if err != nil {
		return nil, fmt.Errorf("build schema validator for %s/%s: %w", s.Name, s.Version, err)
	}
	return &LocalValidator{
		schema:           s,
		schemaValidator:  sv,
		cel:              cel.NewValidator(s.Structural, true, celconfig.PerCallLimit),
		DefaultNamespace: "default",
	}, nil
}

// Schema returns the schema the validator checks against.
func (v *LocalValidator) Schema() *crd.Schema { return v.schema }

// Normalize returns a deep copy of obj the way the API server would store it on create: unknown
// fields pruned, non-nullable nulls removed, ObjectMeta coerced, defaults applied and (with the
// status subresource) status dropped.
func (v *LocalValidator) Normalize(obj map[string]any) (map[string]any, error) {
	out, err := v.coerce(obj, true)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(out, v.schema.Structural)
	return out, nil
}

// Prune returns a deep copy of obj with unknown fields and non-nullable nulls removed, without
// applying defaults: the desired state as declared, minus what the API server would drop.
func (v *LocalValidator) Prune(obj map[string]any) (map[string]any, error) {
	return v.coerce(obj, false)
}

func (v *LocalValidator) coerce(obj map[string]any, fillNamespace bool) (map[string]any, error) {
	if obj == nil {
		return nil, fmt.Errorf("%w: object is empty", ErrInvalid)
	}
	out := jsonv.CopyMap(obj)
	s := v.schema.Structural
	if !v.schema.Root.PreserveUnknownFields {
		structuralpruning.PruneWithOptions(out, s, true, structuralschema.UnknownFieldPathOptions{})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(out, s)
	}
	if fe, _ := schemaobjectmeta.CoerceWithOptions(nil, out, s, false, schemaobjectmeta.CoerceOptions{}); fe != nil {
		return nil, &InvalidError{Errs: field.ErrorList{fe}}
	}
	if v.schema.StatusSubresource {
		delete(out, "status")
	}
	if v.schema.Namespaced && fillNamespace {
		md, _ := out["metadata"].(map[string]any)
		if md != nil {
			if ns, _ := md["namespace"].(string); ns == "" {
				md["namespace"] = v.DefaultNamespace
			}
		}
	}
	return out, nil
}

// ValidateCreate checks obj as kube-apiserver checks a create request.
func (v *LocalValidator) ValidateCreate(ctx context.Context, obj map[string]any) error {
	u, err := v.Normalize(obj)
	if err != nil {
		return err
	}
	errs := v.typeMeta(u)
	if len(errs) == 0 {
		us := &unstructured.Unstructured{Object: u}
		errs = append(errs, validation.ValidateObjectMetaAccessor(us, v.schema.Namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, v.schemaValidator)...)
		errs = append(errs, v.scale(u)...)
		errs = append(errs, schemaobjectmeta.Validate(nil, u, v.schema.Structural, false)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.schema.Structural, u)...)
		if blocked, fe := hasBlockingErr(errs); blocked {
			errs = append(errs, fe)
		} else {
			celErrs, _ := v.cel.Validate(ctx, nil, v.schema.Structural, u, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Errs: errs}
	}
	return nil
}

// ValidateUpdate checks obj as kube-apiserver checks an update of the stored object old, with
// validation ratcheting (unchanged invalid values are tolerated) and CEL transition rules.
func (v *LocalValidator) ValidateUpdate(ctx context.Context, obj, old map[string]any) error {
	u, err := v.Normalize(obj)
	if err != nil {
		return err
	}
	o, err := v.normalizeStored(old)
	if err != nil {
		return fmt.Errorf("normalize old object: %w", err)
	}
	return v.validateUpdate(ctx, u, o, true)
}

// normalizeStored normalises old as the object the API server has stored: with a
// resourceVersion (a placeholder when old was never created, e.g. a seed).
func (v *LocalValidator) normalizeStored(old map[string]any) (map[string]any, error) {
	o, err := v.Normalize(old)
	if err != nil {
		return nil, err
	}
	if md, _ := o["metadata"].(map[string]any); md != nil {
		if rv, _ := md["resourceVersion"].(string); rv == "" {
			md["resourceVersion"] = "1"
		}
	}
	return o, nil
}

// validateUpdate validates the normalised u (modified: it receives the stored identity) against
// the normalised stored object o (read only). Without ratchet, the plain validators run: the
// outcome is the same as with ratcheting whenever o itself is valid, because ratcheting only
// tolerates errors o already had; the generator, whose old states are all validated, uses that
// cheaper path.
func (v *LocalValidator) validateUpdate(ctx context.Context, u, o map[string]any, ratchet bool) error {
	if v.schema.StatusSubresource {
		if st, ok := o["status"]; ok {
			u["status"] = st
		}
	}
	carryIdentity(u, o)
	errs := v.typeMeta(u)
	if len(errs) == 0 {
		us, os := &unstructured.Unstructured{Object: u}, &unstructured.Unstructured{Object: o}
		errs = append(errs, validation.ValidateObjectMetaAccessorUpdate(us, os, field.NewPath("metadata"))...)
		var schemaOpts []apiservervalidation.ValidationOption
		var celOpts []cel.Option
		if ratchet {
			correlated := common.NewCorrelatedObject(u, o, &model.Structural{Structural: v.schema.Structural})
			schemaOpts = append(schemaOpts, apiservervalidation.WithRatcheting(correlated))
			celOpts = append(celOpts, cel.WithRatcheting(correlated))
		}
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u, o, v.schemaValidator, schemaOpts...)...)
		errs = append(errs, v.scale(u)...)
		errs = append(errs, schemaobjectmeta.Validate(nil, u, v.schema.Structural, false)...)
		if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, v.schema.Structural, o); len(oldErrs) == 0 {
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.schema.Structural, u)...)
		}
		if blocked, fe := hasBlockingErr(errs); blocked {
			errs = append(errs, fe)
		} else {
			celErrs, _ := v.cel.Validate(ctx, nil, v.schema.Structural, u, o, celconfig.RuntimeCELCostBudget, celOpts...)
			errs = append(errs, celErrs...)
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Errs: errs}
	}
	return nil
}

// carryIdentity gives u the server-managed identity an update carries: the stored object's uid,
// resourceVersion, creationTimestamp and generation, where u has none.
func carryIdentity(u, o map[string]any) {
	om, _ := o["metadata"].(map[string]any)
	um, _ := u["metadata"].(map[string]any)
	if om == nil || um == nil {
		return
	}
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation"} {
		if _, ok := um[k]; !ok {
			if ov, ok := om[k]; ok {
				um[k] = ov
			}
		}
	}
}

func (v *LocalValidator) typeMeta(u map[string]any) field.ErrorList {
	var errs field.ErrorList
	if k, _ := u["kind"].(string); k != v.schema.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u["kind"], "must be "+v.schema.Kind))
	}
	if av, _ := u["apiVersion"].(string); av != v.schema.APIVersion() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u["apiVersion"], "must be "+v.schema.APIVersion()))
	}
	return errs
}

// scale mirrors the registry's checks of the scale subresource's spec replicas path.
func (v *LocalValidator) scale(u map[string]any) field.ErrorList {
	sc := v.schema.Scale
	if sc == nil || sc.SpecReplicasPath == "" {
		return nil
	}
	p := strings.TrimPrefix(sc.SpecReplicasPath, ".")
	n, found, err := unstructured.NestedInt64(u, strings.Split(p, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(sc.SpecReplicasPath), n, err.Error())}
	case found && n < 0:
		return field.ErrorList{field.Invalid(field.NewPath(sc.SpecReplicasPath), n, "should be a non-negative integer")}
	case found && n > 1<<31-1:
		return field.ErrorList{field.Invalid(field.NewPath(sc.SpecReplicasPath), n, "should be less than or equal to 2147483647")}
	}
	return nil
}

func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}
