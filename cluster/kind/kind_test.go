package kind

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kindv1 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
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

// TestE2EKindCluster creates a real kind cluster where a container engine runs.
func TestE2EKindCluster(t *testing.T) {
	testenv.SkipShort(t)
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		if !errors.Is(err, ErrNoEngine) {
			t.Fatalf("Available returned %v, which is not ErrNoEngine", err)
		}
		testenv.Skip(t, testenv.Kind, "no container engine on this machine, kind cannot run: %v", err)
	}
	if ok, err := NodeImagePresent(ctx, ""); err != nil {
		t.Fatal(err)
	} else if !ok {
		testenv.Skip(t, testenv.Kind, "the node image %s is not in the local engine, and this lane pulls nothing "+
			"(no registry here; issue 12 builds a node image offline). Where a registry is reachable, `docker pull` it first", DefaultNodeImage)
	}
	c, err := Provider{Options: Options{Workers: 1, WaitForReady: 5 * time.Minute}}.Create(ctx, "gauntlet-kind-e2e")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Delete(ctx); err != nil {
			t.Error(err)
		}
	}()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 2 {
		t.Fatalf("nodes: %v, %v; want 2", nodes, err)
	}
}
