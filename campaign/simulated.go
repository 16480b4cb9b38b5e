package campaign

import (
	"context"
	"log/slog"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// simulatedContainers lists, over every cluster's pods in all namespaces, the
// containers that run simulated. On the embedded cluster only a mapping rule
// with simulate: true simulates (an unmapped image cannot be pulled), so each
// is simulated on purpose; the summary lists them so that a reader knows which
// parts of the system were never exercised. A cluster that cannot be listed is
// logged and skipped.
func simulatedContainers(ctx context.Context, envs []*env, log *slog.Logger) []reports.SimulatedContainer {
	var out []reports.SimulatedContainer
	for _, e := range uniqueEnvs(envs) {
		if e == nil || e.kube == nil {
			continue
		}
		pods, err := e.kube.cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			log.Warn("list pods for simulated containers", "cluster", e.cluster.Name(), "err", err)
			continue
		}
		out = append(out, simulatedIn(pods.Items)...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Namespace+"/"+a.Pod+"/"+a.Container < b.Namespace+"/"+b.Pod+"/"+b.Container
	})
	return out
}

// simulatedIn returns the simulated containers (init containers included) of pods.
func simulatedIn(pods []corev1.Pod) []reports.SimulatedContainer {
	var out []reports.SimulatedContainer
	for _, p := range pods {
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, cs := range list {
				if img, ok := strings.CutPrefix(cs.ImageID, imagemap.SimulatedImageIDPrefix); ok {
					out = append(out, reports.SimulatedContainer{Namespace: p.Namespace, Pod: p.Name, Container: cs.Name, Image: img})
				}
			}
		}
	}
	return out
}
