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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
	kindv1 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
)

// ErrNoEngine is returned when no container engine answers (`docker info` fails).
var ErrNoEngine = fmt.Errorf("%w: kind needs a running container engine: `docker info` failed; start Docker, or use the embedded cluster (the default)", cluster.ErrUnavailable)

// Options configure kind clusters. The zero value gives, where the local engine has
// Gauntlet's offline node image (nodeimage.DefaultImage, `gauntlet kind node-image`), one
// node from it (zone-a) with a pod subnet of its own routed from the host; else one
// control-plane node and three workers in zones zone-a, zone-b, zone-c with kind's default
// node image (which kind pulls when missing).
type Options struct {
	// Workers is the number of worker nodes on kind's upstream image (default 3). Clusters of
	// the offline node image have one node (see nodeimage.ClusterConfig).
	Workers int
	// NodeImage is the node image (default: nodeimage.DefaultImage when present, else kind's
	// own default for its version). A gauntlet/kind-node image gets nodeimage's configuration.
	NodeImage string
	// Images are assembled offline and loaded into every node (e.g. OperatorImage, ValkeyImage).
	Images []Image
	// Mapped are images assembled from the target's image mapping (WithMappedImages), loaded
	// only into clusters of the offline node image; Unmapped are the target's images that no
	// rule maps, which such a cluster could never run.
	Mapped   []Image
	Unmapped []string
	// ChaosMesh installs Chaos Mesh (the faults of campaigns on kind) from the build in
	// ChaosMeshDir (default DefaultChaosMeshDir; `make chaosmesh`): its images assembled
	// offline and loaded with Images, its rendered chart applied; Create returns once its
	// webhooks answer.
	ChaosMesh    bool
	ChaosMeshDir string
	// StateDir is the state root; clusters are recorded in StateDir/kind for GC (default
	// $GAUNTLET_STATE_DIR, else /var/lib/gauntlet, as the embedded clusters').
	StateDir string
	// NoRoutes skips the host route to the pod subnet (which needs root).
	NoRoutes bool
	// KubeconfigDir holds one kubeconfig per cluster (default: the cluster's record folder).
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

// offlineNodeImage reports the node image to use and whether it is Gauntlet's offline one
// (package nodeimage): opts.NodeImage when set, else nodeimage.DefaultImage when the local
// engine has it, else kind's upstream image.
func offlineNodeImage(ctx context.Context, opts Options) (string, bool, error) {
	if opts.NodeImage != "" {
		return opts.NodeImage, strings.HasPrefix(opts.NodeImage, "gauntlet/kind-node:"), nil
	}
	ok, err := NodeImagePresent(ctx, nodeimage.DefaultImage)
	if err != nil {
		return "", false, err
	}
	if ok {
		return nodeimage.DefaultImage, true, nil
	}
	return "", false, nil
}

// Create makes a kind cluster called name and returns once its control plane is
// ready, with opts.Images loaded into its nodes and, on the offline node image, a host
// route to its pod subnet. kind's library cannot be interrupted: ctx is checked before
// it starts. The cluster is recorded (owner process, pod subnet, route) under
// StateDir/kind before anything is made, so that GC removes it after a SIGKILL.
func (p Provider) Create(ctx context.Context, name string) (cluster.Cluster, error) {
	opts := p.Options.withDefaults()
	if err := Available(ctx); err != nil {
		return nil, err
	}
	image, offline, err := offlineNodeImage(ctx, opts)
	if err != nil {
		return nil, err
	}
	if offline {
		if opts, err = offlineImages(opts); err != nil {
			return nil, err
		}
	}
	var chaos *chaosMesh
	if opts.ChaosMesh {
		if chaos, err = loadChaosMesh(opts.ChaosMeshDir); err != nil {
			return nil, err
		}
		imgs, err := chaos.images()
		if err != nil {
			return nil, err
		}
		opts.Images = append(slices.Clone(opts.Images), imgs...)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reg := registry{dir: recordsDir(opts.StateDir)}
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker())
	if old, ok := reg.abandoned(name); ok {
		// A cluster of this name left by a killed run: remove it as GC would.
		opts.Log.Info("removing an abandoned kind cluster of the same name", "name", name, "owner", old.Owner)
		if err := purge(ctx, kp, reg, old); err != nil {
			return nil, err
		}
	}
	rec, err := reg.add(name, offline)
	if err != nil {
		return nil, err
	}
	dir := reg.clusterDir(name)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if opts.KubeconfigDir != "" {
		kubeconfig = filepath.Join(opts.KubeconfigDir, name+".kubeconfig")
	}
	rec.Kubeconfig = kubeconfig
	var cfg *kindv1.Cluster
	if offline {
		// One node: the image's bridge CNI gives a node the whole pod subnet and routes
		// nothing between nodes (see nodeimage.ClusterConfig), so opts.Workers is not used.
		cfg = nodeimage.ClusterConfig(image, 0)
		cfg.Networking.PodSubnet = rec.PodSubnet
		cni := filepath.Join(dir, "cni")
		conf, err := nodeimage.BridgeCNIConfig(rec.PodSubnet)
		if err == nil {
			err = os.MkdirAll(cni, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(cni, "10-bridge.conflist"), conf, 0o644)
		}
		if err != nil {
			reg.remove(name)
			return nil, fmt.Errorf("kind: %s: CNI configuration: %w", name, err)
		}
		cfg.Nodes[0].ExtraMounts = append(cfg.Nodes[0].ExtraMounts, kindv1.Mount{ContainerPath: "/etc/cni/net.d", HostPath: cni, Readonly: true})
		cfg.Nodes[0].Labels = map[string]string{"topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "local"}
	} else {
		cfg = Config(opts)
	}
	rec.NodeImage = image
	if err := reg.write(rec); err != nil {
		reg.remove(name)
		return nil, err
	}
	start := time.Now()
	opts.Log.Info("creating kind cluster", "name", name, "nodeImage", imageOrDefault(image), "offline", offline, "podSubnet", rec.PodSubnet)
	createOpts := []kindcluster.CreateOption{
		kindcluster.CreateWithV1Alpha4Config(cfg),
		kindcluster.CreateWithKubeconfigPath(kubeconfig),
		kindcluster.CreateWithWaitForReady(opts.WaitForReady),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
	}
	if image != "" {
		createOpts = append(createOpts, kindcluster.CreateWithNodeImage(image))
	}
	c := &Cluster{name: name, kubeconfig: kubeconfig, kp: kp, reg: reg, rec: rec}
	fail := func(err error) (cluster.Cluster, error) {
		if derr := c.Delete(context.WithoutCancel(ctx)); derr != nil {
			opts.Log.Warn("deleting a cluster whose creation failed", "name", name, "err", derr)
		}
		return nil, err
	}
	if err := kp.Create(name, createOpts...); err != nil {
		return fail(fmt.Errorf("kind: create %s: %w", name, err))
	}
	created := time.Since(start)
	c.rest, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fail(fmt.Errorf("kind: read kubeconfig of %s: %w", name, err))
	}
	// kind returns once the node is Ready, before kube-proxy has written the Service rules: a
	// pod started then (the operator) dials the API server's Service address, which leaves the
	// node by its default route (seen here: a TLS answer from outside, "x509: cannot validate
	// certificate for 10.96.0.1", and an operator restart the health oracle would count).
	// CoreDNS turns Ready only once it has listed Services through that address.
	if err := waitCoreDNS(ctx, c.rest, opts.WaitForReady); err != nil {
		return fail(fmt.Errorf("kind: %s: %w", name, err))
	}
	dnsReady := time.Since(start)
	ns, err := kp.ListInternalNodes(name)
	if err != nil {
		return fail(fmt.Errorf("kind: nodes of %s: %w", name, err))
	}
	if len(opts.Images) > 0 {
		t0 := time.Now()
		archive := filepath.Join(dir, "images.tar")
		if err := WriteArchive(archive, opts.Images); err != nil {
			return fail(err)
		}
		err := loadArchive(archive, ns)
		os.Remove(archive)
		if err != nil {
			return fail(err)
		}
		opts.Log.Info("images loaded", "name", name, "images", imageRefs(opts.Images), "took", time.Since(t0).Round(time.Millisecond))
	}
	if offline {
		c.preloaded = imageRefs(opts.Images)
	}
	if offline && !opts.NoRoutes {
		ip, _, err := ns[0].IP()
		if err != nil {
			return fail(fmt.Errorf("kind: address of node %s: %w", ns[0].String(), err))
		}
		c.rec.NodeIP = ip
		if err := reg.write(c.rec); err != nil {
			return fail(err)
		}
		if err := ipRoute(ctx, "replace", c.rec.PodSubnet, ip); err != nil {
			return fail(fmt.Errorf("kind: route %s to the pods of %s via its node %s (the monitors dial pod IPs from this host; Options.NoRoutes opts out): %w", c.rec.PodSubnet, name, ip, err))
		}
	}
	if chaos != nil {
		if err := chaos.install(ctx, c.rest, pauseImage(ctx, ns[0]), opts.WaitForReady, opts.Log); err != nil {
			return fail(fmt.Errorf("kind: %s: %w", name, err))
		}
	}
	if offline {
		vctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		c.stop = stop
		go prepareHostPathVolumes(vctx, c.rest, ns[0], opts.Log)
	}
	opts.Log.Info("kind cluster ready", "name", name, "created", created.Round(time.Millisecond), "dnsReady", dnsReady.Round(time.Millisecond), "took", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// waitCoreDNS waits until every CoreDNS pod (k8s-app=kube-dns in kube-system) is Ready.
func waitCoreDNS(ctx context.Context, cfg *rest.Config, limit time.Duration) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	why := "no CoreDNS pod yet"
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			why = err.Error()
		} else if len(pods.Items) > 0 {
			ready := 0
			for _, p := range pods.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready == len(pods.Items) {
				return nil
			}
			why = fmt.Sprintf("%d of %d CoreDNS pods Ready", ready, len(pods.Items))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("CoreDNS not Ready within %s (the Service rules kube-proxy writes): %s", limit, why)
}

func imageOrDefault(image string) string {
	if image == "" {
		return DefaultNodeImage + " (kind's default)"
	}
	return image
}

func imageRefs(images []Image) []string {
	var out []string
	for _, i := range images {
		out = append(out, i.Refs...)
	}
	return out
}

// Cluster is a running kind cluster.
type Cluster struct {
	name, kubeconfig string
	rest             *rest.Config
	kp               *kindcluster.Provider
	reg              registry
	rec              record
	stop             func() // ends the host-path volume helper
	preloaded        []string
}

// PreloadedImages are the images loaded into the nodes of a cluster of the offline node
// image, which pulls nothing (cluster.Preloaded); none on kind's upstream image.
func (c *Cluster) PreloadedImages() []string { return c.preloaded }

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.name }

// Kubeconfig is the path of the cluster's admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// SharesHostKernel reports true: kind's nodes are containers on this machine's kernel.
func (c *Cluster) SharesHostKernel() bool { return true }

// RESTConfig is a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// PodSubnet is the cluster's pod network ("" on kind's upstream node image, whose kindnetd
// gives each node a range of kind's default 10.244.0.0/16).
func (c *Cluster) PodSubnet() string { return c.rec.PodSubnet }

// Delete removes the cluster's containers, its host route, kubeconfig and record.
func (c *Cluster) Delete(ctx context.Context) error {
	if c.stop != nil {
		c.stop()
	}
	return purge(ctx, c.kp, c.reg, c.rec)
}

// purge deletes a recorded cluster: its nodes (kind), its route, its folder and record.
func purge(ctx context.Context, kp *kindcluster.Provider, reg registry, rec record) error {
	var errs []error
	if err := kp.Delete(rec.Name, rec.Kubeconfig); err != nil {
		errs = append(errs, fmt.Errorf("kind: delete %s: %w", rec.Name, err))
	}
	if rec.NodeIP != "" && rec.PodSubnet != "" {
		if err := ipRoute(ctx, "del", rec.PodSubnet, rec.NodeIP); err != nil && !strings.Contains(err.Error(), "No such process") {
			errs = append(errs, fmt.Errorf("kind: remove the route to %s's pods: %w", rec.Name, err))
		}
	}
	if rec.Kubeconfig != "" {
		_ = os.Remove(rec.Kubeconfig)
	}
	if len(errs) == 0 {
		reg.remove(rec.Name)
	}
	return errors.Join(errs...)
}

func ipRoute(ctx context.Context, verb, subnet, via string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "ip", "route", verb, subnet, "via", via).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip route %s %s via %s: %w: %s", verb, subnet, via, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// GC removes every kind cluster recorded under stateDir (see StateRoot) whose owning process
// is gone (a campaign killed with SIGKILL): its node containers, host route, kubeconfig and
// record. Clusters whose owner runs, and kind clusters Gauntlet did not record, are left alone.
// It returns the names of the clusters it removed.
func GC(ctx context.Context, stateDir string) ([]string, error) {
	reg := registry{dir: recordsDir(stateDir)}
	unlock, err := reg.lock()
	if err != nil {
		return nil, err
	}
	recs, err := reg.list()
	unlock()
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	var dead []record
	for _, r := range recs {
		if !r.ownerAlive() {
			dead = append(dead, r)
		}
	}
	if len(dead) == 0 {
		return nil, nil
	}
	if err := Available(ctx); err != nil {
		return nil, fmt.Errorf("kind: %d abandoned kind clusters are recorded in %s, but: %w", len(dead), reg.dir, err)
	}
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker())
	var removed []string
	var errs []error
	for _, r := range dead {
		if err := purge(ctx, kp, reg, r); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "kind:"+r.Name)
	}
	return removed, errors.Join(errs...)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

var (
	_ cluster.Provider = Provider{}
	_ cluster.Cluster  = (*Cluster)(nil)
)
