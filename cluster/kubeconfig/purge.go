package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
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
// that namespace) and waits up to timeout for the namespaces among them to be
// gone, so that the next run finds the cluster as it was. What is gone already
// is no error.
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
	bg := metav1.DeletePropagationBackground
	var errs []error
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		if o.Namespace != "" && namespaces[o.Namespace] {
			continue
		}
		err := cs.CoreV1().RESTClient().Delete().AbsPath(o.Path).Body(&metav1.DeleteOptions{PropagationPolicy: &bg}).Do(ctx).Error()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsMethodNotSupported(err) {
			continue
		}
		errs = append(errs, fmt.Errorf("delete %s: %w", o.Path, err))
	}
	log.Info("removed what the run created in the existing cluster; waiting for its namespaces to be gone", "objects", len(objs), "namespaces", len(namespaces))
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var left []string
	for ns := range namespaces {
		for {
			_, err := cs.CoreV1().Namespaces().Get(wctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if wctx.Err() != nil {
				left = append(left, ns)
				break
			}
			select {
			case <-wctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		errs = append(errs, fmt.Errorf("namespaces still terminating after %v (look at their finalizers with kubectl get ns -o yaml): %s", timeout, strings.Join(left, ", ")))
	}
	return errors.Join(errs...)
}
