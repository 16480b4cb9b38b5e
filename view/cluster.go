package view

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// PodListener is the optional capability of a cluster whose pods reach a
// listener on this machine, with a serving certificate their service-account
// CA trusts (the embedded cluster).
type PodListener interface {
	ListenForPods(ctx context.Context) (net.Listener, tls.Certificate, error)
}

// ErrNoPodListener is returned by StartForPods for a cluster whose pods cannot
// be pointed at a proxy on this machine.
var ErrNoPodListener = errors.New("view: this back end cannot put a proxy in front of an in-cluster operator (its pods cannot reach this machine with a certificate they trust); the embedded cluster (--backend local) can")

// StartForPods starts a proxy in front of c's API server where c's pods reach
// it; restart restarts the operator after a crash-after-write cut.
func StartForPods(ctx context.Context, c cluster.Cluster, restart func(context.Context) error, log *slog.Logger) (*Proxy, error) {
	pl, ok := c.(PodListener)
	if !ok {
		return nil, ErrNoPodListener
	}
	ln, cert, err := pl.ListenForPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("view: cluster %s: %w", c.Name(), err)
	}
	p, err := Start(ctx, Config{Upstream: c.RESTConfig(), Listener: ln, Cert: &cert, Restart: restart, Log: log})
	if err != nil {
		ln.Close()
		return nil, err
	}
	return p, nil
}

// PointDeployment sets KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT in
// every container of a Deployment (an unstructured object, changed in place)
// to addr (host:port), so that its pods' in-cluster configuration reaches the
// proxy there instead of the API server.
func PointDeployment(obj map[string]any, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("view: proxy address %q: %w", addr, err)
	}
	// Walked by hand: rendered manifests hold Go ints, which unstructured's
	// copying helpers refuse.
	spec, _ := jsonv.At(obj, "spec", "template", "spec").(map[string]any)
	n := 0
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			env, _ := m["env"].([]any)
			env = setEnv(env, "KUBERNETES_SERVICE_HOST", host)
			m["env"] = setEnv(env, "KUBERNETES_SERVICE_PORT", port)
			n++
		}
	}
	if n == 0 {
		return errors.New("view: the Deployment has no container to point at the proxy")
	}
	return nil
}

// setEnv sets name=value in a container's env list.
func setEnv(env []any, name, value string) []any {
	for i, e := range env {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			env[i] = map[string]any{"name": name, "value": value}
			return env
		}
	}
	return append(env, map[string]any{"name": name, "value": value})
}

// RestartPods restarts the containers of the pods in namespace ns that sel
// selects: their processes are killed where the cluster can (native process
// faults; the restart policy brings them back), else the pods are deleted with
// no grace (their controller makes new ones).
func RestartPods(ctx context.Context, c cluster.Cluster, cs kubernetes.Interface, ns string, sel map[string]string) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		return fmt.Errorf("view: list the operator's pods: %w", err)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("view: no pod in %s matches %v", ns, sel)
	}
	pf, native := c.(cluster.ProcessFaults)
	var errs []error
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		ref := cluster.PodRef{Namespace: p.Namespace, Name: p.Name}
		if !native {
			zero := int64(0)
			errs = append(errs, cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
			continue
		}
		for _, ctr := range p.Spec.Containers {
			errs = append(errs, pf.CrashContainer(ctx, ref, ctr.Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("view: restart the operator: %w", err)
	}
	return nil
}
