// Package kind is the cluster back end for machines with a container engine: real
// kind clusters (Kubernetes in Docker), created through kind's own Go library, with
// the same node layout as the embedded cluster (workers labelled with zones) so a
// campaign behaves alike on both. Faults on kind go through Chaos Mesh (package
// faults), not through this package.
package kind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
	kindv1 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

// ErrNoEngine is returned when no container engine answers (`docker info` fails).
var ErrNoEngine = errors.New("kind needs a running container engine: `docker info` failed; start Docker, or use the embedded cluster (the default)")

// Options configure kind clusters. The zero value gives one control-plane node and
// three workers in zones zone-a, zone-b, zone-c with kind's default node image.
type Options struct {
	// Workers is the number of worker nodes (default 3).
	Workers int
	// NodeImage is the kindest/node image (default: kind's own default for its version).
	NodeImage string
	// KubeconfigDir holds one kubeconfig per cluster (default: a temporary folder).
	KubeconfigDir string
	// WaitForReady bounds the wait for the control plane (default 5m).
	WaitForReady time.Duration
	// Log receives progress (default: discarded).
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 3
	}
	if o.WaitForReady <= 0 {
		o.WaitForReady = 5 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Config is the kind cluster configuration for opts: a control-plane node and
// opts.Workers workers with hostname-independent zone labels, round robin.
func Config(opts Options) *kindv1.Cluster {
	opts = opts.withDefaults()
	c := &kindv1.Cluster{TypeMeta: kindv1.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"}}
	c.Nodes = append(c.Nodes, kindv1.Node{Role: kindv1.ControlPlaneRole, Image: opts.NodeImage})
	for i := 0; i < opts.Workers; i++ {
		c.Nodes = append(c.Nodes, kindv1.Node{
			Role:  kindv1.WorkerRole,
			Image: opts.NodeImage,
			Labels: map[string]string{
				"topology.kubernetes.io/zone":   "zone-" + string(rune('a'+i%26)),
				"topology.kubernetes.io/region": "local",
			},
		})
	}
	return c
}

// Available reports whether a container engine answers, with ErrNoEngine if not.
func Available(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("%w (no docker client: %v)", ErrNoEngine, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNoEngine, strings.TrimSpace(lastLine(string(out))))
	}
	return nil
}

// DefaultNodeImage is the node image of kind's library version, used when
// Options.NodeImage is empty.
const DefaultNodeImage = kinddefaults.Image

// NodeImagePresent reports whether image (DefaultNodeImage when empty) is already
// in the local engine (`docker image inspect`). kind pulls a missing node image
// when it creates a cluster, which needs a reachable registry.
func NodeImagePresent(ctx context.Context, image string) (bool, error) {
	if image == "" {
		image = DefaultNodeImage
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput()
	if err == nil {
		return true, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && cctx.Err() == nil {
		return false, nil // "No such image"
	}
	return false, fmt.Errorf("kind: docker image inspect %s: %w: %s", image, err, strings.TrimSpace(lastLine(string(out))))
}

// Provider creates kind clusters; it implements cluster.Provider.
type Provider struct {
	Options Options
}

// Create makes a kind cluster called name and returns once its control plane is
// ready. kind's library cannot be interrupted: ctx is checked before it starts.
func (p Provider) Create(ctx context.Context, name string) (cluster.Cluster, error) {
	opts := p.Options.withDefaults()
	if err := Available(ctx); err != nil {
		return nil, err
	}
	dir := opts.KubeconfigDir
	if dir == "" {
		d, err := os.MkdirTemp("", "gauntlet-kind-")
		if err != nil {
			return nil, fmt.Errorf("kind: %w", err)
		}
		dir = d
	}
	kubeconfig := filepath.Join(dir, name+".kubeconfig")
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker())
	start := time.Now()
	opts.Log.Info("creating kind cluster", "name", name, "workers", opts.Workers)
	createOpts := []kindcluster.CreateOption{
		kindcluster.CreateWithV1Alpha4Config(Config(opts)),
		kindcluster.CreateWithKubeconfigPath(kubeconfig),
		kindcluster.CreateWithWaitForReady(opts.WaitForReady),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
	}
	if opts.NodeImage != "" {
		createOpts = append(createOpts, kindcluster.CreateWithNodeImage(opts.NodeImage))
	}
	if err := kp.Create(name, createOpts...); err != nil {
		return nil, fmt.Errorf("kind: create %s: %w", name, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		_ = kp.Delete(name, kubeconfig)
		return nil, fmt.Errorf("kind: read kubeconfig of %s: %w", name, err)
	}
	opts.Log.Info("kind cluster ready", "name", name, "took", time.Since(start).Round(time.Millisecond))
	return &Cluster{name: name, kubeconfig: kubeconfig, rest: cfg, kp: kp}, nil
}

// Cluster is a running kind cluster.
type Cluster struct {
	name, kubeconfig string
	rest             *rest.Config
	kp               *kindcluster.Provider
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.name }

// Kubeconfig is the path of the cluster's admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig is a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Delete removes the cluster's containers and its kubeconfig.
func (c *Cluster) Delete(ctx context.Context) error {
	if err := c.kp.Delete(c.name, c.kubeconfig); err != nil {
		return fmt.Errorf("kind: delete %s: %w", c.name, err)
	}
	_ = os.Remove(c.kubeconfig)
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

var (
	_ cluster.Provider = Provider{}
	_ cluster.Cluster  = (*Cluster)(nil)
)
