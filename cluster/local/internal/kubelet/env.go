package kubelet

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// expand replaces each $(NAME) in s by lookup(NAME) as Kubernetes does for
// command, args, env values and subPathExpr: "$$" is a literal "$", and a
// reference that lookup does not know (or that is not closed) stays as written.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envList is an ordered environment where a later Set replaces the value but
// keeps the first position.
type envList struct {
	keys []string
	vals map[string]string
}

func newEnvList() *envList { return &envList{vals: map[string]string{}} }

func (e *envList) Set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

func (e *envList) Get(k string) (string, bool) {
	v, ok := e.vals[k]
	return v, ok
}

// Strings returns KEY=VALUE in order.
func (e *envList) Strings() []string {
	out := make([]string, 0, len(e.keys))
	for _, k := range e.keys {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}

// envContext is what environment resolution needs about the pod.
type envContext struct {
	pod         *corev1.Pod
	podIP       netip.Addr
	hostIP      netip.Addr
	allocatable corev1.ResourceList
}

// containerEnv resolves a container's envFrom and env (configMap and secret
// references, downward API fields and resources, $(VAR) references) and the
// Service environment variables, as the kubelet does at each container start.
func (p *provider) containerEnv(ctx context.Context, ec envContext, c *corev1.Container) (*envList, error) {
	pod := ec.pod
	out := newEnvList()
	for _, ef := range c.EnvFrom {
		var data map[string]string
		var err error
		switch {
		case ef.ConfigMapRef != nil:
			var cm *corev1.ConfigMap
			if cm, err = p.getConfigMap(ctx, pod.Namespace, ef.ConfigMapRef.Name); err != nil {
				err = readErr("configmap", ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional, err)
				break
			}
			data = cm.Data
		case ef.SecretRef != nil:
			var s *corev1.Secret
			if s, err = p.getSecret(ctx, pod.Namespace, ef.SecretRef.Name); err != nil {
				err = readErr("secret", ef.SecretRef.Name, ef.SecretRef.Optional, err)
				break
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom: %w", err)
		}
		// As the kubelet (1.35): every key becomes a variable, in key order.
		for _, k := range slices.Sorted(maps.Keys(data)) {
			out.Set(ef.Prefix+k, data[k])
		}
	}

	svc := p.serviceEnv(pod)
	lookup := func(name string) (string, bool) {
		if v, ok := out.Get(name); ok {
			return v, true
		}
		v, ok := svc[name]
		return v, ok
	}
	for i := range c.Env {
		e := &c.Env[i]
		if e.ValueFrom == nil {
			out.Set(e.Name, expand(e.Value, lookup))
			continue
		}
		v, ok, err := p.envValueFrom(ctx, ec, c, e)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			out.Set(e.Name, v)
		}
	}
	keys := slices.Sorted(maps.Keys(svc))
	for _, k := range keys {
		if _, ok := out.Get(k); !ok {
			out.Set(k, svc[k])
		}
	}
	return out, nil
}

// envValueFrom resolves one env var with valueFrom; ok false means an optional
// source is missing (the variable is left out).
func (p *provider) envValueFrom(ctx context.Context, ec envContext, c *corev1.Container, e *corev1.EnvVar) (string, bool, error) {
	pod := ec.pod
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		v, err := podFieldValue(ec, vf.FieldRef.FieldPath, false)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := resourceFieldValue(ec, c, vf.ResourceFieldRef)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := p.getConfigMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			return "", false, readErr("configmap", ref.Name, ref.Optional, err)
		}
		return keyValue("ConfigMap", pod.Namespace, ref.Name, ref.Key, ref.Optional, cm.Data)
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := p.getSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			return "", false, readErr("secret", ref.Name, ref.Optional, err)
		}
		return keyValue("Secret", pod.Namespace, ref.Name, ref.Key, ref.Optional, s.Data)
	case vf.FileKeyRef != nil:
		return "", false, fmt.Errorf("fileKeyRef (the EnvFiles alpha feature) is not supported by the embedded cluster's nodes")
	}
	return "", false, fmt.Errorf("valueFrom names no source")
}

// keyValue is the value of key in the data of the ConfigMap or Secret (kind)
// ns/name; a missing key of an optional reference sets no variable.
func keyValue[V ~string | ~[]byte](kind, ns, name, key string, optional *bool, data map[string]V) (string, bool, error) {
	v, ok := data[key]
	switch {
	case ok:
		return string(v), true, nil
	case optional != nil && *optional:
		return "", false, nil
	}
	return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, ns, name)
}

// podFieldValue resolves a downward API field path. Whole label and
// annotation maps are allowed only in volumes (volume true).
func podFieldValue(ec envContext, fieldPath string, volume bool) (string, error) {
	pod := ec.pod
	if p, key, ok := subscript(fieldPath); ok {
		switch p {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("unsupported field path %q", fieldPath)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		if !ec.hostIP.IsValid() {
			return "", nil
		}
		return ec.hostIP.String(), nil
	case "status.podIP", "status.podIPs":
		if !ec.podIP.IsValid() {
			return "", nil
		}
		return ec.podIP.String(), nil
	case "metadata.labels":
		if volume {
			return formatMap(pod.Labels), nil
		}
	case "metadata.annotations":
		if volume {
			return formatMap(pod.Annotations), nil
		}
	}
	return "", fmt.Errorf("unsupported field path %q", fieldPath)
}

// subscript splits "metadata.labels['key']".
func subscript(fp string) (string, string, bool) {
	i := strings.Index(fp, "['")
	if i < 0 || !strings.HasSuffix(fp, "']") {
		return "", "", false
	}
	return fp[:i], fp[i+2 : len(fp)-2], true
}

// formatMap renders a label or annotation map as the downward API does:
// key="value" lines (Go-quoted), sorted by key.
func formatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// resourceFieldValue resolves a resourceFieldRef for container c (the ref's
// containerName, when set, picks another container of the pod). A missing
// limit is the node's allocatable, as on a real node.
func resourceFieldValue(ec envContext, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" && (c == nil || ref.ContainerName != c.Name) {
		target = findContainer(ec.pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: container %q not found in the pod", ref.ContainerName)
		}
	}
	if target == nil {
		return "", fmt.Errorf("resourceFieldRef %q needs a containerName", ref.Resource)
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	name := corev1.ResourceName(res)
	var q resource.Quantity
	var set bool
	if kind == "limits" {
		q, set = target.Resources.Limits[name]
		if !set {
			q, set = ec.allocatable[name]
		}
	} else {
		q, set = target.Resources.Requests[name]
		if !set {
			// Requests default to limits when only limits are given.
			q, set = target.Resources.Limits[name]
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if !set {
		return "0", nil
	}
	if name == corev1.ResourceCPU {
		v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
		return strconv.FormatInt(int64(v), 10), nil
	}
	v := math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	return strconv.FormatInt(int64(v), 10), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// serviceEnv returns the Service variables a pod sees: the kubernetes Service
// of the default namespace always, and the Services of its namespace when
// enableServiceLinks is true (the default).
func (p *provider) serviceEnv(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	if p.services == nil {
		return out
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var svcs []*corev1.Service
	if links {
		if list, err := p.services.Services(pod.Namespace).List(everything()); err == nil {
			svcs = append(svcs, list...)
		}
	}
	if pod.Namespace != corev1.NamespaceDefault || !links {
		if k, err := p.services.Services(corev1.NamespaceDefault).Get("kubernetes"); err == nil {
			svcs = append(svcs, k)
		}
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	for _, s := range svcs {
		for k, v := range serviceVars(s) {
			out[k] = v
		}
	}
	return out
}

// serviceVars are the {NAME}_SERVICE_HOST/_PORT variables and the Docker link
// variables of one Service.
func serviceVars(s *corev1.Service) map[string]string {
	out := map[string]string{}
	ip := s.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
		return out
	}
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	out[prefix+"_SERVICE_HOST"] = ip
	out[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for i, sp := range s.Spec.Ports {
		if sp.Name != "" {
			out[prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_"))] = strconv.Itoa(int(sp.Port))
		}
		proto := strings.ToLower(string(sp.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		port := strconv.Itoa(int(sp.Port))
		url := proto + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out[prefix+"_PORT"] = url
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out[pp] = url
		out[pp+"_PROTO"] = proto
		out[pp+"_PORT"] = port
		out[pp+"_ADDR"] = ip
	}
	return out
}
