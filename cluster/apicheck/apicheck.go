// Package apicheck asks a real Kubernetes API server whether it accepts objects, with server-side
// dry-run creates (nothing is stored). It starts its own control plane from the embedded cluster's
// pinned binaries (no nodes, no network setup, no root needed), once per use, in about 3 s.
//
// Input generation uses it to check that the core-typed values a CRD carries (containers,
// affinity, PVC templates, …) are values the API server accepts once an operator renders them
// into real objects: the dry run runs exactly the server's code, defaulting, validation and
// admission included. Validating in-process instead would mean importing
// k8s.io/kubernetes/pkg/apis/core/validation, and with it the k8s.io/kubernetes module and its
// staging replace directives, into the main module; admission would still be missing.
package apicheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/controlplane"
)

// ErrUnavailable is returned by Start and Available when the control-plane binaries are missing
// or unusable.
var ErrUnavailable = errors.New("the API server for dry-run validation is unavailable: build the pinned control plane with `make controlplane` (or set " + controlplane.EnvBinDir + ")")

// Namespace is where namespaced objects are dry-run created.
const Namespace = metav1.NamespaceDefault

// serviceCIDR is the embedded cluster's Service range, so cluster IPs are judged as there.
const serviceCIDR = "10.96.0.0/16"

// Options configure Start. The zero value works.
type Options struct {
	// Dir is the state folder (certificates, etcd data, logs); default a temporary folder
	// removed by Stop.
	Dir string
	// Parallel bounds concurrent requests (default 16).
	Parallel int
	// Log receives progress; nil discards.
	Log *slog.Logger
}

// Server is a running API server that answers dry-run creates. It is safe for concurrent use.
type Server struct {
	cp     *controlplane.ControlPlane
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	dir    string
	ownDir bool
	sem    chan struct{}
}

// Available reports whether Start can find usable binaries (ErrUnavailable, with the reason,
// when not).
func Available(ctx context.Context) error {
	if _, err := controlplane.FindBinaries(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Start starts the control plane and waits until it serves (about 3 s here). Stop ends it.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 16
	}
	bins, err := controlplane.FindBinaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// s, not the result: "return nil, err" must not leave the cleanup a nil server.
	s := &Server{dir: opts.Dir, sem: make(chan struct{}, opts.Parallel)}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "gauntlet-apicheck-"); err != nil {
			return nil, fmt.Errorf("apicheck: state folder: %w", err)
		}
		s.ownDir = true
	}
	defer func() {
		if err != nil {
			_ = s.Stop(context.Background())
		}
	}()
	freePorts := func() (ports [3]int, err error) {
		for i := range ports {
			if ports[i], err = controlplane.FreePort("127.0.0.1"); err != nil {
				return ports, fmt.Errorf("apicheck: %w", err)
			}
		}
		return ports, nil
	}
	s.cp, err = controlplane.StartFreshPorts(ctx, controlplane.Config{
		Name: "apicheck", Dir: s.dir, Binaries: bins, Address: netip.MustParseAddr("127.0.0.1"),
		ServiceCIDR: netip.MustParsePrefix(serviceCIDR), Log: opts.Log,
	}, freePorts)
	if err != nil {
		return nil, fmt.Errorf("apicheck: start control plane: %w", err)
	}
	cfg := s.cp.AdminRESTConfig()
	cfg.QPS = -1 // no client-side throttling: the semaphore bounds load
	// Deprecation warnings (a gitRepo volume, a null label selector) judge nothing.
	cfg.WarningHandler = rest.NoWarnings{}
	if s.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("apicheck: client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("apicheck: client: %w", err)
	}
	groups, err := restmapper.GetAPIGroupResources(cs.Discovery())
	if err != nil {
		return nil, fmt.Errorf("apicheck: discovery: %w", err)
	}
	s.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	// Pods run as the namespace's default service account, which the ServiceAccount admission
	// plugin requires to exist (the controller-manager creates it too, a little later).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: Namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("apicheck: create the default ServiceAccount: %w", err)
	}
	opts.Log.Debug("apicheck: API server ready", "server", s.cp.Server(), "dir", s.dir)
	return s, nil
}

// Server is the API server's URL.
func (s *Server) Server() string { return s.cp.Server() }

// Stop ends the control plane and removes a temporary state folder.
func (s *Server) Stop(ctx context.Context) error {
	var errs []error
	if s.cp != nil {
		errs = append(errs, s.cp.Stop(ctx))
	}
	if s.ownDir && s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// Validate dry-run creates obj (a complete object: apiVersion, kind, metadata.name; namespaced
// objects go to Namespace) with strict field validation. It returns why the server refuses it —
// the causes as "field: message", joined by "; " and sorted — or "" when it accepts it; err is
// set only when the server could not be asked (connection, authorization, an unknown kind).
func (s *Server) Validate(ctx context.Context, obj map[string]any) (string, error) {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", fmt.Errorf("apicheck: %s: %w", gvk, err)
	}
	var ri dynamic.ResourceInterface = s.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		// A shallow copy: the caller's object is not touched (values may be any JSON-like Go
		// value, which DeepCopy refuses).
		top := make(map[string]any, len(obj))
		for k, v := range obj {
			top[k] = v
		}
		md := map[string]any{}
		if old, ok := obj["metadata"].(map[string]any); ok {
			for k, v := range old {
				md[k] = v
			}
		}
		md["namespace"] = Namespace
		top["metadata"] = md
		u = &unstructured.Unstructured{Object: top}
		ri = s.dyn.Resource(m.Resource).Namespace(Namespace)
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("apicheck: %w", ctx.Err())
	}
	_, err = ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
	<-s.sem
	if err == nil {
		return "", nil
	}
	if reason, ok := Refusal(err); ok {
		return reason, nil
	}
	return "", fmt.Errorf("apicheck: dry-run create of %s: %w", gvk.Kind, err)
}

// Refusal renders an API error that judges the object (invalid, bad request, forbidden by
// admission, …) as its causes; false for errors that say nothing about the object.
func Refusal(err error) (string, bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "", false
	}
	status := st.Status()
	switch status.Code {
	case http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusRequestTimeout, http.StatusNotFound:
		return "", false
	}
	if status.Code < 400 || status.Code >= 500 {
		return "", false
	}
	if status.Details == nil || len(status.Details.Causes) == 0 {
		return status.Message, true
	}
	var causes []string
	for _, c := range status.Details.Causes {
		msg := c.Message
		if c.Field != "" {
			msg = c.Field + ": " + msg
		}
		causes = append(causes, msg)
	}
	sort.Strings(causes)
	return strings.Join(causes, "; "), true
}
