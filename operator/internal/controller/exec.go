package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/internal/machine"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// executor performs the state machine's requests. Reads of Secrets and claims
// go to the API server directly (the operator keeps no cache of the namespace's
// Secrets, which also keeps its RBAC to get-only on them); everything else
// goes through the manager's cache.
type executor struct {
	client client.Client
	reader client.Reader
	valkey valkey.Client
}

func (e *executor) readerFor(obj client.Object) client.Reader {
	switch obj.(type) {
	case *corev1.Secret, *corev1.PersistentVolumeClaim:
		return e.reader
	}
	return e.client
}

func (e *executor) do(ctx context.Context, req machine.Request) machine.Response {
	switch req.Kind {
	case machine.Get:
		obj := req.Object.DeepCopyObject().(client.Object)
		err := e.readerFor(obj).Get(ctx, client.ObjectKeyFromObject(req.Object), obj)
		return machine.Response{Object: obj, Err: err}
	case machine.List:
		list := req.List.DeepCopyObject().(client.ObjectList)
		var r client.Reader = e.client
		if _, ok := list.(*corev1.PersistentVolumeClaimList); ok {
			r = e.reader
		}
		err := r.List(ctx, list, client.InNamespace(req.Namespace), client.MatchingLabels(req.Labels))
		return machine.Response{List: list, Err: err}
	case machine.Create:
		obj := req.Object.DeepCopyObject().(client.Object)
		err := e.client.Create(ctx, obj)
		return machine.Response{Object: obj, Err: err}
	case machine.Update:
		obj := req.Object.DeepCopyObject().(client.Object)
		err := e.client.Update(ctx, obj)
		return machine.Response{Object: obj, Err: err}
	case machine.UpdateStatus:
		obj := req.Object.DeepCopyObject().(client.Object)
		err := e.client.Status().Update(ctx, obj)
		return machine.Response{Object: obj, Err: err}
	case machine.Delete:
		opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
		if machine.IsOrphanDelete(req.Object) {
			opts = []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationOrphan)}
		}
		if uid := req.Object.GetUID(); uid != "" {
			opts = append(opts, client.Preconditions{UID: &uid})
		}
		err := e.client.Delete(ctx, req.Object.DeepCopyObject().(client.Object), opts...)
		return machine.Response{Err: err}
	case machine.Valkey:
		c := req.Valkey
		cctx, cancel := context.WithTimeout(ctx, c.Timeout)
		defer cancel()
		reply, err := e.valkey.Do(cctx, c.Endpoint, c.Args...)
		return machine.Response{Reply: reply, Err: err}
	}
	return machine.Response{Err: fmt.Errorf("executor: unknown request kind %v", req.Kind)}
}
