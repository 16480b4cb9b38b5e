package kind

import (
	"testing"

	kindv1 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		workers int
		zones   []string
	}{
		{"defaults", Options{}, 3, []string{"zone-a", "zone-b", "zone-c"}},
		{"one worker", Options{Workers: 1, NodeImage: "kindest/node:v1.35.0"}, 1, []string{"zone-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config(tc.opts)
			if len(c.Nodes) != tc.workers+1 || c.Nodes[0].Role != kindv1.ControlPlaneRole {
				t.Fatalf("nodes = %+v, want a control plane and %d workers", c.Nodes, tc.workers)
			}
			for i, n := range c.Nodes[1:] {
				if n.Role != kindv1.WorkerRole || n.Labels["topology.kubernetes.io/zone"] != tc.zones[i] {
					t.Errorf("worker %d = %+v, want zone %s", i, n, tc.zones[i])
				}
				if n.Image != tc.opts.NodeImage {
					t.Errorf("worker %d image %q, want %q", i, n.Image, tc.opts.NodeImage)
				}
			}
			if c.APIVersion != "kind.x-k8s.io/v1alpha4" || c.Kind != "Cluster" {
				t.Errorf("type meta = %+v", c.TypeMeta)
			}
		})
	}
}
