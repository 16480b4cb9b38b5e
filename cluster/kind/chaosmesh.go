package kind

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/kind/pkg/cluster/nodes"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
)

// ChaosMeshVersion is the pinned Chaos Mesh module (build/chaosmesh/go.mod) whose build
// `make chaosmesh` caches in DefaultChaosMeshDir.
const ChaosMeshVersion = "v0.9.1-0.20260902003049-47411975a8cb"

// ChaosMeshNamespace is where the rendered chart installs Chaos Mesh.
const ChaosMeshNamespace = "chaos-mesh"

// ErrNoChaosMesh is returned when the Chaos Mesh build is missing.
var ErrNoChaosMesh = errors.New("Chaos Mesh is not built for the kind lane: run `make chaosmesh` (its controller and daemon from the pinned module, its chart rendered; cached)")

// DefaultChaosMeshDir is where `make chaosmesh` puts the build: CACHE/chaos-mesh/ChaosMeshVersion.
func DefaultChaosMeshDir() string {
	return filepath.Join(nodeimage.DefaultCacheDir(), "chaos-mesh", ChaosMeshVersion)
}

// nsexec stands in for Chaos Mesh's nsexec (a Rust program its daemon image downloads):
// chaos-daemon runs `nsexec [-l] [-m|-n|-p|-i PATH]... -- COMMAND ARGS` to run iptables,
// ipset and tc in a pod's namespaces; this runs the same through util-linux's nsenter.
//
//go:embed chaosmesh_nsexec.sh
var nsexecScript []byte

// chaosDaemonTools are the programs chaos-daemon runs for the faults Gauntlet injects
// (container-kill goes through containerd's API; partitions through ipset and iptables in
// the pod's network namespace; ip and tc for its interface lookups), with sh and nsenter.
var chaosDaemonTools = []string{"dash", "nsenter", "ipset", "ip", "tc", "xtables-nft-multi", "choom", "cat", "ls", "cp", "rm", "sed"}

// iptablesLinks are the names xtables-nft-multi answers to.
var iptablesLinks = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// xtablesDir holds iptables' extensions, which it loads by name at run time.
const xtablesDir = "/usr/lib/x86_64-linux-gnu/xtables"

// chaosMesh is a Chaos Mesh build: its rendered chart's objects and its images.
type chaosMesh struct {
	dir  string
	objs []*unstructured.Unstructured
	// controllerImage and daemonImage are the images the chart names.
	controllerImage, daemonImage string
}

// loadChaosMesh reads the build in dir (make chaosmesh).
func loadChaosMesh(dir string) (*chaosMesh, error) {
	if dir == "" {
		dir = DefaultChaosMeshDir()
	}
	data, err := os.ReadFile(filepath.Join(dir, "chaos-mesh.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("kind: %w (%s has no chaos-mesh.yaml)", ErrNoChaosMesh, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("kind: Chaos Mesh build: %w", err)
	}
	for _, b := range []string{"chaos-controller-manager", "chaos-daemon"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return nil, fmt.Errorf("kind: %w (%s has no %s)", ErrNoChaosMesh, dir, b)
		}
	}
	objs, err := decodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("kind: Chaos Mesh chart %s: %w", filepath.Join(dir, "chaos-mesh.yaml"), err)
	}
	cm := &chaosMesh{dir: dir, objs: objs}
	for _, o := range objs {
		images, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range images {
			img, _ := c.(map[string]any)["image"].(string)
			switch {
			case o.GetKind() == "Deployment" && o.GetName() == "chaos-controller-manager" && strings.Contains(img, "/chaos-mesh:"):
				cm.controllerImage = img
			case o.GetKind() == "DaemonSet" && o.GetName() == "chaos-daemon" && strings.Contains(img, "/chaos-daemon:"):
				cm.daemonImage = img
			}
		}
	}
	if cm.controllerImage == "" || cm.daemonImage == "" {
		return nil, fmt.Errorf("kind: Chaos Mesh chart in %s names no chaos-controller-manager Deployment or chaos-daemon DaemonSet image; rebuild it (rm -r %s; make chaosmesh)", dir, dir)
	}
	return cm, nil
}

// decodeManifest splits a multi-document YAML manifest into objects (empty documents skipped).
func decodeManifest(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("an object without kind or apiVersion: %v", m)
		}
		out = append(out, u)
	}
}

// images assembles Chaos Mesh's two images offline. The controller manager is static and
// runs alone. The daemon brings the programs it runs (chaosDaemonTools, iptables under
// its names with its extensions) with their libraries from this machine, and an nsexec.
func (cm *chaosMesh) images() ([]Image, error) {
	ctrl := Image{Refs: []string{cm.controllerImage},
		Files:      []ImageFile{{Src: filepath.Join(cm.dir, "chaos-controller-manager"), Dst: "/usr/local/bin/chaos-controller-manager", Program: true}},
		Entrypoint: []string{"/usr/local/bin/chaos-controller-manager"}}
	nsexec := filepath.Join(cm.dir, "nsexec")
	if old, err := os.ReadFile(nsexec); err != nil || !bytes.Equal(old, nsexecScript) {
		if err := os.WriteFile(nsexec, nsexecScript, 0o755); err != nil {
			return nil, fmt.Errorf("kind: Chaos Mesh daemon image: %w", err)
		}
	}
	daemon := Image{Refs: []string{cm.daemonImage},
		Files: []ImageFile{
			{Src: filepath.Join(cm.dir, "chaos-daemon"), Dst: "/usr/local/bin/chaos-daemon", Program: true},
			{Src: nsexec, Dst: "/usr/local/bin/nsexec"},
			{Dst: "/bin/sh", Link: "/usr/bin/dash"},
			{Dst: "/usr/bin/sh", Link: "dash"},
		},
		Entrypoint: []string{"/usr/local/bin/chaos-daemon"},
		Passwd:     "root:x:0:0:root:/root:/bin/sh\n", Group: "root:x:0:\n"}
	for _, p := range chaosDaemonTools {
		src, err := findProgram(p)
		if err != nil {
			return nil, fmt.Errorf("kind: the Chaos Mesh daemon image needs %s from this machine (make chaosmesh installs ipset; the others are Debian's base): %w", p, err)
		}
		daemon.Files = append(daemon.Files, ImageFile{Src: src, Dst: src, Program: true})
	}
	for _, l := range iptablesLinks {
		daemon.Files = append(daemon.Files, ImageFile{Dst: "/usr/sbin/" + l, Link: "/usr/sbin/xtables-nft-multi"})
	}
	if src, _ := findProgram("xtables-nft-multi"); src != "/usr/sbin/xtables-nft-multi" {
		return nil, fmt.Errorf("kind: the Chaos Mesh daemon image expects iptables at /usr/sbin/xtables-nft-multi (Debian's iptables package), found %q", src)
	}
	exts, _ := filepath.Glob(filepath.Join(xtablesDir, "*.so"))
	if len(exts) == 0 {
		return nil, fmt.Errorf("kind: the Chaos Mesh daemon image needs iptables' extensions from %s (Debian's iptables package)", xtablesDir)
	}
	for _, e := range exts {
		daemon.Files = append(daemon.Files, ImageFile{Src: e, Dst: e, Program: true})
	}
	return []Image{ctrl, daemon}, nil
}

// install applies the chart into the cluster cfg reaches and waits until Chaos Mesh answers:
// its CRDs established, the controller available, the daemon ready on every node, and its
// admission webhooks accepting a PodChaos (a server-side dry run). pause is the image
// pod-failure swaps containers for (one the nodes hold).
func (cm *chaosMesh) install(ctx context.Context, cfg *rest.Config, pause string, limit time.Duration, log *slog.Logger) error {
	start := time.Now()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("kind: Chaos Mesh: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return fmt.Errorf("kind: Chaos Mesh: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return fmt.Errorf("kind: Chaos Mesh: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChaosMeshNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kind: Chaos Mesh: namespace: %w", err)
	}
	apply := func(o *unstructured.Unstructured) error {
		o = o.DeepCopy()
		if o.GetKind() == "Deployment" && o.GetName() == "chaos-controller-manager" && pause != "" {
			setEnv(o, "POD_FAILURE_PAUSE_IMAGE", pause)
		}
		if err := c.Patch(ctx, o, client.Apply, client.FieldOwner("gauntlet"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			return fmt.Errorf("kind: Chaos Mesh: apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		return nil
	}
	// CRDs first, established before anything names them.
	var crds []string
	for _, o := range cm.objs {
		if o.GetKind() == "CustomResourceDefinition" {
			if err := apply(o); err != nil {
				return err
			}
			crds = append(crds, o.GetName())
		}
	}
	deadline := time.Now().Add(limit)
	poll := func(what string, ok func() (bool, string, error)) error {
		why := ""
		for {
			done, w, err := ok()
			if err != nil {
				return fmt.Errorf("kind: Chaos Mesh: %s: %w", what, err)
			}
			if done {
				return nil
			}
			why = w
			if time.Now().After(deadline) {
				return fmt.Errorf("kind: Chaos Mesh: %s: not after %v (%s)", what, limit, why)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("kind: Chaos Mesh: %s: %w (%s)", what, ctx.Err(), why)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	for _, name := range crds {
		err := poll("CRD "+name+" established", func() (bool, string, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err.Error(), nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, "", nil
				}
			}
			return false, "not established", nil
		})
		if err != nil {
			return err
		}
	}
	for _, o := range cm.objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if o.GetNamespace() == "" && namespaced(mapper, o) {
			o = o.DeepCopy()
			o.SetNamespace(ChaosMeshNamespace)
		}
		if err := apply(o); err != nil {
			return err
		}
	}
	if err := poll("controller manager available", func() (bool, string, error) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ChaosMeshNamespace, Name: "chaos-controller-manager"}, d); err != nil {
			return false, err.Error(), nil
		}
		if d.Status.AvailableReplicas >= 1 {
			return true, "", nil
		}
		return false, podTrouble(ctx, c, "app.kubernetes.io/component", "controller-manager"), nil
	}); err != nil {
		return err
	}
	if err := poll("daemon ready on every node", func() (bool, string, error) {
		d := &appsv1.DaemonSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ChaosMeshNamespace, Name: "chaos-daemon"}, d); err != nil {
			return false, err.Error(), nil
		}
		if d.Status.DesiredNumberScheduled > 0 && d.Status.NumberReady == d.Status.DesiredNumberScheduled {
			return true, "", nil
		}
		return false, podTrouble(ctx, c, "app.kubernetes.io/component", "chaos-daemon"), nil
	}); err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "PodChaos",
		"metadata": map[string]any{"name": "gauntlet-probe", "namespace": ChaosMeshNamespace},
		"spec": map[string]any{"action": "pod-kill", "mode": "all",
			"selector": map[string]any{"namespaces": []any{ChaosMeshNamespace}, "labelSelectors": map[string]any{"gauntlet.dev/probe": "none"}}},
	}}
	if err := poll("admission webhooks answer", func() (bool, string, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return true, "", nil
		}
		return false, err.Error(), nil
	}); err != nil {
		return err
	}
	log.Info("Chaos Mesh installed", "version", ChaosMeshVersion, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// namespaced reports whether o's kind is namespaced (false when the mapper cannot say).
func namespaced(m meta.RESTMapper, o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && mapping.Scope.Name() == meta.RESTScopeNameNamespace
}

// setEnv sets an environment variable of every container of a workload object.
func setEnv(o *unstructured.Unstructured, name, value string) {
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		cm := c.(map[string]any)
		env, _ := cm["env"].([]any)
		found := false
		for _, e := range env {
			if em, ok := e.(map[string]any); ok && em["name"] == name {
				em["value"] = value
				delete(em, "valueFrom")
				found = true
			}
		}
		if !found {
			env = append(env, map[string]any{"name": name, "value": value})
		}
		cm["env"] = env
	}
	_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
}

// podTrouble describes why the pods labelled key=value of Chaos Mesh's namespace are not
// ready: a waiting or terminated container's reason, else their phases.
func podTrouble(ctx context.Context, c client.Client, key, value string) string {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ChaosMeshNamespace), client.MatchingLabels{key: value}); err != nil {
		return err.Error()
	}
	if len(pods.Items) == 0 {
		return "no pod yet"
	}
	var out []string
	for _, p := range pods.Items {
		s := p.Name + ": " + string(p.Status.Phase)
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil {
				s += fmt.Sprintf(", %s waiting: %s %s", st.Name, w.Reason, w.Message)
			}
			if t := st.LastTerminationState.Terminated; t != nil {
				s += fmt.Sprintf(", %s last exit %d %s", st.Name, t.ExitCode, t.Reason)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// pauseImage is the pause image node n holds (kubeadm's sandbox image), "" if none.
func pauseImage(ctx context.Context, n nodes.Node) string {
	var out bytes.Buffer
	if err := n.CommandContext(ctx, "ctr", "--namespace", "k8s.io", "images", "list", "--quiet").SetStdout(&out).Run(); err != nil {
		return ""
	}
	for _, ref := range strings.Fields(out.String()) {
		if strings.Contains(ref, "/pause:") {
			return ref
		}
	}
	return ""
}
