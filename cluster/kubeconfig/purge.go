package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// defaultDeleteTimeout bounds the wait for deleted namespaces to be gone.
const defaultDeleteTimeout = 3 * time.Minute

// purge deletes objs newest first (an object in a namespace of objs goes with
// that namespace). Before it deletes an object older than namespaces it deleted,
// it waits for those namespaces to be gone: what a test namespace holds may
// need the operator, installed earlier, to finish (finalizers). It waits up to
// timeout in all, so that the next run finds the cluster as it was. What is
// gone already is no error.
func purge(ctx context.Context, cfg *rest.Config, objs []created, timeout time.Duration, log *slog.Logger) error {
	if len(objs) == 0 {
		return nil
	}
	if timeout <= 0 {
		timeout = defaultDeleteTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	namespaces := map[string]bool{}
	for _, o := range objs {
		if o.IsNamespace {
			namespaces[path.Base(o.Path)] = true
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	var errs, waitErrs []error
	var pending, deleted []string
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		if o.Namespace != "" && namespaces[o.Namespace] {
			continue
		}
		if !o.IsNamespace && len(pending) > 0 {
			waitErrs = append(waitErrs, waitGone(wctx, cs, pending, timeout))
			deleted = slices.DeleteFunc(deleted, func(p string) bool { return slices.Contains(pending, p) })
			pending = nil
		}
		log.Debug("deleting what the run created", "path", o.Path)
		err := cs.CoreV1().RESTClient().Delete().AbsPath(o.Path).Body(&metav1.DeleteOptions{PropagationPolicy: &bg}).Do(ctx).Error()
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !apierrors.IsMethodNotSupported(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", o.Path, err))
			continue
		}
		deleted = append(deleted, o.Path)
		if o.IsNamespace {
			pending = append(pending, o.Path)
		}
	}
	// Everything deleted is gone before the next run may create it again (a
	// CustomResourceDefinition terminates while its objects are removed).
	waitErrs = append(waitErrs, waitGone(wctx, cs, deleted, timeout))
	log.Info("removed what the run created in the existing cluster", "objects", len(objs), "namespaces", len(namespaces))
	return errors.Join(append(errs, waitErrs...)...)
}

// waitGone waits until the objects at paths are gone (ctx bounds the wait); it
// names those still there when ctx ends.
func waitGone(ctx context.Context, cs kubernetes.Interface, paths []string, timeout time.Duration) error {
	var left []string
	for _, p := range paths {
		for {
			err := cs.CoreV1().RESTClient().Get().AbsPath(p).Do(ctx).Error()
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				left = append(left, p)
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if len(left) == 0 {
		return nil
	}
	sort.Strings(left)
	return fmt.Errorf("still there %v after their deletion (look at their finalizers): %s", timeout, strings.Join(left, ", "))
}
