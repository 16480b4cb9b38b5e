package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FaultLabel labels every Chaos Mesh object the Chaos Mesh back end creates; its
// value is the object's name (ChaosObjectName of Spec.Name). RemoveAll, or
// `kubectl delete podchaos,networkchaos -A -l gauntlet.dev/fault`, finds leftovers by it.
const FaultLabel = "gauntlet.dev/fault"

// Annotations on the objects: the fault's unsanitized name and its kind.
const (
	faultNameAnnotation = "gauntlet.dev/fault-name"
	faultKindAnnotation = "gauntlet.dev/fault-kind"
)

// ChaosMeshInstallCommand installs Chaos Mesh into a kind cluster (containerd
// runtime) with its Helm chart.
const ChaosMeshInstallCommand = "helm repo add chaos-mesh https://charts.chaos-mesh.org && " +
	"helm install chaos-mesh chaos-mesh/chaos-mesh --namespace chaos-mesh --create-namespace " +
	"--set chaosDaemon.runtime=containerd --set chaosDaemon.socketPath=/run/containerd/containerd.sock --wait"

// ErrChaosMeshMissing is returned when the cluster does not serve the Chaos Mesh
// resources this back end creates (podchaos and networkchaos in chaos-mesh.org/v1alpha1).
var ErrChaosMeshMissing = errors.New("Chaos Mesh is not installed in the cluster (podchaos.chaos-mesh.org and networkchaos.chaos-mesh.org must be served); install it with its Helm chart: " + ChaosMeshInstallCommand)

// Chaos Mesh's resources this back end needs, in chaos-mesh.org/v1alpha1.
var chaosMeshResources = []string{"podchaos", "networkchaos"}

// Defaults of the Chaos Mesh back end.
const (
	defaultChaosMeshTimeout = 2 * time.Minute
	defaultChaosMeshPoll    = 250 * time.Millisecond
	// The grace period Kubernetes gives a pod whose spec names none.
	defaultPodGrace = int64(corev1.DefaultTerminationGracePeriodSeconds)
)

// ChaosMesh injects faults into any cluster where Chaos Mesh runs (kind clusters in
// particular) by creating Chaos Mesh objects: PodChaos for ContainerCrash
// (container-kill), PodKill (pod-kill) and PodFailure (pod-failure), NetworkChaos
// for Partition, APIServerPartition, Delay and Loss. Pods are selected by name,
// mode "all". It holds a controller-runtime client built from a rest.Config by
// NewChaosMesh and is safe for concurrent use.
//
// Differences from Native worth knowing: Chaos Mesh's pod-failure swaps every
// container of a pod for a pause container (the processes restart when the fault
// is removed) rather than freezing one process, so a PodFailure that names one
// container of a multi-container pod is unsupported; Delay, Loss and Duration on
// network faults are supported where the nodes' kernel has netem (WithoutNetem).
type ChaosMesh struct {
	c       client.Client
	log     *slog.Logger
	timeout time.Duration
	poll    time.Duration
	// noNetem, when set, says why Delay and Loss cannot be injected.
	noNetem string
}

// ChaosMeshOption configures NewChaosMesh.
type ChaosMeshOption func(*ChaosMesh)

// WithChaosMeshLogger sets the logger (default: discarded).
func WithChaosMeshLogger(l *slog.Logger) ChaosMeshOption {
	return func(m *ChaosMesh) {
		if l != nil {
			m.log = l
		}
	}
}

// WithChaosMeshTimeout bounds each wait for Chaos Mesh (an injection to be
// reported, an object to be gone) on top of the caller's context (default 2m).
func WithChaosMeshTimeout(d time.Duration) ChaosMeshOption {
	return func(m *ChaosMesh) {
		if d > 0 {
			m.timeout = d
		}
	}
}

// WithoutNetem declares that the nodes' kernel has no netem queueing discipline, which
// Chaos Mesh's delay and loss are made of (reason says why: Netem's answer): they leave
// Capabilities and Inject refuses them with ErrUnsupported naming reason, instead of a
// NetworkChaos that Chaos Mesh would never manage to inject.
func WithoutNetem(reason string) ChaosMeshOption {
	return func(m *ChaosMesh) { m.noNetem = reason }
}

// NewChaosMesh returns the Chaos Mesh back end for the cluster cfg reaches, after
// checking through discovery that Chaos Mesh is installed (ErrChaosMeshMissing if not).
func NewChaosMesh(ctx context.Context, cfg *rest.Config, opts ...ChaosMeshOption) (*ChaosMesh, error) {
	if cfg == nil {
		return nil, errors.New("faults: NewChaosMesh needs a rest.Config (cluster.Cluster.RESTConfig)")
	}
	dcfg := rest.CopyConfig(cfg)
	if dcfg.Timeout == 0 {
		dcfg.Timeout = 30 * time.Second // discovery takes no context
	}
	dc, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return nil, fmt.Errorf("faults: discovery client for %s: %w", cfg.Host, err)
	}
	if err := CheckChaosMesh(ctx, dc); err != nil {
		return nil, err
	}
	scheme, err := chaosMeshScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("faults: client for %s: %w", cfg.Host, err)
	}
	return newChaosMesh(c, opts...), nil
}

func newChaosMesh(c client.Client, opts ...ChaosMeshOption) *ChaosMesh {
	m := &ChaosMesh{c: c, log: slog.New(slog.DiscardHandler), timeout: defaultChaosMeshTimeout, poll: defaultChaosMeshPoll}
	for _, o := range opts {
		o(m)
	}
	return m
}

// chaosMeshScheme knows the Kubernetes built-in types and Chaos Mesh's.
func chaosMeshScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("faults: scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("faults: scheme: %w", err)
	}
	return s, nil
}

// CheckChaosMesh reports whether the API server behind d serves podchaos and
// networkchaos in chaos-mesh.org/v1alpha1: nil if it does, ErrChaosMeshMissing
// (naming what is missing) if not, another error if the server cannot be asked.
func CheckChaosMesh(ctx context.Context, d discovery.DiscoveryInterface) error {
	gv := v1alpha1.SchemeGroupVersion.String()
	type answer struct {
		list *metav1.APIResourceList
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		l, err := d.ServerResourcesForGroupVersion(gv)
		ch <- answer{l, err}
	}()
	var a answer
	select {
	case <-ctx.Done():
		return fmt.Errorf("faults: check Chaos Mesh: %w", ctx.Err())
	case a = <-ch:
	}
	if apierrors.IsNotFound(a.err) {
		return fmt.Errorf("faults: %w (the API server does not serve %s)", ErrChaosMeshMissing, gv)
	}
	if a.err != nil {
		return fmt.Errorf("faults: check Chaos Mesh (discovery of %s): %w", gv, a.err)
	}
	var missing []string
	for _, r := range chaosMeshResources {
		if !slices.ContainsFunc(a.list.APIResources, func(ar metav1.APIResource) bool { return ar.Name == r }) {
			missing = append(missing, r+"."+v1alpha1.SchemeGroupVersion.Group)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("faults: %w (%s serves no %s)", ErrChaosMeshMissing, gv, strings.Join(missing, ", "))
	}
	return nil
}

var (
	podChaosActions = map[Kind]v1alpha1.PodChaosAction{
		ContainerCrash: v1alpha1.ContainerKillAction,
		PodKill:        v1alpha1.PodKillAction,
		PodFailure:     v1alpha1.PodFailureAction,
	}
	networkChaosActions = map[Kind]v1alpha1.NetworkChaosAction{
		Partition:          v1alpha1.PartitionAction,
		APIServerPartition: v1alpha1.PartitionAction,
		Delay:              v1alpha1.DelayAction,
		Loss:               v1alpha1.LossAction,
	}
)

// Capabilities lists every kind Chaos Mesh has an action for, less Delay and Loss
// without netem (WithoutNetem).
func (m *ChaosMesh) Capabilities() []Kind {
	if m.noNetem != "" {
		return []Kind{ContainerCrash, PodKill, PodFailure, Partition, APIServerPartition}
	}
	return []Kind{ContainerCrash, PodKill, PodFailure, Partition, APIServerPartition, Delay, Loss}
}

// ChaosObjectName is the name of the Chaos Mesh object for a fault called name: a
// DNS-1123 label. A name that already is one is kept; any other is lowercased, its
// other characters turned into '-', cut to fit, and suffixed with a hash of the
// original so distinct names stay distinct. The same name always gives the same result.
func ChaosObjectName(name string) string {
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:8]
	var b strings.Builder
	dash := true // no leading '-'
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	base := b.String()
	if limit := validation.DNS1123LabelMaxLength - len(suffix) - 1; len(base) > limit {
		base = base[:limit]
	}
	base = strings.TrimRight(base, "-")
	if base == "" {
		base = "fault"
	}
	return base + "-" + suffix
}

// chaosDuration formats d the way Chaos Mesh's duration fields accept it (a whole
// number of ms, us or ns, which both time.ParseDuration and the CRD patterns take).
func chaosDuration(d time.Duration) string {
	switch {
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	default:
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
}

// validateChaosMesh checks s beyond Spec.Validate: what Chaos Mesh needs of it.
func validateChaosMesh(s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if slices.Contains(s.Pods, "") || slices.Contains(s.Peers, "") {
		return fmt.Errorf("%w: %s %q names an empty pod", ErrInvalid, s.Kind, s.Name)
	}
	if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
		return fmt.Errorf("%w: %s %q: namespace %q: %s", ErrInvalid, s.Kind, s.Name, s.Namespace, strings.Join(errs, "; "))
	}
	if s.Duration < 0 {
		return fmt.Errorf("%w: %s %q has a negative duration %v", ErrInvalid, s.Kind, s.Name, s.Duration)
	}
	if s.Grace != nil && *s.Grace < 0 {
		return fmt.Errorf("%w: pod-kill %q has a negative grace period %d", ErrInvalid, s.Name, *s.Grace)
	}
	for _, p := range s.Pods {
		if slices.Contains(s.Peers, p) {
			return fmt.Errorf("%w: %s %q has pod %s on both sides", ErrInvalid, s.Kind, s.Name, p)
		}
	}
	switch s.Kind {
	case Delay:
		if s.Latency <= 0 {
			return fmt.Errorf("%w: delay %q needs a positive latency (Spec.Latency)", ErrInvalid, s.Name)
		}
		if s.Jitter < 0 {
			return fmt.Errorf("%w: delay %q has a negative jitter %v", ErrInvalid, s.Name, s.Jitter)
		}
	case Loss:
		if math.IsNaN(s.LossPercent) || s.LossPercent <= 0 || s.LossPercent > 100 {
			return fmt.Errorf("%w: loss %q needs Spec.LossPercent in (0, 100], not %v", ErrInvalid, s.Name, s.LossPercent)
		}
	}
	return nil
}

// uniq returns names without repeats, first occurrence first.
func uniq(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// podSelector selects exactly the named pods of ns, all of them.
func podSelector(ns string, pods []string) v1alpha1.PodSelector {
	return v1alpha1.PodSelector{
		Selector: v1alpha1.PodSelectorSpec{
			GenericSelectorSpec: v1alpha1.GenericSelectorSpec{Namespaces: []string{ns}},
			Pods:                map[string][]string{ns: uniq(pods)},
		},
		Mode: v1alpha1.AllMode,
	}
}

func objectMeta(s Spec) metav1.ObjectMeta {
	name := ChaosObjectName(s.Name)
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   s.Namespace,
		Labels:      map[string]string{FaultLabel: name},
		Annotations: map[string]string{faultNameAnnotation: s.Name, faultKindAnnotation: string(s.Kind)},
	}
}

// PodChaosFor builds the PodChaos for a ContainerCrash (container-kill), PodKill
// (pod-kill) or PodFailure (pod-failure, bounded by Spec.Duration if set). It is
// pure: PodKill needs Spec.Grace and ContainerCrash Spec.Container, which Inject
// fills in from the pods (their own grace period, their first container) when unset.
// A PodFailure naming a container is ErrUnsupported: Chaos Mesh fails whole pods.
func PodChaosFor(s Spec) (*v1alpha1.PodChaos, error) {
	action, ok := podChaosActions[s.Kind]
	if !ok {
		if _, net := networkChaosActions[s.Kind]; net {
			return nil, fmt.Errorf("%w: %s is a NetworkChaos fault, not a PodChaos one", ErrInvalid, s.Kind)
		}
		return nil, fmt.Errorf("%w: unknown fault kind %q", ErrUnsupported, s.Kind)
	}
	if err := validateChaosMesh(s); err != nil {
		return nil, err
	}
	obj := &v1alpha1.PodChaos{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindPodChaos},
		ObjectMeta: objectMeta(s),
		Spec: v1alpha1.PodChaosSpec{
			ContainerSelector: v1alpha1.ContainerSelector{PodSelector: podSelector(s.Namespace, s.Pods)},
			Action:            action,
		},
	}
	switch s.Kind {
	case PodKill:
		if s.Grace == nil {
			return nil, fmt.Errorf("%w: pod-kill %q on Chaos Mesh needs an explicit grace period (Spec.Grace)", ErrInvalid, s.Name)
		}
		obj.Spec.GracePeriod = *s.Grace
	case ContainerCrash:
		if s.Container == "" {
			return nil, fmt.Errorf("%w: container-crash %q on Chaos Mesh needs a container name (Spec.Container)", ErrInvalid, s.Name)
		}
		obj.Spec.ContainerNames = []string{s.Container}
	case PodFailure:
		if s.Container != "" {
			return nil, fmt.Errorf("%w: pod-failure %q names container %q, but Chaos Mesh's pod-failure fails every container of a pod; leave Spec.Container empty", ErrUnsupported, s.Name, s.Container)
		}
		if s.Duration > 0 {
			d := chaosDuration(s.Duration)
			obj.Spec.Duration = &d
		}
	}
	return obj, nil
}

// NetworkChaosFor builds the NetworkChaos for a Partition (action partition,
// direction both, target Spec.Peers, packets dropped), a Delay (Spec.Latency ±
// Spec.Jitter) or a Loss (Spec.LossPercent). Delay and Loss act on what Spec.Pods
// send (direction to), towards Spec.Peers only when Peers are given. Spec.Duration,
// if set, bounds the fault. APIServerPartition is built by APIServerPartitionFor.
func NetworkChaosFor(s Spec) (*v1alpha1.NetworkChaos, error) {
	switch s.Kind {
	case Partition, Delay, Loss:
	case APIServerPartition:
		return nil, fmt.Errorf("%w: apiserver-partition %q needs the API server's addresses: build it with APIServerPartitionFor", ErrInvalid, s.Name)
	default:
		if _, pod := podChaosActions[s.Kind]; pod {
			return nil, fmt.Errorf("%w: %s is a PodChaos fault, not a NetworkChaos one", ErrInvalid, s.Kind)
		}
		return nil, fmt.Errorf("%w: unknown fault kind %q", ErrUnsupported, s.Kind)
	}
	if err := validateChaosMesh(s); err != nil {
		return nil, err
	}
	obj := networkChaos(s)
	if len(s.Peers) > 0 {
		t := podSelector(s.Namespace, s.Peers)
		obj.Spec.Target = &t
	}
	switch s.Kind {
	case Partition:
		obj.Spec.Direction = v1alpha1.Both
	case Delay:
		obj.Spec.Direction = v1alpha1.To
		obj.Spec.Delay = &v1alpha1.DelaySpec{
			Latency:     chaosDuration(s.Latency),
			Jitter:      chaosDuration(s.Jitter),
			Correlation: v1alpha1.DefaultCorrelation,
		}
	case Loss:
		obj.Spec.Direction = v1alpha1.To
		obj.Spec.Loss = &v1alpha1.LossSpec{
			Loss:        strconv.FormatFloat(s.LossPercent, 'f', -1, 64),
			Correlation: v1alpha1.DefaultCorrelation,
		}
	}
	return obj, nil
}

// APIServerPartitionFor builds the NetworkChaos that cuts Spec.Pods off from the
// API server: a partition (direction both, packets dropped) towards apiServer,
// the addresses pods reach it at (the kubernetes Service's cluster IPs and its
// endpoints; Inject looks them up). Chaos Mesh drops this traffic inside the pods'
// network namespaces, before any service address translation, so both the
// Service address and the endpoints are needed; any other traffic of the pods to
// the endpoint addresses (the control-plane nodes) is dropped as well.
func APIServerPartitionFor(s Spec, apiServer []string) (*v1alpha1.NetworkChaos, error) {
	if s.Kind != APIServerPartition {
		return nil, fmt.Errorf("%w: APIServerPartitionFor builds apiserver-partition faults, not %s", ErrInvalid, s.Kind)
	}
	if err := validateChaosMesh(s); err != nil {
		return nil, err
	}
	if len(apiServer) == 0 {
		return nil, fmt.Errorf("%w: apiserver-partition %q: no API server address to cut the pods off from", ErrInvalid, s.Name)
	}
	addrs := make([]string, 0, len(apiServer))
	for _, a := range apiServer {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("%w: apiserver-partition %q: API server address %q is not an IP address", ErrInvalid, s.Name, a)
		}
		if s := ip.Unmap().String(); !slices.Contains(addrs, s) {
			addrs = append(addrs, s)
		}
	}
	slices.Sort(addrs)
	obj := networkChaos(s)
	obj.Spec.Direction = v1alpha1.Both
	obj.Spec.ExternalTargets = addrs
	return obj, nil
}

func networkChaos(s Spec) *v1alpha1.NetworkChaos {
	obj := &v1alpha1.NetworkChaos{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindNetworkChaos},
		ObjectMeta: objectMeta(s),
		Spec: v1alpha1.NetworkChaosSpec{
			PodSelector: podSelector(s.Namespace, s.Pods),
			Action:      networkChaosActions[s.Kind],
			// What the CRD and Chaos Mesh's defaulter set on every NetworkChaos;
			// only partitions use it.
			PartitionBehavior: v1alpha1.DropPartitionBehavior,
		},
	}
	if s.Duration > 0 {
		d := chaosDuration(s.Duration)
		obj.Spec.Duration = &d
	}
	return obj
}

// chaosObject is what the back end needs of a PodChaos or NetworkChaos.
type chaosObject interface {
	client.Object
	GetStatus() *v1alpha1.ChaosStatus
}

// objectFor returns an empty object of the Chaos Mesh type that carries kind.
func objectFor(kind Kind) (chaosObject, error) {
	if _, ok := podChaosActions[kind]; ok {
		return &v1alpha1.PodChaos{}, nil
	}
	if _, ok := networkChaosActions[kind]; ok {
		return &v1alpha1.NetworkChaos{}, nil
	}
	return nil, fmt.Errorf("%w: unknown fault kind %q", ErrUnsupported, kind)
}

// Inject creates the Chaos Mesh object for s and returns once Chaos Mesh reports
// every target injected (bounded by ctx and the back end's timeout). Before that
// it checks that every pod exists (Chaos Mesh would skip a missing one silently)
// and fills in what Chaos Mesh needs explicitly: PodKill's grace period (the pods'
// own) and ContainerCrash's container (the pods' first). One-shot faults (PodKill,
// ContainerCrash) are over when it returns, and their object is deleted; lasting
// ones stay until Remove (or Spec.Duration). If the injection fails, the object is
// deleted again, so a failed Inject leaves nothing behind.
func (m *ChaosMesh) Inject(ctx context.Context, s Spec) error {
	if err := validateChaosMesh(s); err != nil {
		return err
	}
	if _, err := objectFor(s.Kind); err != nil {
		return err
	}
	if (s.Kind == Delay || s.Kind == Loss) && m.noNetem != "" {
		return fmt.Errorf("faults: inject %s: %w: Chaos Mesh makes %s with the netem queueing discipline, and %s", Describe(s), ErrUnsupported, s.Kind, m.noNetem)
	}
	start := time.Now()
	s, err := m.resolve(ctx, s)
	if err != nil {
		return fmt.Errorf("faults: inject %s: %w", Describe(s), err)
	}
	var obj chaosObject
	switch s.Kind {
	case ContainerCrash, PodKill, PodFailure:
		obj, err = PodChaosFor(s)
	case APIServerPartition:
		var addrs []string
		if addrs, err = m.apiServerAddresses(ctx); err == nil {
			obj, err = APIServerPartitionFor(s, addrs)
		}
	default:
		obj, err = NetworkChaosFor(s)
	}
	if err != nil {
		return fmt.Errorf("faults: inject %s: %w", Describe(s), err)
	}
	ref := objectRef(obj)
	if err := m.c.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("faults: inject %s: %s already exists (the fault is injected, or a leftover); Remove it first: %w", Describe(s), ref, err)
		}
		return fmt.Errorf("faults: inject %s: create %s: %w", Describe(s), ref, err)
	}
	want := map[string]int{".": len(uniq(s.Pods))}
	if _, net := networkChaosActions[s.Kind]; net && s.Kind != APIServerPartition && len(s.Peers) > 0 {
		// Only a NetworkChaos has a target selector; a PodChaos ignores Peers.
		want[".Target"] = len(uniq(s.Peers))
	}
	if err := m.waitInjected(ctx, obj, want); err != nil {
		if derr := m.deleteDetached(ctx, obj); derr != nil {
			err = errors.Join(err, derr)
		}
		return fmt.Errorf("faults: inject %s: %w", Describe(s), err)
	}
	if s.Kind == PodKill || s.Kind == ContainerCrash {
		if err := m.deleteAndWait(ctx, obj); err != nil {
			return fmt.Errorf("faults: inject %s: injected, but cleaning up %s: %w", Describe(s), ref, err)
		}
	}
	m.log.Info("fault injected", "fault", Describe(s), "object", ref, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// resolve checks that the pods exist and fills in PodKill's grace period and
// ContainerCrash's container from them; a PodFailure naming the only container of
// every pod is the same as one naming none.
func (m *ChaosMesh) resolve(ctx context.Context, s Spec) (Spec, error) {
	var pods []*corev1.Pod
	for _, name := range uniq(slices.Concat(s.Pods, s.Peers)) {
		p := &corev1.Pod{}
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, p); err != nil {
			return s, fmt.Errorf("pod %s/%s: %w", s.Namespace, name, err)
		}
		if slices.Contains(s.Pods, name) {
			pods = append(pods, p)
		}
	}
	switch s.Kind {
	case PodKill:
		if s.Grace != nil {
			break
		}
		grace := make(map[int64][]string)
		for _, p := range pods {
			g := defaultPodGrace
			if p.Spec.TerminationGracePeriodSeconds != nil {
				g = *p.Spec.TerminationGracePeriodSeconds
			}
			grace[g] = append(grace[g], p.Name)
		}
		if len(grace) > 1 {
			return s, fmt.Errorf("%w: the pods have different terminationGracePeriodSeconds (%v) and Chaos Mesh applies one to all; set Spec.Grace", ErrInvalid, grace)
		}
		for g := range grace {
			s.Grace = &g
		}
	case ContainerCrash:
		if s.Container != "" {
			for _, p := range pods {
				if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == s.Container }) {
					return s, fmt.Errorf("%w: pod %s/%s has no container %q", ErrInvalid, p.Namespace, p.Name, s.Container)
				}
			}
			break
		}
		first := make(map[string][]string)
		for _, p := range pods {
			if len(p.Spec.Containers) == 0 {
				return s, fmt.Errorf("%w: pod %s/%s has no container", ErrInvalid, p.Namespace, p.Name)
			}
			first[p.Spec.Containers[0].Name] = append(first[p.Spec.Containers[0].Name], p.Name)
		}
		if len(first) > 1 {
			return s, fmt.Errorf("%w: the pods' first containers differ (%v) and Chaos Mesh kills the same container names in all; set Spec.Container", ErrInvalid, first)
		}
		for c := range first {
			s.Container = c
		}
	case PodFailure:
		if s.Container == "" {
			break
		}
		for _, p := range pods {
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != s.Container {
				return s, fmt.Errorf("%w: pod-failure of container %q alone: pod %s/%s has %d containers and Chaos Mesh's pod-failure fails them all", ErrUnsupported, s.Container, p.Namespace, p.Name, len(p.Spec.Containers))
			}
		}
		s.Container = ""
	}
	return s, nil
}

// apiServerAddresses are the addresses pods reach the API server at: the cluster
// IPs of Service default/kubernetes and the addresses of its endpoints.
func (m *ChaosMesh) apiServerAddresses(ctx context.Context) ([]string, error) {
	svc := &corev1.Service{}
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, svc); err != nil {
		return nil, fmt.Errorf("look up the API server's Service default/kubernetes: %w", err)
	}
	addrs := slices.Clone(svc.Spec.ClusterIPs)
	if len(addrs) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		addrs = append(addrs, svc.Spec.ClusterIP)
	}
	eps := &discoveryv1.EndpointSliceList{}
	if err := m.c.List(ctx, eps, client.InNamespace(metav1.NamespaceDefault),
		client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"}); err != nil {
		return nil, fmt.Errorf("look up the API server's endpoints (EndpointSlices of default/kubernetes): %w", err)
	}
	for _, es := range eps.Items {
		for _, ep := range es.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("Service default/kubernetes has no cluster IP and no endpoints")
	}
	return addrs, nil
}

// waitInjected polls obj until Chaos Mesh has selected want[key] targets for each
// selector key and injected every one of them.
func (m *ChaosMesh) waitInjected(ctx context.Context, obj chaosObject, want map[string]int) error {
	key := client.ObjectKeyFromObject(obj)
	var lastFailure string
	err := wait.PollUntilContextTimeout(ctx, m.poll, m.timeout, true, func(ctx context.Context) (bool, error) {
		if err := m.c.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("%s was deleted before Chaos Mesh injected it", objectRef(obj))
			}
			m.log.Debug("get chaos object", "object", objectRef(obj), "err", err)
			return false, nil // transient; the timeout bounds it
		}
		records := obj.GetStatus().Experiment.Records
		if len(records) == 0 {
			return false, nil // not selected yet
		}
		got := map[string]int{}
		done := true
		for _, r := range records {
			got[r.SelectorKey]++
			if r.Phase != v1alpha1.Injected && r.InjectedCount == 0 {
				done = false
			}
			for _, e := range slices.Backward(r.Events) {
				if e.Type == v1alpha1.TypeFailed && e.Operation == v1alpha1.Apply {
					lastFailure = fmt.Sprintf("%s: %s", r.Id, e.Message)
					break
				}
			}
		}
		for k, n := range want {
			if got[k] < n {
				return false, fmt.Errorf("Chaos Mesh selected %d of the %d targets of %s (selector %q): a pod or container went away", got[k], n, objectRef(obj), k)
			}
		}
		return done, nil
	})
	if err == nil {
		return nil
	}
	if !wait.Interrupted(err) {
		return err
	}
	why := lastFailure
	if why == "" {
		why = m.lastWarning(ctx, obj)
	}
	if why == "" {
		why = "no failure reported"
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s not injected before the context ended (last failure: %s): %w", objectRef(obj), why, ctx.Err())
	}
	return fmt.Errorf("Chaos Mesh did not report %s injected within %v (last failure: %s); check that chaos-controller-manager and chaos-daemon run: kubectl -n chaos-mesh get pods", objectRef(obj), m.timeout, why)
}

// lastWarning is the message of the newest Warning event about obj ("" if none):
// Chaos Mesh reports selection failures only as events.
func (m *ChaosMesh) lastWarning(ctx context.Context, obj chaosObject) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	events := &corev1.EventList{}
	if err := m.c.List(ctx, events, client.InNamespace(obj.GetNamespace())); err != nil {
		return ""
	}
	kind := "PodChaos"
	if _, ok := obj.(*v1alpha1.NetworkChaos); ok {
		kind = "NetworkChaos"
	}
	var last *corev1.Event
	for i := range events.Items {
		e := &events.Items[i]
		if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != obj.GetName() {
			continue
		}
		if last == nil || eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	if last == nil {
		return ""
	}
	return last.Message
}

func eventTime(e *corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Remove deletes the fault's Chaos Mesh object and returns once it is gone, that
// is once Chaos Mesh has recovered every target (its finalizer goes last). A
// fault with no object (never injected, one-shot, already removed) is a no-op;
// an object of the same name that holds another kind of fault is left alone
// (ErrInvalid).
func (m *ChaosMesh) Remove(ctx context.Context, s Spec) error {
	if s.Name == "" || s.Namespace == "" {
		return fmt.Errorf("%w: removing %s needs its name and namespace", ErrInvalid, s.Kind)
	}
	obj, err := objectFor(s.Kind)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: s.Namespace, Name: ChaosObjectName(s.Name)}
	if err := m.c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("faults: remove %s: get %s/%s: %w", Describe(s), key.Namespace, key.Name, err)
	}
	if k, ok := obj.GetAnnotations()[faultKindAnnotation]; ok && k != string(s.Kind) {
		return fmt.Errorf("%w: remove %s: %s holds a %s fault, not a %s one; not removed", ErrInvalid, Describe(s), objectRef(obj), k, s.Kind)
	}
	if err := m.deleteAndWait(ctx, obj); err != nil {
		return fmt.Errorf("faults: remove %s: %w", Describe(s), err)
	}
	m.log.Info("fault removed", "fault", Describe(s), "object", objectRef(obj))
	return nil
}

// RemoveAll deletes every PodChaos and NetworkChaos labelled FaultLabel in
// namespace (all namespaces if "") and waits until they are gone: the cleanup for
// faults a crashed run left behind.
func (m *ChaosMesh) RemoveAll(ctx context.Context, namespace string) error {
	var opts []client.ListOption
	opts = append(opts, client.HasLabels{FaultLabel})
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	var objs []chaosObject
	pcs := &v1alpha1.PodChaosList{}
	if err := m.c.List(ctx, pcs, opts...); err != nil {
		return fmt.Errorf("faults: list leftover PodChaos: %w", err)
	}
	for i := range pcs.Items {
		objs = append(objs, &pcs.Items[i])
	}
	ncs := &v1alpha1.NetworkChaosList{}
	if err := m.c.List(ctx, ncs, opts...); err != nil {
		return fmt.Errorf("faults: list leftover NetworkChaos: %w", err)
	}
	for i := range ncs.Items {
		objs = append(objs, &ncs.Items[i])
	}
	var errs []error
	for _, o := range objs {
		if err := m.deleteAndWait(ctx, o); err != nil {
			errs = append(errs, err)
		} else {
			m.log.Info("leftover fault removed", "object", objectRef(o))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("faults: remove leftovers: %w", err)
	}
	return nil
}

// deleteAndWait deletes obj (absent is fine) and polls until it is gone.
func (m *ChaosMesh) deleteAndWait(ctx context.Context, obj chaosObject) error {
	ref := objectRef(obj)
	if err := m.c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	key := client.ObjectKeyFromObject(obj)
	err := wait.PollUntilContextTimeout(ctx, m.poll, m.timeout, true, func(ctx context.Context) (bool, error) {
		err := m.c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			m.log.Debug("get chaos object", "object", ref, "err", err)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s still present (finalizers %v): Chaos Mesh recovers the targets before it lets the object go; check that chaos-controller-manager runs (kubectl -n chaos-mesh get pods): %w",
			ref, obj.GetFinalizers(), err)
	}
	return nil
}

// deleteDetached deletes obj after a failed injection, even if ctx has ended.
func (m *ChaosMesh) deleteDetached(ctx context.Context, obj chaosObject) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.timeout)
	defer cancel()
	if err := m.deleteAndWait(dctx, obj); err != nil {
		return fmt.Errorf("cleaning up after the failed injection: %w", err)
	}
	return nil
}

func objectRef(obj chaosObject) string {
	kind := "PodChaos"
	if _, ok := obj.(*v1alpha1.NetworkChaos); ok {
		kind = "NetworkChaos"
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

var _ Injector = (*ChaosMesh)(nil)
