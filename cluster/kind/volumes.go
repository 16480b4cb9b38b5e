package kind

import (
	"context"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
)

// hostPathPVDir is where kube-controller-manager's host-path provisioner (the offline node
// image's default StorageClass) puts volumes.
const hostPathPVDir = "/tmp/hostpath_pv/"

// prepareHostPathVolumes makes the folder of every host-path volume the provisioner creates,
// mode 0777, in the node, as soon as the volume appears (before a pod using it is scheduled).
// The provisioner only names the folder; containerd then creates it for the first container
// as root with mode 0755, where a pod running as another user (Valkey runs as 999) cannot
// write, and host-path volumes take no fsGroup. kind's own local-path-provisioner makes its
// folders 0777 likewise. It runs until ctx ends.
func prepareHostPathVolumes(ctx context.Context, cfg *rest.Config, node nodes.Node, log *slog.Logger) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Warn("host-path volumes: no client", "err", err)
		return
	}
	done := map[string]bool{}
	prepare := func(pv *corev1.PersistentVolume) {
		if pv.Spec.HostPath == nil || !strings.HasPrefix(pv.Spec.HostPath.Path, hostPathPVDir) || done[pv.Spec.HostPath.Path] {
			return
		}
		p := pv.Spec.HostPath.Path
		if err := node.CommandContext(ctx, "sh", "-c", `mkdir -p "$1" && chmod 0777 "$1"`, "-", p).Run(); err != nil {
			if ctx.Err() == nil {
				log.Warn("host-path volume: make its folder writable", "pv", pv.Name, "path", p, "err", err)
			}
			return
		}
		done[p] = true
	}
	for ctx.Err() == nil {
		list, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				prepare(&list.Items[i])
			}
			var w watch.Interface
			if w, err = cs.CoreV1().PersistentVolumes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion}); err == nil {
				for ev := range w.ResultChan() {
					if pv, ok := ev.Object.(*corev1.PersistentVolume); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
						prepare(pv)
					}
				}
				w.Stop()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
