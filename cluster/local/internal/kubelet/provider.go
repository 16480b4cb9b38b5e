package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/podnet"
)

// provider is the virtual-kubelet provider: it runs the node's pods.
type provider struct {
	ctx      context.Context // the node's lifetime
	start    time.Time
	cfg      Config
	nodeName string
	client   kubernetes.Interface
	log      *slog.Logger
	recorder record.EventRecorder

	podLister  corev1listers.PodLister
	configMaps corev1listers.ConfigMapLister
	secrets    corev1listers.SecretLister
	services   corev1listers.ServiceLister

	mu     sync.Mutex
	byName map[string]*podWorker    // namespace/name → the current pod of that name
	byUID  map[types.UID]*podWorker // every pod the node still holds, terminating ones included
	closed bool
}

func newProviderFor(ctx context.Context, cfg Config, log *slog.Logger, recorder record.EventRecorder, pc nodeutil.ProviderConfig) *provider {
	return &provider{
		ctx:        ctx,
		start:      time.Now(),
		cfg:        cfg,
		nodeName:   cfg.NodeName,
		client:     cfg.Client,
		log:        log,
		recorder:   recorder,
		podLister:  pc.Pods,
		configMaps: pc.ConfigMaps,
		secrets:    pc.Secrets,
		services:   pc.Services,
		byName:     map[string]*podWorker{},
		byUID:      map[types.UID]*podWorker{},
	}
}

func (p *provider) started() time.Time { return p.start }

func podsDir(stateDir string) string { return filepath.Join(stateDir, "pods") }

func podKey(namespace, name string) string { return namespace + "/" + name }

func everything() labels.Selector { return labels.Everything() }

// getConfigMap reads a ConfigMap from the informer cache, falling back to the
// API when the cache does not have it (yet).
func (p *provider) getConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if p.configMaps != nil {
		if cm, err := p.configMaps.ConfigMaps(ns).Get(name); err == nil {
			return cm, nil
		}
	}
	return p.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// getSecret reads a Secret like getConfigMap.
func (p *provider) getSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if p.secrets != nil {
		if s, err := p.secrets.Secrets(ns).Get(name); err == nil {
			return s, nil
		}
	}
	return p.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// CreatePod starts running a pod. It returns at once; the pod's worker sets up
// the sandbox and volumes and runs the containers, reporting status as it goes.
func (p *provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("kubelet: node %s is stopping", p.nodeName)
	}
	key := podKey(pod.Namespace, pod.Name)
	if w, ok := p.byName[key]; ok {
		if w.uid == pod.UID {
			w.update(pod)
			return nil
		}
		// A new pod of the same name while the old one still terminates
		// (StatefulSets reuse names): the old one keeps going by UID.
		delete(p.byName, key)
		w.terminate(w.defaultGrace(), true, false)
	}
	if w, ok := p.byUID[pod.UID]; ok {
		// Being deleted already; the API will not bring it back.
		_ = w
		return nil
	}
	w := newPodWorker(p, pod)
	p.byName[key] = w
	p.byUID[pod.UID] = w
	go w.run()
	return nil
}

// UpdatePod applies the changes the API allows on a running pod: container
// images (the container restarts with the new mapping), labels and
// annotations (downward API volumes are refreshed), activeDeadlineSeconds.
func (p *provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	w, ok := p.byName[podKey(pod.Namespace, pod.Name)]
	p.mu.Unlock()
	if !ok || w.uid != pod.UID {
		return p.CreatePod(ctx, pod)
	}
	w.update(pod)
	return nil
}

// DeletePod stops a pod gracefully: preStop hooks, SIGTERM, SIGKILL when the
// deletion grace period is over. It returns at once; once every container
// has stopped the worker reports the terminal status, removes the sandbox
// and the pod's folder, and deletes the pod object.
func (p *provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	key := podKey(pod.Namespace, pod.Name)
	w, ok := p.byUID[pod.UID]
	if !ok && pod.UID == "" {
		w, ok = p.byName[key]
	}
	if ok && p.byName[key] == w {
		delete(p.byName, key)
	}
	p.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("pod %s (uid %s) is not on node %s", key, pod.UID, p.nodeName)
	}
	grace := w.defaultGrace()
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	w.terminate(grace, true, pod.DeletionTimestamp != nil)
	return nil
}

// GetPod returns the current pod of that name with its status.
func (p *provider) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	w, ok := p.byName[podKey(namespace, name)]
	p.mu.Unlock()
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not on node %s", namespace, name, p.nodeName)
	}
	return w.podWithStatus(), nil
}

// GetPodStatus returns the current pod's status.
func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods lists every pod the node holds, terminating ones included.
func (p *provider) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	ws := make([]*podWorker, 0, len(p.byUID))
	for _, w := range p.byUID {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.podWithStatus())
	}
	return out, nil
}

// NotifyPods is part of the asynchronous provider interface. Status is
// written by each pod's worker as a strategic-merge patch of pods/status
// (as the kubelet's status manager does) rather than through this callback:
// virtual-kubelet writes notified pods with a full UpdateStatus carrying the
// provider's copy of labels and annotations, which would revert labels that
// others changed in the meantime. Implementing the interface keeps
// virtual-kubelet from polling GetPodStatus.
func (p *provider) NotifyPods(ctx context.Context, cb func(*corev1.Pod)) {}

// forget drops a finished worker.
func (p *provider) forget(w *podWorker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byUID[w.uid] == w {
		delete(p.byUID, w.uid)
	}
	if p.byName[w.key] == w {
		delete(p.byName, w.key)
	}
}

// find returns the current pod of that name, else a terminating one.
func (p *provider) find(namespace, name string) (*podWorker, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := podKey(namespace, name)
	if w, ok := p.byName[key]; ok {
		return w, true
	}
	var found *podWorker
	for _, w := range p.byUID {
		if w.key == key && (found == nil || w.created.After(found.created)) {
			found = w
		}
	}
	return found, found != nil
}

// close marks the provider closed and returns its pod workers.
func (p *provider) close() []*podWorker {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return slices.Collect(maps.Values(p.byUID))
}

// quiesce stops reporting anything to the API: the node is going down.
func (p *provider) quiesce() {
	ws := p.close()
	for _, w := range ws {
		w.mu.Lock()
		w.silent = true
		w.mu.Unlock()
	}
}

// shutdown stops every pod quickly and removes their sandboxes, without
// touching the API.
func (p *provider) shutdown(ctx context.Context) error {
	ws := p.close()
	for _, w := range ws {
		w.shutdown()
	}
	var errs []error
	for _, w := range ws {
		select {
		case <-w.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("pod %s did not stop: %w", w.key, ctx.Err()))
		}
	}
	return errors.Join(errs...)
}

type containerOp int

const (
	opCrash containerOp = iota
	opPause
	opResume
)

// signalContainer implements the container faults.
func (p *provider) signalContainer(ctx context.Context, namespace, pod, name string, op containerOp) error {
	w, ok := p.find(namespace, pod)
	if !ok {
		return fmt.Errorf("kubelet: pod %s/%s: %w", namespace, pod, ErrNotFound)
	}
	c, proc, err := w.runningProcess(name)
	if err != nil {
		return fmt.Errorf("kubelet: pod %s/%s container %s: %w", namespace, pod, name, err)
	}
	switch op {
	case opCrash:
		err = proc.Signal(syscall.SIGKILL)
	case opPause:
		err = proc.Pause()
	case opResume:
		err = proc.Resume()
	}
	if err != nil {
		return fmt.Errorf("kubelet: pod %s/%s container %s: %w", namespace, pod, c.name, err)
	}
	return nil
}

// sandboxOf returns a pod's network sandbox.
func (p *provider) sandboxOf(namespace, pod string) (podnet.Sandbox, bool) {
	w, ok := p.find(namespace, pod)
	if !ok {
		return podnet.Sandbox{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sandbox == nil {
		return podnet.Sandbox{}, false
	}
	return *w.sandbox, true
}

// isGone reports whether an API error means the pod object no longer exists
// (or is another pod of the same name).
func isGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsGone(err)
}
