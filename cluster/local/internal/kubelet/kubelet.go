// Package kubelet is the node agent of the embedded cluster: a
// virtual-kubelet node whose provider runs each pod container as a local
// process (package container) in the pod's own network namespace (package
// podnet), with the pod's volumes at their mount paths, restart policy,
// probes, graceful deletion, logs, exec and port-forward as on a real node.
// Images become local commands through package images; an image without a
// mapping is simulated (Running and Ready, no process).
package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/images"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/podnet"
)

// KubeletVersion is the version the nodes report (the control plane's).
const KubeletVersion = "v1.35.4"

// Defaults of the restart back-off, as the kubelet's: the first restart is
// immediate, the next waits RestartBackOff, doubling up to MaxRestartBackOff.
const (
	DefaultRestartBackOff    = 10 * time.Second
	DefaultMaxRestartBackOff = 5 * time.Minute
)

// stopGrace is how long Stop lets containers handle SIGTERM before SIGKILL.
const stopGrace = time.Second

// readyTimeout bounds how long Start waits for the node to register.
const readyTimeout = time.Minute

// ErrStopped is returned by calls on a node that has been stopped.
var ErrStopped = errors.New("kubelet: node is stopped")

// ErrSimulated is returned by operations that need a process (exec, kill,
// pause) on a simulated container.
var ErrSimulated = errors.New("container is simulated: no local command is mapped for its image, so it has no process")

// ErrNotRunning is returned by operations that need a running container.
var ErrNotRunning = errors.New("container is not running")

// ErrNotFound is returned for an unknown pod or container.
var ErrNotFound = errors.New("not found on this node")

// Config describes one node.
type Config struct {
	// NodeName is the Node object's name; required.
	NodeName string
	// Labels are added to the node's labels (kubernetes.io/hostname, os and
	// arch are always set).
	Labels map[string]string
	// Client is authenticated as system:node:<NodeName> (group system:nodes);
	// required.
	Client kubernetes.Interface
	// Address is the node's InternalIP: the host address on which the API
	// server reaches the kubelet API and pods reach the host; required.
	Address netip.Addr
	// Port is the kubelet API's TLS port, reported in the node's daemon
	// endpoints; required.
	Port int
	// TLS holds the serving certificate and ClientCAs; client certificates
	// are required and verified against ClientCAs. Required.
	TLS *tls.Config
	// AllowedClientCNs are the only client certificate common names the
	// kubelet API accepts (the API server's kubelet client); empty means any
	// certificate that ClientCAs verifies.
	AllowedClientCNs []string
	// Capacity is cpu, memory, pods and ephemeral-storage; allocatable is the
	// same.
	Capacity corev1.ResourceList
	// StateDir is this node's folder: pods/<uid>/{volumes,containers,logs,etc}.
	// Required.
	StateDir string
	// Network gives each pod its network namespace; required.
	Network *podnet.Network
	// Images maps images to local commands; nil means images.Default with no
	// operator binary.
	Images *images.Mapping
	// DNS are the cluster DNS server addresses written into pods'
	// /etc/resolv.conf (dnsPolicy ClusterFirst); empty leaves pods with the
	// host's resolv.conf, as a kubelet without clusterDNS does.
	DNS []netip.Addr
	// ClusterDomain is the cluster's DNS domain; empty means "cluster.local".
	ClusterDomain string
	// RestartBackOff is the first crash-loop back-off; zero means
	// DefaultRestartBackOff (10s, the kubelet's). Tests may shorten it.
	RestartBackOff time.Duration
	// MaxRestartBackOff caps the back-off; zero means DefaultMaxRestartBackOff.
	MaxRestartBackOff time.Duration
	// Log receives the node's logs; nil discards them.
	Log *slog.Logger
}

func (c *Config) validate() error {
	var missing []string
	if c.NodeName == "" {
		missing = append(missing, "NodeName")
	}
	if c.Client == nil {
		missing = append(missing, "Client")
	}
	if !c.Address.IsValid() {
		missing = append(missing, "Address")
	}
	if c.Port <= 0 || c.Port > 65535 {
		missing = append(missing, "Port")
	}
	if c.TLS == nil {
		missing = append(missing, "TLS")
	} else if c.TLS.ClientCAs == nil {
		missing = append(missing, "TLS.ClientCAs")
	}
	if c.StateDir == "" {
		missing = append(missing, "StateDir")
	}
	if c.Network == nil {
		missing = append(missing, "Network")
	}
	if len(missing) > 0 {
		return fmt.Errorf("kubelet: config for node %q lacks %s", c.NodeName, strings.Join(missing, ", "))
	}
	return nil
}

// Node is a running node agent.
type Node struct {
	cfg  Config
	log  *slog.Logger
	prov *provider
	vk   *nodeutil.Node
	eb   record.EventBroadcaster

	cancel   context.CancelFunc
	stopOnce sync.Once
	stopped  chan struct{}
	stopErr  error
}

// Start registers the node and returns once it is Ready. The node runs until
// ctx is cancelled or Stop is called; both stop every container.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Images == nil {
		cfg.Images = images.Default(images.Options{})
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	if cfg.RestartBackOff <= 0 {
		cfg.RestartBackOff = DefaultRestartBackOff
	}
	if cfg.MaxRestartBackOff <= 0 {
		cfg.MaxRestartBackOff = DefaultMaxRestartBackOff
	}
	if cfg.MaxRestartBackOff < cfg.RestartBackOff {
		cfg.MaxRestartBackOff = cfg.RestartBackOff
	}
	log := cfg.Log.With("node", cfg.NodeName)
	if err := os.MkdirAll(podsDir(cfg.StateDir), 0o755); err != nil {
		return nil, fmt.Errorf("kubelet: node %s: state folder: %w", cfg.NodeName, err)
	}

	tlsCfg := cfg.TLS.Clone()
	tlsCfg.ClientAuth = tls.RequireAndVerifyClientCert
	if tlsCfg.MinVersion < tls.VersionTLS12 {
		tlsCfg.MinVersion = tls.VersionTLS12
	}

	eb := record.NewBroadcaster()
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	recorder := eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n := &Node{cfg: cfg, log: log, eb: eb, cancel: cancel, stopped: make(chan struct{})}
	nodeSpec := buildNode(cfg)
	mux := http.NewServeMux()

	var prov *provider
	newProvider := func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		prov = newProviderFor(runCtx, cfg, log, recorder, pc)
		return prov, nodeProvider{}, nil
	}
	configure := func(nc *nodeutil.NodeConfig) error {
		nc.Client = cfg.Client
		nc.NodeSpec = *nodeSpec
		nc.HTTPListenAddr = net.JoinHostPort(cfg.Address.String(), strconv.Itoa(cfg.Port))
		nc.Handler = requireClientCN(cfg.AllowedClientCNs, mux, log)
		nc.TLSConfig = tlsCfg
		nc.EventRecorder = recorder
		nc.NumWorkers = 4
		nc.InformerResyncPeriod = time.Minute
		// Environment variables are resolved by the provider at each container
		// start (VK's resolver knows no pod IP and drops resourceFieldRef).
		nc.SkipDownwardAPIResolution = true
		// kubectl exec -it and port-forward sessions may idle (the kubelet's
		// streamingConnectionIdleTimeout is 4h).
		nc.StreamIdleTimeout = 4 * time.Hour
		nc.StreamCreationTimeout = 4 * time.Hour
		nc.NodeStatusUpdateErrorHandler = func(ctx context.Context, err error) error {
			if !apierrors.IsNotFound(err) {
				return err
			}
			log.Warn("node object vanished; registering it again")
			_, cerr := cfg.Client.CoreV1().Nodes().Create(ctx, buildNode(cfg), metav1.CreateOptions{})
			return cerr
		}
		return nil
	}
	vk, err := nodeutil.NewNode(cfg.NodeName, newProvider, configure, nodeutil.AttachProviderRoutes(mux))
	if err != nil {
		cancel()
		eb.Shutdown()
		return nil, fmt.Errorf("kubelet: node %s: %w", cfg.NodeName, err)
	}
	n.vk, n.prov = vk, prov

	go func() {
		if err := vk.Run(withVKLogger(runCtx, log)); err != nil && runCtx.Err() == nil {
			log.Error("node controllers stopped", "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
		case <-runCtx.Done():
		}
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		_ = n.Stop(sctx)
	}()

	wctx, wcancel := context.WithTimeout(ctx, readyTimeout)
	defer wcancel()
	if err := vk.WaitReady(wctx, 0); err != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		_ = n.Stop(sctx)
		return nil, fmt.Errorf("kubelet: node %s did not become ready (check that the API server is up and that system:node:%s may register its node, list/watch pods, secrets, configmaps and services): %w", cfg.NodeName, cfg.NodeName, err)
	}
	log.Info("node ready", "address", cfg.Address, "port", cfg.Port)
	return n, nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// Stop stops every container (SIGKILL after a short grace), removes the pod
// sandboxes and stops the node's controllers. Pod folders stay (the cluster
// removes its state folder); pod statuses in the API are left as they were,
// as when a real node goes down. It is idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		go func() {
			defer close(n.stopped)
			// Silence the pods and stop the controllers first, so that nothing
			// starts pods again or reports the killed containers as failures.
			n.prov.quiesce()
			n.cancel()
			select {
			case <-n.vk.Done():
			case <-time.After(10 * time.Second):
				n.log.Warn("node controllers did not stop within 10s")
			}
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			n.stopErr = n.prov.shutdown(sctx)
			n.eb.Shutdown()
		}()
	})
	select {
	case <-n.stopped:
		return n.stopErr
	case <-ctx.Done():
		return fmt.Errorf("kubelet: stop node %s: %w", n.cfg.NodeName, ctx.Err())
	}
}

// CrashContainer kills a container's process with SIGKILL; the pod's restart
// policy then applies as on a real node.
func (n *Node) CrashContainer(ctx context.Context, namespace, pod, container string) error {
	return n.prov.signalContainer(ctx, namespace, pod, container, opCrash)
}

// PauseContainer freezes a container's processes (SIGSTOP).
func (n *Node) PauseContainer(ctx context.Context, namespace, pod, container string) error {
	return n.prov.signalContainer(ctx, namespace, pod, container, opPause)
}

// ResumeContainer thaws a paused container (SIGCONT).
func (n *Node) ResumeContainer(ctx context.Context, namespace, pod, container string) error {
	return n.prov.signalContainer(ctx, namespace, pod, container, opResume)
}

// PodSandbox returns the network sandbox of a pod running on this node.
func (n *Node) PodSandbox(namespace, pod string) (podnet.Sandbox, bool) {
	return n.prov.sandboxOf(namespace, pod)
}

// requireClientCN lets through only requests whose verified client
// certificate has one of the allowed common names.
func requireClientCN(allowed []string, next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "Unauthorized: a client certificate signed by the cluster CA is required", http.StatusUnauthorized)
			return
		}
		cn := r.TLS.PeerCertificates[0].Subject.CommonName
		if len(allowed) > 0 && !slices.Contains(allowed, cn) {
			log.Warn("kubelet API request refused", "user", cn, "path", r.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not use the kubelet API", cn), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// nodeProvider keeps the node Ready while the agent runs.
type nodeProvider struct{}

func (nodeProvider) Ping(ctx context.Context) error                       { return ctx.Err() }
func (nodeProvider) NotifyNodeStatus(context.Context, func(*corev1.Node)) {}

// buildNode is the Node object the agent registers.
func buildNode(cfg Config) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:      cfg.NodeName,
		corev1.LabelOSStable:      "linux",
		corev1.LabelArchStable:    "amd64",
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
	}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	capacity := cfg.Capacity.DeepCopy()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName, Labels: labels},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: cfg.Address.String()},
				{Type: corev1.NodeHostName, Address: cfg.NodeName},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(cfg.Port)}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               readTrimmed("/etc/machine-id"),
				BootID:                  readTrimmed("/proc/sys/kernel/random/boot_id"),
				KernelVersion:           readTrimmed("/proc/sys/kernel/osrelease"),
				OSImage:                 osImage(),
				ContainerRuntimeVersion: "gauntlet://local-process",
				KubeletVersion:          KubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            "amd64",
			},
		},
	}
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME from /etc/os-release.
func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}
