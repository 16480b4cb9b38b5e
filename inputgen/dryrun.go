package inputgen

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// DryRunValidator validates desired states against a real API server with server-side dry run
// (nothing is persisted). It sees everything the local validator cannot: admission webhooks,
// validating admission policies and the exact server version. The CRD must be installed.
type DryRunValidator struct {
	client     dynamic.Interface
	gvr        schema.GroupVersionResource
	namespaced bool
	namespace  string
}

// NewDryRunValidator returns a validator for the resource of s; namespace is used for namespaced
// resources whose objects carry none.
func NewDryRunValidator(client dynamic.Interface, s *crd.Schema, namespace string) *DryRunValidator {
	if namespace == "" {
		namespace = "default"
	}
	return &DryRunValidator{
		client:     client,
		gvr:        schema.GroupVersionResource{Group: s.Group, Version: s.Version, Resource: s.Plural},
		namespaced: s.Namespaced,
		namespace:  namespace,
	}
}

func (v *DryRunValidator) resource(u *unstructured.Unstructured) dynamic.ResourceInterface {
	if !v.namespaced {
		return v.client.Resource(v.gvr)
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = v.namespace
		u.SetNamespace(ns)
	}
	return v.client.Resource(v.gvr).Namespace(ns)
}

// ValidateCreate dry-runs a create of obj. When an object of that name exists (the campaign's
// live CR), it dry-runs the create under a derived name instead, since only the content matters.
func (v *DryRunValidator) ValidateCreate(ctx context.Context, obj map[string]any) error {
	u := &unstructured.Unstructured{Object: jsonv.CopyMap(obj)}
	ri := v.resource(u)
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
	_, err := ri.Create(ctx, u, opts)
	if apierrors.IsAlreadyExists(err) {
		name := u.GetName()
		const suffix = "-gauntlet-dry-run"
		if len(name)+len(suffix) > 253 {
			name = name[:253-len(suffix)]
		}
		u.SetName(name + suffix)
		_, err = ri.Create(ctx, u, opts)
	}
	return v.wrap(err)
}

// ValidateUpdate dry-runs an update of the live object named like obj to obj (old is what the
// caller believes is stored; the server judges against the live object). When the object does not
// exist, it dry-runs a create instead.
func (v *DryRunValidator) ValidateUpdate(ctx context.Context, obj, old map[string]any) error {
	u := &unstructured.Unstructured{Object: jsonv.CopyMap(obj)}
	ri := v.resource(u)
	live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return v.ValidateCreate(ctx, obj)
	}
	if err != nil {
		return fmt.Errorf("dry-run update: get live %s %s: %w", v.gvr.Resource, u.GetName(), err)
	}
	u.SetResourceVersion(live.GetResourceVersion())
	_, err = ri.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	return v.wrap(err)
}

// wrap turns the server's rejection into an InvalidError; other errors (connectivity,
// authorization) are returned as they are, so callers can tell a bad input from a bad cluster.
func (v *DryRunValidator) wrap(err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		var errs field.ErrorList
		if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
			for _, c := range st.Status().Details.Causes {
				errs = append(errs, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field, Detail: c.Message})
			}
		}
		if len(errs) == 0 {
			errs = field.ErrorList{field.Invalid(nil, nil, err.Error())}
		}
		return &InvalidError{Errs: errs}
	}
	return fmt.Errorf("server-side dry run of %s: %w", v.gvr.Resource, err)
}
