package nodeimage

import (
	"bytes"

	kindv1 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
)

// EtcdVersion is the etcd of the pinned control plane (build/controlplane), which the node
// image carries as registry.k8s.io/etcd:EtcdImageTag(EtcdVersion).
const EtcdVersion = "3.6.5"

// KubeadmConfigPatches are the kubeadm configuration patches a cluster of this image needs:
//   - etcd's image tag: kubeadm v1.35.4 asks for etcd 3.6.6-0, the image carries the etcd the
//     control plane pins (3.6.5), under its own tag. Naming the image kubeadm should use is
//     honest where tagging 3.6.5 as 3.6.6-0 would make every image listing lie;
//   - failCgroupV1: false: the kubelet refuses cgroup v1 hosts by default since v1.35, and this
//     machine (like many CI runners) is one. It has no effect on cgroup v2 hosts.
func KubeadmConfigPatches() []string {
	return []string{
		"kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: " + EtcdImageTag(EtcdVersion) + "\n",
		"kind: KubeletConfiguration\nfailCgroupV1: false\n",
	}
}

// ClusterConfig is a kind configuration for clusters of image: one control-plane node (which
// runs pods: kind removes its taint when it is alone) and workers, no default CNI (kindnetd is
// not in the image; the image's bridge configuration serves the pod network), and the kubeadm
// patches above. The bridge configuration gives every node the whole pod subnet: more than one
// node would need per-node ranges, which this image does not do yet.
func ClusterConfig(image string, workers int) *kindv1.Cluster {
	if image == "" {
		image = DefaultImage
	}
	c := &kindv1.Cluster{TypeMeta: kindv1.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"}}
	c.Nodes = append(c.Nodes, kindv1.Node{Role: kindv1.ControlPlaneRole, Image: image})
	for i := 0; i < workers; i++ {
		c.Nodes = append(c.Nodes, kindv1.Node{Role: kindv1.WorkerRole, Image: image})
	}
	c.Networking.DisableDefaultCNI = true
	c.Networking.PodSubnet = PodSubnet
	c.KubeadmConfigPatches = KubeadmConfigPatches()
	return c
}

// PodSubnet is the pod network of the image's bridge CNI configuration (kind's default).
const PodSubnet = "10.244.0.0/16"

// BridgeCNIConfig is the image's bridge CNI configuration (/etc/cni/net.d/10-bridge.conflist)
// with its pod subnet replaced by subnet: clusters that run side by side, each routed from the
// host, mount one with a subnet of their own over /etc/cni/net.d and pass the same subnet as
// networking.podSubnet.
func BridgeCNIConfig(subnet string) ([]byte, error) {
	data, err := assets.ReadFile("assets/10-bridge.conflist")
	if err != nil {
		return nil, err
	}
	return bytes.Replace(data, []byte(`"subnet": "`+PodSubnet+`"`), []byte(`"subnet": "`+subnet+`"`), 1), nil
}
