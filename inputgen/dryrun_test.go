package inputgen

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestDryRunValidator checks the requests the server-side validator sends, with client-go's fake
// dynamic client standing in for an API server (no cluster here): dry-run options, the live
// resourceVersion on update, and how rejections are reported.
func TestDryRunValidator(t *testing.T) {
	s, seed, _ := loadCase(t, "cel")
	gvr := schema.GroupVersionResource{Group: s.Group, Version: s.Version, Resource: s.Plural}
	live := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.APIVersion(), "kind": s.Kind,
		"metadata": map[string]any{"name": "q1", "namespace": "ns1", "resourceVersion": "42"},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: s.Kind + "List"}, live)
	v := NewDryRunValidator(client, s, "ns1")
	ctx := context.Background()

	if err := v.ValidateCreate(ctx, seed); err != nil {
		t.Fatalf("create: %v", err)
	}
	updated := map[string]any{}
	for k, val := range seed {
		updated[k] = val
	}
	if err := v.ValidateUpdate(ctx, updated, seed); err != nil {
		t.Fatalf("update: %v", err)
	}
	var sawCreate, sawUpdate bool
	for _, a := range client.Actions() {
		switch act := a.(type) {
		case k8stesting.CreateActionImpl:
			sawCreate = true
			if o := act.GetCreateOptions(); len(o.DryRun) != 1 || o.DryRun[0] != metav1.DryRunAll || act.GetNamespace() != "ns1" {
				t.Errorf("create options %+v namespace %q", o, act.GetNamespace())
			}
		case k8stesting.UpdateActionImpl:
			sawUpdate = true
			if o := act.GetUpdateOptions(); len(o.DryRun) != 1 || o.DryRun[0] != metav1.DryRunAll {
				t.Errorf("update options %+v", o)
			}
			u := act.GetObject().(*unstructured.Unstructured)
			if u.GetResourceVersion() != "42" {
				t.Errorf("update sent resourceVersion %q, want the live 42", u.GetResourceVersion())
			}
		}
	}
	if !sawCreate || !sawUpdate {
		t.Errorf("actions: create %v update %v", sawCreate, sawUpdate)
	}
	// The seed shares the live object's name: the create was retried under a derived name.
	var names []string
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateActionImpl); ok {
			names = append(names, c.GetObject().(*unstructured.Unstructured).GetName())
		}
	}
	if len(names) != 2 || names[1] != "q1-gauntlet-dry-run" {
		t.Errorf("create names = %v", names)
	}

	// A rejection becomes an InvalidError naming the field; other failures stay as they are.
	client.PrependReactor("create", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: s.Group, Kind: s.Kind}, "q1",
			field.ErrorList{field.Invalid(field.NewPath("spec", "maxSize"), 11, "must be at most 10")})
	})
	err := v.ValidateCreate(ctx, seed)
	var ie *InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "spec.maxSize") {
		t.Errorf("rejection: err = %v", err)
	}
	client.PrependReactor("update", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "q1", errors.New("no RBAC"))
	})
	err = v.ValidateUpdate(ctx, updated, seed)
	if err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("forbidden: err = %v, want a non-validation error", err)
	}
}
