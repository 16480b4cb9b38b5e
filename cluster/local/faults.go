package local

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cl "github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/kubelet"
)

// PodRef names a pod (cl.PodRef).
type PodRef = cl.PodRef

var _ cl.ProcessFaults = (*Cluster)(nil)

// node returns the agent running the pod.
func (c *Cluster) node(ctx context.Context, pod PodRef) (*kubelet.Node, *corev1.Pod, error) {
	p, err := c.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("local: get pod %s: %w", pod, err)
	}
	for _, n := range c.nodes {
		if n.Name() == p.Spec.NodeName {
			return n, p, nil
		}
	}
	return nil, nil, fmt.Errorf("local: pod %s is not running on a node of this cluster (node %q)", pod, p.Spec.NodeName)
}

// firstContainer is name, or the pod's first container when name is empty.
func firstContainer(p *corev1.Pod, name string) string {
	if name == "" && len(p.Spec.Containers) > 0 {
		return p.Spec.Containers[0].Name
	}
	return name
}

// CrashContainer kills a container's process (SIGKILL); the pod's restart policy
// then applies as on a real node. An empty container name means the pod's first.
func (c *Cluster) CrashContainer(ctx context.Context, pod PodRef, container string) error {
	n, p, err := c.node(ctx, pod)
	if err != nil {
		return err
	}
	return n.CrashContainer(ctx, pod.Namespace, pod.Name, firstContainer(p, container))
}

// PauseContainer freezes a container's processes (SIGSTOP) until ResumeContainer.
func (c *Cluster) PauseContainer(ctx context.Context, pod PodRef, container string) error {
	n, p, err := c.node(ctx, pod)
	if err != nil {
		return err
	}
	return n.PauseContainer(ctx, pod.Namespace, pod.Name, firstContainer(p, container))
}

// ResumeContainer thaws a paused container (SIGCONT).
func (c *Cluster) ResumeContainer(ctx context.Context, pod PodRef, container string) error {
	n, p, err := c.node(ctx, pod)
	if err != nil {
		return err
	}
	return n.ResumeContainer(ctx, pod.Namespace, pod.Name, firstContainer(p, container))
}

// DeletePod deletes a pod through the API with the given grace period (nil means
// the pod's own; 0 means immediately).
func (c *Cluster) DeletePod(ctx context.Context, pod PodRef, grace *int64) error {
	if err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
		return fmt.Errorf("local: delete pod %s: %w", pod, err)
	}
	return nil
}

// PodIP returns the address of a running pod's network namespace.
func (c *Cluster) PodIP(ctx context.Context, pod PodRef) (netip.Addr, error) {
	n, p, err := c.node(ctx, pod)
	if err != nil {
		return netip.Addr{}, err
	}
	if sb, ok := n.PodSandbox(pod.Namespace, pod.Name); ok {
		return sb.IP, nil
	}
	if ip, err := netip.ParseAddr(p.Status.PodIP); err == nil {
		return ip, nil
	}
	return netip.Addr{}, fmt.Errorf("local: pod %s has no address yet", pod)
}

// Partition drops all traffic between the pods in a and the pods in b (both
// directions) until Heal(name). Pods must be running.
func (c *Cluster) Partition(ctx context.Context, name string, a, b []PodRef) error {
	ipsA, err := c.podIPs(ctx, a)
	if err != nil {
		return err
	}
	ipsB, err := c.podIPs(ctx, b)
	if err != nil {
		return err
	}
	return c.net.Partition(ctx, name, ipsA, ipsB)
}

// PartitionFromAPIServer cuts the pods off from the API server (directly and
// through the kubernetes Service, and through the proxies ListenForPods serves)
// until Heal(name). The kubelet's probes still
// reach them, as on a real node where the kubelet is local.
func (c *Cluster) PartitionFromAPIServer(ctx context.Context, name string, pods []PodRef) error {
	ips, err := c.podIPs(ctx, pods)
	if err != nil {
		return err
	}
	return c.net.PartitionHostPorts(ctx, name, ips, c.apiPorts())
}

// PartitionFromHost cuts the pods off from the host entirely (API server, kubelet
// probes, the harness) until Heal(name).
func (c *Cluster) PartitionFromHost(ctx context.Context, name string, pods []PodRef) error {
	ips, err := c.podIPs(ctx, pods)
	if err != nil {
		return err
	}
	return c.net.Partition(ctx, name, ips, []netip.Addr{c.net.Gateway()})
}

// Heal removes the partition called name.
func (c *Cluster) Heal(ctx context.Context, name string) error { return c.net.Heal(ctx, name) }

// Delay would add network latency; this kernel has no netem qdisc, so it always
// fails with ErrUnsupported rather than pretending.
func (c *Cluster) Delay(ctx context.Context, pods []PodRef) error {
	return fmt.Errorf("%w: network delay needs the netem queueing discipline, which this kernel does not provide", ErrUnsupported)
}

func (c *Cluster) podIPs(ctx context.Context, pods []PodRef) ([]netip.Addr, error) {
	out := make([]netip.Addr, 0, len(pods))
	for _, p := range pods {
		ip, err := c.PodIP(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, ip)
	}
	return out, nil
}
