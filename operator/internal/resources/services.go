package resources

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

func servicePorts(d Desired, metrics bool) []corev1.ServicePort {
	ports := []corev1.ServicePort{{
		Name:       PortNameValkey,
		Port:       conf.Port,
		TargetPort: intstr.FromString(PortNameValkey),
		Protocol:   corev1.ProtocolTCP,
	}}
	if metrics && d.Cluster.Spec.Exporter.Enabled {
		ports = append(ports, corev1.ServicePort{
			Name:       PortNameMetrics,
			Port:       ExporterPort,
			TargetPort: intstr.FromString(PortNameMetrics),
			Protocol:   corev1.ProtocolTCP,
		})
	}
	return ports
}

// MakeHeadlessService is the StatefulSet's governing Service: every pod, ready or
// not, by name.
func MakeHeadlessService(d Desired) *corev1.Service {
	c := d.Cluster
	return &corev1.Service{
		ObjectMeta: objectMeta(c, HeadlessServiceName(c)),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 SelectorLabels(c),
			PublishNotReadyAddresses: true,
			Ports:                    servicePorts(d, true),
		},
	}
}

// UpdateHeadlessService sets the owned fields of the headless Service.
func UpdateHeadlessService(d Desired, cur *corev1.Service) (*corev1.Service, bool) {
	want := MakeHeadlessService(d)
	out := cur.DeepCopy()
	changed := updateMeta(d.Cluster, &out.ObjectMeta)
	if !maps.Equal(out.Spec.Selector, want.Spec.Selector) {
		out.Spec.Selector = want.Spec.Selector
		changed = true
	}
	if !out.Spec.PublishNotReadyAddresses {
		out.Spec.PublishNotReadyAddresses = true
		changed = true
	}
	if p, ok := mergePorts(out.Spec.Ports, want.Spec.Ports, false); ok {
		out.Spec.Ports = p
		changed = true
	}
	return out, changed
}

// MakeClientService is the Service clients use: its selector is fixed to the pod
// labelled primary.
func MakeClientService(d Desired) *corev1.Service {
	c := d.Cluster
	s := &corev1.Service{
		ObjectMeta: objectMeta(c, ClientServiceName(c)),
		Spec: corev1.ServiceSpec{
			Type:     c.Spec.Service.Type,
			Selector: PrimarySelector(c),
			Ports:    servicePorts(d, false),
		},
	}
	if len(c.Spec.Service.Annotations) > 0 {
		s.Annotations = copyMap(c.Spec.Service.Annotations)
		s.Annotations[AnnotationManagedAnnotations] = joinKeys(c.Spec.Service.Annotations)
	}
	return s
}

// UpdateClientService sets the owned fields of the client Service: type,
// selector, ports (keeping allocated node ports), and the annotations of
// spec.service (removing those dropped from it, keeping others').
func UpdateClientService(d Desired, cur *corev1.Service) (*corev1.Service, bool) {
	c := d.Cluster
	want := MakeClientService(d)
	out := cur.DeepCopy()
	changed := updateMeta(c, &out.ObjectMeta)

	prev := map[string]bool{}
	if s := out.Annotations[AnnotationManagedAnnotations]; s != "" {
		for _, k := range strings.Split(s, ",") {
			prev[k] = true
		}
	}
	for k := range prev {
		if _, keep := c.Spec.Service.Annotations[k]; !keep {
			delete(out.Annotations, k)
			changed = true
		}
	}
	for k, v := range want.Annotations {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		if cur, ok := out.Annotations[k]; !ok || cur != v {
			out.Annotations[k] = v
			changed = true
		}
	}
	if len(c.Spec.Service.Annotations) == 0 {
		if _, ok := out.Annotations[AnnotationManagedAnnotations]; ok {
			delete(out.Annotations, AnnotationManagedAnnotations)
			changed = true
		}
	}

	if out.Spec.Type != want.Spec.Type {
		out.Spec.Type = want.Spec.Type
		changed = true
		if want.Spec.Type == corev1.ServiceTypeClusterIP {
			out.Spec.ExternalTrafficPolicy = ""
			out.Spec.HealthCheckNodePort = 0
			out.Spec.AllocateLoadBalancerNodePorts = nil
		}
	}
	if !maps.Equal(out.Spec.Selector, want.Spec.Selector) {
		out.Spec.Selector = want.Spec.Selector
		changed = true
	}
	clearNodePorts := want.Spec.Type == corev1.ServiceTypeClusterIP
	if p, ok := mergePorts(out.Spec.Ports, want.Spec.Ports, clearNodePorts); ok {
		out.Spec.Ports = p
		changed = true
	}
	return out, changed
}

// mergePorts returns want with the node ports already allocated in cur (unless
// clearNodePorts), and whether that differs from cur.
func mergePorts(cur, want []corev1.ServicePort, clearNodePorts bool) ([]corev1.ServicePort, bool) {
	out := make([]corev1.ServicePort, len(want))
	for i, w := range want {
		out[i] = w
		for _, c := range cur {
			if c.Name == w.Name && !clearNodePorts {
				out[i].NodePort = c.NodePort
			}
		}
	}
	if len(cur) != len(out) {
		return out, true
	}
	for i := range out {
		c := cur[i]
		if c.Protocol == "" {
			c.Protocol = corev1.ProtocolTCP
		}
		if c.Name != out[i].Name || c.Port != out[i].Port || c.TargetPort != out[i].TargetPort ||
			c.Protocol != out[i].Protocol || c.NodePort != out[i].NodePort {
			return out, true
		}
	}
	return cur, false
}
