package local

import (
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// RouteKlog sends the logs of the Kubernetes libraries the cluster embeds (client-go,
// the volume provisioner, virtual-kubelet), which write through klog's process-wide
// logger (and controller-runtime's), to h instead of stderr. Call it once from main or TestMain.
func RouteKlog(h slog.Handler) {
	klog.SetLogger(logr.FromSlogHandler(h))
	// controller-runtime's clients (the Chaos Mesh fault back end's, for one) log through
	// their own root logger, which otherwise prints a stack trace on first use.
	ctrllog.SetLogger(logr.FromSlogHandler(h))
}
