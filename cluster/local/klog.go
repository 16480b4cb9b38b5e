package local

import (
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// RouteKlog sends the logs of the Kubernetes libraries the cluster embeds (client-go,
// the volume provisioner, virtual-kubelet), which write through klog's process-wide
// logger, to h instead of stderr. Call it once from main or TestMain.
func RouteKlog(h slog.Handler) {
	klog.SetLogger(logr.FromSlogHandler(h))
}
