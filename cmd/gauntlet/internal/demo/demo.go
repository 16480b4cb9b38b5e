// Package demo is the main job of `make demo`: bring up an embedded cluster, run a
// StatefulSet of Valkey pods on it, show them serving (writes, reads, replication
// across pod IPs), and tear the cluster down.
package demo

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeykit"
)

// Options configure Run.
type Options struct {
	// Name is the embedded cluster's name (default "gauntlet-demo").
	Name string
	// Cluster configures the embedded cluster.
	Cluster backends.Options
	// Replicas is the number of Valkey pods (default 3).
	Replicas int32
	// Keep leaves the cluster running instead of tearing it down.
	Keep bool
}

// Run executes the demo, printing each step to out.
func Run(ctx context.Context, opts Options, out io.Writer) (err error) {
	if opts.Name == "" {
		opts.Name = "gauntlet-demo"
	}
	if opts.Replicas == 0 {
		opts.Replicas = 3
	}
	step := func(format string, a ...any) { fmt.Fprintf(out, "==> "+format+"\n", a...) }
	t0 := time.Now()
	step("creating embedded cluster %q (control plane + %d nodes)", opts.Name, max(opts.Cluster.Nodes, 3))
	b, err := backends.Open(ctx, backends.Local, opts.Cluster)
	if err != nil {
		return err
	}
	c, err := b.Create(ctx, opts.Name)
	if err != nil {
		return err
	}
	defer func() {
		if opts.Keep {
			step("cluster kept: export KUBECONFIG=%s (delete with: gauntlet cluster down %s)", c.Kubeconfig(), c.Name())
			return
		}
		step("tearing the cluster down")
		if derr := c.Delete(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	step("cluster ready in %v: export KUBECONFIG=%s", time.Since(t0).Round(time.Millisecond), c.Kubeconfig())
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	ns := "demo"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("demo: create namespace: %w", err)
	}
	step("creating StatefulSet valkey (%d replicas, 1Gi volume each)", opts.Replicas)
	if err := valkeykit.CreateValkey(ctx, cs, ns, "valkey", opts.Replicas); err != nil {
		return err
	}
	t1 := time.Now()
	pods, err := valkeykit.WaitReady(ctx, cs, ns, "valkey", opts.Replicas, 3*time.Minute)
	if err != nil {
		return err
	}
	step("all %d pods Ready in %v", len(pods), time.Since(t1).Round(time.Millisecond))
	for _, p := range pods {
		fmt.Fprintf(out, "    %-10s %-15s node=%s\n", p.Name, p.Status.PodIP, p.Spec.NodeName)
	}
	primary := pods[0].Status.PodIP
	for _, p := range pods[1:] {
		if err := valkeykit.Do(ctx, p.Status.PodIP, "REPLICAOF", primary, "6379"); err != nil {
			return err
		}
	}
	step("pods 1..%d replicate %s (REPLICAOF over pod IPs)", len(pods)-1, pods[0].Name)
	for i := 0; i < 5; i++ {
		if err := valkeykit.Do(ctx, primary, "SET", "demo:key:"+strconv.Itoa(i), "value-"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	step("wrote 5 keys to %s", pods[0].Name)
	for _, p := range pods[1:] {
		v, err := valkeykit.WaitValue(ctx, p.Status.PodIP, "demo:key:4", 30*time.Second)
		if err != nil {
			return err
		}
		role, _ := valkeykit.Get(ctx, p.Status.PodIP, "ROLE")
		fmt.Fprintf(out, "    %s reads demo:key:4 = %q (role %s)\n", p.Name, v, role)
	}
	step("demo finished in %v", time.Since(t0).Round(time.Millisecond))
	return nil
}
