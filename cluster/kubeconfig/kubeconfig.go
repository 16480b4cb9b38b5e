// Package kubeconfig is the cluster back end for a cluster the user already has,
// reached through a kubeconfig file (--backend kubeconfig). Gauntlet makes no
// cluster here: Create checks that the cluster answers and returns a view of it
// whose requests are watched, so that the view's Delete removes exactly what
// Gauntlet created through it (its test namespaces, the operator's objects it
// installed) and never the cluster or anything that was there before. Workers
// get namespaces of their own on the shared cluster. The views are recorded
// under the state root with their owner process, so `gauntlet cluster gc`
// removes what a killed run left.
//
// Faults use what the cluster offers (package faults, through the
// cluster.Existing capability): Chaos Mesh when its CRDs are served, pod kill
// and delete through the API everywhere.
package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
)

// BackendName is this back end's name (--backend kubeconfig).
const BackendName = "kubeconfig"

// EnvKubeconfig is the variable read when Options.Kubeconfig is empty.
const EnvKubeconfig = "KUBECONFIG"

// ErrNoKubeconfig is returned by Create when no kubeconfig was given.
var ErrNoKubeconfig = fmt.Errorf("%w: the kubeconfig back end runs on a cluster you already have: pass --kubeconfig FILE or set KUBECONFIG", cluster.ErrUnavailable)

// Options configure the back end.
type Options struct {
	// Kubeconfig is the kubeconfig file of the cluster (its current context is
	// used); default $KUBECONFIG.
	Kubeconfig string
	// StateRoot is where views are recorded (default hoststate.StateRoot("")).
	StateRoot string
	// DeleteTimeout bounds how long Delete waits for the namespaces it deletes
	// to be gone (default 3m).
	DeleteTimeout time.Duration
	// Log receives progress (default: discarded).
	Log *slog.Logger
}

// Provider is the existing-cluster back end; it implements cluster.Backend.
type Provider struct {
	Options Options
}

func (p Provider) log() *slog.Logger {
	if p.Options.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Options.Log
}

// Name is "kubeconfig".
func (p Provider) Name() string { return BackendName }

// KubeconfigPath is the kubeconfig the provider uses: Options.Kubeconfig, else
// $KUBECONFIG ("" when neither is set).
func (p Provider) KubeconfigPath() string {
	if p.Options.Kubeconfig != "" {
		return p.Options.Kubeconfig
	}
	return os.Getenv(EnvKubeconfig)
}

// Check loads the kubeconfig (ErrNoKubeconfig when none is given): a file that
// is missing or malformed is an error naming it. It does not reach the cluster.
func (p Provider) Check() error {
	path := p.KubeconfigPath()
	if path == "" {
		return ErrNoKubeconfig
	}
	_, err := restConfig(path)
	return err
}

// recordsDir is the folder of the views recorded under root. A user other
// than root, who can use an existing cluster but not write the default state
// root, records views in $XDG_STATE_HOME/gauntlet (~/.local/state/gauntlet)
// unless a state root is given.
func recordsDir(root string) string {
	if root == "" && os.Getenv(hoststate.EnvStateDir) == "" && os.Geteuid() != 0 {
		base := os.Getenv("XDG_STATE_HOME")
		if home, err := os.UserHomeDir(); base == "" && err == nil {
			base = filepath.Join(home, ".local", "state")
		}
		if base != "" {
			return filepath.Join(base, "gauntlet", BackendName)
		}
	}
	return filepath.Join(hoststate.StateRoot(root), BackendName)
}

// restConfig loads the kubeconfig at path (a list of files, as $KUBECONFIG may
// hold, is merged as kubectl merges it).
func restConfig(path string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(path)}
	if len(rules.Precedence) == 1 {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: load %s: %w", path, err)
	}
	return cfg, nil
}

// Create checks that the cluster answers and returns a view of it called name,
// recorded under the state root with this process as its owner. It creates
// nothing in the cluster.
func (p Provider) Create(ctx context.Context, name string) (cluster.Cluster, error) {
	path := p.KubeconfigPath()
	if path == "" {
		return nil, ErrNoKubeconfig
	}
	if abs, err := filepath.Abs(path); err == nil && len(filepath.SplitList(path)) == 1 {
		path = abs
	}
	cfg, err := restConfig(path)
	if err != nil {
		return nil, err
	}
	if err := reachable(ctx, cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig: the cluster of %s (server %s) does not answer: %w", path, cfg.Host, err)
	}
	rec, err := newView(p.Options.StateRoot, record{Name: name, Kubeconfig: path, Server: cfg.Host, Created: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	p.log().Info("using an existing cluster: what Gauntlet creates there is removed when the run ends", "view", name, "server", cfg.Host, "kubeconfig", path)
	return &Cluster{name: name, kubeconfig: path, base: cfg, views: rec, timeout: p.Options.DeleteTimeout, log: p.log()}, nil
}

// reachable asks the API server for its version, within 30 s.
func reachable(ctx context.Context, cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { _, err := cs.Discovery().ServerVersion(); done <- err }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// List returns the views recorded under the state root, by name.
func (p Provider) List(context.Context) ([]cluster.Info, error) {
	recs, err := listViews(p.Options.StateRoot)
	if err != nil {
		return nil, err
	}
	out := make([]cluster.Info, len(recs))
	for i, r := range recs {
		phase := "Running"
		if !r.alive {
			phase = "Abandoned"
		}
		out[i] = cluster.Info{Backend: BackendName, Name: r.Name, Phase: phase, Running: r.alive, Server: r.Server, Kubeconfig: r.Kubeconfig}
	}
	return out, nil
}

// Delete removes what the recorded view called name created in its cluster, and
// its record. A view whose owner process runs is refused: that process (a
// campaign) deletes it when it ends.
func (p Provider) Delete(ctx context.Context, name string) error {
	recs, err := listViews(p.Options.StateRoot)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Name != name {
			continue
		}
		if r.alive {
			return fmt.Errorf("kubeconfig: view %s belongs to a running process, which removes what it created when it ends: stop that process (or wait for it)", name)
		}
		return p.purgeRecorded(ctx, r)
	}
	return fmt.Errorf("%w: no view %s is recorded in %s (see `gauntlet cluster list`)", cluster.ErrNotFound, name, recordsDir(p.Options.StateRoot))
}

// GC removes what every view whose owner is gone created, and their records.
func (p Provider) GC(ctx context.Context) ([]string, error) {
	recs, err := listViews(p.Options.StateRoot)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, r := range recs {
		if r.alive {
			continue
		}
		if err := p.purgeRecorded(ctx, r); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, BackendName+":"+r.Name)
	}
	return removed, errors.Join(errs...)
}

// purgeRecorded removes what an abandoned view created, then its record.
func (p Provider) purgeRecorded(ctx context.Context, r record) error {
	cfg, err := restConfig(r.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: view %s (recorded in %s): %w", r.Name, r.dir, err)
	}
	objs, err := readCreated(r.dir)
	if err != nil {
		return err
	}
	if err := purge(ctx, cfg, objs, p.Options.DeleteTimeout, p.log()); err != nil {
		return fmt.Errorf("kubeconfig: view %s: %w", r.Name, err)
	}
	return removeView(p.Options.StateRoot, r)
}

// Cluster is a view of an existing cluster: its requests are watched so that
// Delete removes what was created through it.
type Cluster struct {
	name, kubeconfig string
	base             *rest.Config
	views            *view
	timeout          time.Duration
	log              *slog.Logger
}

// Name is the view's name (Create's argument).
func (c *Cluster) Name() string { return c.name }

// Kubeconfig is the user's kubeconfig file.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig is the kubeconfig's client configuration; what is created through
// it is recorded for Delete.
func (c *Cluster) RESTConfig() *rest.Config {
	cfg := rest.CopyConfig(c.base)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{next: rt, view: c.views} })
	return cfg
}

// Existing is true: the cluster was there before Gauntlet.
func (c *Cluster) Existing() bool { return true }

// Delete removes, newest first, what was created through the view (objects in
// a namespace it created go with that namespace), waits for those namespaces to
// be gone, and removes the view's record. The cluster stays.
func (c *Cluster) Delete(ctx context.Context) error {
	objs := c.views.created()
	if err := purge(ctx, c.base, objs, c.timeout, c.log); err != nil {
		return fmt.Errorf("kubeconfig: view %s: %w", c.name, err)
	}
	return c.views.remove()
}

var (
	_ cluster.Backend  = Provider{}
	_ cluster.Cluster  = (*Cluster)(nil)
	_ cluster.Existing = (*Cluster)(nil)
)
