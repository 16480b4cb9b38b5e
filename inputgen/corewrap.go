package inputgen

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Wrapping core-typed values into the smallest real object that carries them, so the API server can
// judge them as it will once an operator renders them: a Pod with one container for a Container, a
// Pod for pod-level fields, a PersistentVolumeClaim for a claim spec or template, a Service for a
// ServiceSpec, a PodDisruptionBudget for a label selector, a Deployment or StatefulSet for a pod
// template, a workload spec or an update strategy. This file is pure: no I/O.
//
// What the value sets is kept as it is; around it the wrapper puts only what the operator always
// owns: the object's name, a container next to a pod-level field, a Service's ports, a workload's
// selector and the template labels it selects. Inside the value, a required field the CRD's
// sub-schema cannot express at all (a container's image, a probe's handler) is filled in too: the
// operator must supply it. Volumes a container mounts and resource claims it names are declared
// in the pod: whether such names resolve is the in-object reference check's business (refs.go).

const (
	coreV1   = "k8s.io/api/core/v1."
	appsV1   = "k8s.io/api/apps/v1."
	policyV1 = "k8s.io/api/policy/v1."
	metaV1   = "k8s.io/apimachinery/pkg/apis/meta/v1."

	// coreName names every wrapper object (dry-run creates never conflict).
	coreName = "gauntlet-core-check"
	// coreImage is the image of containers the wrapper adds or completes.
	coreImage = "registry.invalid/gauntlet/operand:1"
	// coreContainer names containers the wrapper adds or completes.
	coreContainer = "gauntlet"
	// coreLabel is the label a wrapper's workload selects its pods by.
	coreLabel = "gauntlet.dev/core-check"
)

// coreSite describes where a core-typed value sits in the CRD.
type coreSite struct {
	// typ is the qualified Go type the sub-schema matched, e.g. "k8s.io/api/core/v1.Container".
	typ string
	// name is the property's name and list the name of the list holding it ("" when not an
	// item): an init container or a liveness probe is validated as one.
	name, list string
	// fields are the field names the CRD's sub-schema declares for the value (nil: any).
	fields map[string]bool
}

// declares reports whether the CRD's sub-schema declares a field of the value.
func (s coreSite) declares(field string) bool { return s.fields == nil || s.fields[field] }

// coreObject is a value wrapped in a real object.
type coreObject struct {
	obj map[string]any
	// at is the value's field path in obj as the API server reports fields, e.g.
	// "spec.containers[0]" ("" when the value is the object itself).
	at string
	// what describes the value's role in obj, e.g. "a Pod's container".
	what string
}

// wrapCore wraps v, a value of site's core type, in the smallest object that carries it; false when
// the type has no such object (an ObjectReference means nothing on its own). v is not modified.
func wrapCore(site coreSite, v map[string]any) (coreObject, bool) {
	v = jsonv.CopyMap(v)
	t := site.typ
	// Pod-level and container-level values go into a Pod with one container.
	if path, what, ok := podPlace(site); ok {
		spec := map[string]any{}
		if path[0] == "containers" && t != coreV1+"Container" {
			spec["containers"] = []any{skeletonContainer()}
		}
		value := any(v)
		switch t {
		case coreV1 + "Container":
			completeContainer(v, site)
		case coreV1 + "Probe":
			completeProbe(v, site)
		}
		_ = setPath(spec, path, value)
		// Objects on the way to the value get the names they need.
		if path[0] == "volumes" && len(path) > 2 {
			vol := spec["volumes"].([]any)[0].(map[string]any)
			vol["name"] = coreContainer
			vol["configMap"].(map[string]any)["name"] = coreContainer
		}
		if len(path) > 4 && path[2] == "env" && path[4] == "valueFrom" {
			c := spec["containers"].([]any)[0].(map[string]any)
			c["env"].([]any)[0].(map[string]any)["name"] = "GAUNTLET_VALUE"
		}
		completePodSpec(spec, nil)
		return coreObject{obj: object("v1", "Pod", map[string]any{"spec": spec}), at: "spec" + renderPath(path), what: what}, true
	}
	switch t {
	case coreV1 + "PodSpec":
		completePodSpec(v, nil)
		return coreObject{obj: object("v1", "Pod", map[string]any{"spec": v}), at: "spec", what: "a Pod's spec"}, true
	case metaV1 + "ObjectMeta":
		// Only labels and annotations keep their meaning on another object; the operator names it.
		md := map[string]any{"name": coreName}
		for _, k := range []string{"labels", "annotations"} {
			if x, ok := v[k]; ok {
				md[k] = x
			}
		}
		return coreObject{obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md,
			"spec": map[string]any{"containers": []any{skeletonContainer()}}}, at: "metadata", what: "a Pod's metadata"}, true
	case coreV1 + "PodTemplateSpec":
		spec := workloadSpec(map[string]any{"template": v}, nil)
		return coreObject{obj: object("apps/v1", "Deployment", map[string]any{"spec": spec}), at: "spec.template", what: "a Deployment's pod template"}, true
	case appsV1 + "DeploymentSpec":
		return coreObject{obj: object("apps/v1", "Deployment", map[string]any{"spec": workloadSpec(v, nil)}), at: "spec", what: "a Deployment's spec"}, true
	case appsV1 + "StatefulSetSpec":
		return coreObject{obj: object("apps/v1", "StatefulSet", map[string]any{"spec": workloadSpec(v, claimTemplateNames(v))}), at: "spec", what: "a StatefulSet's spec"}, true
	case appsV1 + "StatefulSetUpdateStrategy":
		spec := workloadSpec(map[string]any{"updateStrategy": v}, nil)
		return coreObject{obj: object("apps/v1", "StatefulSet", map[string]any{"spec": spec}), at: "spec.updateStrategy", what: "a StatefulSet's update strategy"}, true
	case appsV1 + "RollingUpdateStatefulSetStrategy":
		spec := workloadSpec(map[string]any{"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": v}}, nil)
		return coreObject{obj: object("apps/v1", "StatefulSet", map[string]any{"spec": spec}), at: "spec.updateStrategy.rollingUpdate", what: "a StatefulSet's rolling update"}, true
	case appsV1 + "DeploymentStrategy":
		spec := workloadSpec(map[string]any{"strategy": v}, nil)
		return coreObject{obj: object("apps/v1", "Deployment", map[string]any{"spec": spec}), at: "spec.strategy", what: "a Deployment's strategy"}, true
	case appsV1 + "RollingUpdateDeployment":
		spec := workloadSpec(map[string]any{"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": v}}, nil)
		return coreObject{obj: object("apps/v1", "Deployment", map[string]any{"spec": spec}), at: "spec.strategy.rollingUpdate", what: "a Deployment's rolling update"}, true
	case coreV1 + "PersistentVolumeClaim":
		md := map[string]any{"name": coreName}
		if old, ok := v["metadata"].(map[string]any); ok {
			for _, k := range []string{"labels", "annotations"} {
				if x, ok := old[k]; ok {
					md[k] = x
				}
			}
		}
		v["apiVersion"], v["kind"], v["metadata"] = "v1", "PersistentVolumeClaim", md
		return coreObject{obj: v, at: "", what: "a PersistentVolumeClaim"}, true
	case coreV1 + "PersistentVolumeClaimSpec":
		return coreObject{obj: object("v1", "PersistentVolumeClaim", map[string]any{"spec": v}), at: "spec", what: "a PersistentVolumeClaim's spec"}, true
	case coreV1 + "ServiceSpec":
		if _, ok := v["ports"]; !ok {
			v["ports"] = []any{map[string]any{"name": "gauntlet", "port": int64(8080)}}
		}
		return coreObject{obj: object("v1", "Service", map[string]any{"spec": v}), at: "spec", what: "a Service's spec"}, true
	case coreV1 + "ServicePort":
		return coreObject{obj: object("v1", "Service", map[string]any{"spec": map[string]any{"ports": []any{v}}}), at: "spec.ports[0]", what: "a Service's port"}, true
	case metaV1 + "LabelSelector":
		return coreObject{obj: object("policy/v1", "PodDisruptionBudget", map[string]any{"spec": map[string]any{"selector": v}}), at: "spec.selector", what: "a label selector (of a PodDisruptionBudget)"}, true
	case metaV1 + "LabelSelectorRequirement":
		spec := map[string]any{"selector": map[string]any{"matchExpressions": []any{v}}}
		return coreObject{obj: object("policy/v1", "PodDisruptionBudget", map[string]any{"spec": spec}), at: "spec.selector.matchExpressions[0]", what: "a label selector requirement (of a PodDisruptionBudget)"}, true
	case policyV1 + "PodDisruptionBudgetSpec":
		return coreObject{obj: object("policy/v1", "PodDisruptionBudget", map[string]any{"spec": v}), at: "spec", what: "a PodDisruptionBudget's spec"}, true
	}
	return coreObject{}, false
}

// podPlace returns where a value of a pod- or container-level type goes in a pod spec, as path
// tokens, and its role; false for other types.
func podPlace(site coreSite) ([]jsonv.Token, string, bool) {
	c0 := []jsonv.Token{"containers", 0}
	in := func(base []jsonv.Token, rest ...jsonv.Token) []jsonv.Token {
		return append(append([]jsonv.Token{}, base...), rest...)
	}
	req := in([]jsonv.Token{"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", 0})
	switch strings.TrimPrefix(site.typ, coreV1) {
	case "Container":
		if strings.Contains(strings.ToLower(site.list), "init") {
			return []jsonv.Token{"initContainers", 0}, "a Pod's init container", true
		}
		return c0, "a Pod's container", true
	case "Affinity":
		return []jsonv.Token{"affinity"}, "a Pod's affinity", true
	case "NodeAffinity":
		return []jsonv.Token{"affinity", "nodeAffinity"}, "a Pod's node affinity", true
	case "PodAffinity":
		return []jsonv.Token{"affinity", "podAffinity"}, "a Pod's pod affinity", true
	case "PodAntiAffinity":
		return []jsonv.Token{"affinity", "podAntiAffinity"}, "a Pod's pod anti-affinity", true
	case "PodAffinityTerm":
		return []jsonv.Token{"affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0}, "a Pod's pod affinity term", true
	case "WeightedPodAffinityTerm":
		return []jsonv.Token{"affinity", "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0}, "a Pod's weighted pod affinity term", true
	case "NodeSelectorTerm":
		return req, "a Pod's node selector term", true
	case "NodeSelectorRequirement":
		return in(req, "matchExpressions", 0), "a Pod's node selector requirement", true
	case "PreferredSchedulingTerm":
		return []jsonv.Token{"affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0}, "a Pod's preferred scheduling term", true
	case "TopologySpreadConstraint":
		return []jsonv.Token{"topologySpreadConstraints", 0}, "a Pod's topology spread constraint", true
	case "Toleration":
		return []jsonv.Token{"tolerations", 0}, "a Pod's toleration", true
	case "PodSecurityContext":
		return []jsonv.Token{"securityContext"}, "a Pod's security context", true
	case "SecurityContext":
		return in(c0, "securityContext"), "a container's security context", true
	case "Capabilities":
		return in(c0, "securityContext", "capabilities"), "a container's capabilities", true
	case "SELinuxOptions":
		return in(c0, "securityContext", "seLinuxOptions"), "a container's SELinux options", true
	case "SeccompProfile":
		return []jsonv.Token{"securityContext", "seccompProfile"}, "a Pod's seccomp profile", true
	case "WindowsSecurityContextOptions":
		return in(c0, "securityContext", "windowsOptions"), "a container's Windows options", true
	case "Probe":
		kind := "readinessProbe"
		for _, k := range []string{"liveness", "startup"} {
			if strings.Contains(strings.ToLower(site.name), k) {
				kind = k + "Probe"
			}
		}
		return in(c0, kind), "a container's " + strings.TrimSuffix(kind, "Probe") + " probe", true
	case "Lifecycle":
		return in(c0, "lifecycle"), "a container's lifecycle", true
	case "LifecycleHandler":
		return in(c0, "lifecycle", "preStop"), "a container's lifecycle handler", true
	case "HTTPGetAction":
		return in(c0, "readinessProbe", "httpGet"), "a probe's HTTP GET", true
	case "TCPSocketAction":
		return in(c0, "readinessProbe", "tcpSocket"), "a probe's TCP socket", true
	case "ExecAction":
		return in(c0, "readinessProbe", "exec"), "a probe's command", true
	case "GRPCAction":
		return in(c0, "readinessProbe", "grpc"), "a probe's gRPC check", true
	case "EnvVar":
		return in(c0, "env", 0), "a container's environment variable", true
	case "EnvVarSource":
		return in(c0, "env", 0, "valueFrom"), "an environment variable's source", true
	case "EnvFromSource":
		return in(c0, "envFrom", 0), "a container's envFrom source", true
	case "SecretKeySelector":
		return in(c0, "env", 0, "valueFrom", "secretKeyRef"), "an environment variable's Secret key", true
	case "ConfigMapKeySelector":
		return in(c0, "env", 0, "valueFrom", "configMapKeyRef"), "an environment variable's ConfigMap key", true
	case "ObjectFieldSelector":
		return in(c0, "env", 0, "valueFrom", "fieldRef"), "an environment variable's field reference", true
	case "ResourceFieldSelector":
		return in(c0, "env", 0, "valueFrom", "resourceFieldRef"), "an environment variable's resource reference", true
	case "ContainerPort":
		return in(c0, "ports", 0), "a container's port", true
	case "VolumeMount":
		return in(c0, "volumeMounts", 0), "a container's volume mount", true
	case "VolumeDevice":
		return in(c0, "volumeDevices", 0), "a container's volume device", true
	case "ResourceRequirements":
		return in(c0, "resources"), "a container's resources", true
	case "Volume":
		return []jsonv.Token{"volumes", 0}, "a Pod's volume", true
	case "KeyToPath":
		return []jsonv.Token{"volumes", 0, "configMap", "items", 0}, "a volume's key-to-path item", true
	case "PodDNSConfig":
		return []jsonv.Token{"dnsConfig"}, "a Pod's DNS config", true
	case "PodDNSConfigOption":
		return []jsonv.Token{"dnsConfig", "options", 0}, "a Pod's DNS option", true
	case "HostAlias":
		return []jsonv.Token{"hostAliases", 0}, "a Pod's host alias", true
	case "Sysctl":
		return []jsonv.Token{"securityContext", "sysctls", 0}, "a Pod's sysctl", true
	}
	return nil, "", false
}

// object builds an object of kind with the wrapper's name and the given top-level fields.
func object(apiVersion, kind string, fields map[string]any) map[string]any {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": coreName}}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

func skeletonContainer() map[string]any {
	return map[string]any{"name": coreContainer, "image": coreImage}
}

// completeContainer fills a container's name and image when the CRD's sub-schema has no such field
// (the operator sets them). A container the CRD gives no name field is one the operator builds (an
// exporter, a TLS sidecar): it also brings the image when the value sets none.
func completeContainer(c map[string]any, site coreSite) {
	operators := !site.declares("name")
	if _, ok := c["name"]; !ok && operators {
		c["name"] = coreContainer
	}
	if _, ok := c["image"]; !ok && (operators || !site.declares("image")) {
		c["image"] = coreImage
	}
}

// probeHandlers are a probe's handler fields; exactly one must be set.
var probeHandlers = []string{"exec", "httpGet", "tcpSocket", "grpc"}

// completeProbe gives a probe a TCP handler when the CRD's sub-schema declares none (a CRD that
// exposes only a probe's timing: the operator brings the check).
func completeProbe(p map[string]any, site coreSite) {
	for _, h := range probeHandlers {
		if site.declares(h) {
			return
		}
	}
	p["tcpSocket"] = map[string]any{"port": int64(8080)}
}

// completePodSpec gives a pod spec a container when it has none and declares, as emptyDir
// volumes (claim-backed for block devices), the names its containers mount that it does not
// declare, except those in claims (a StatefulSet's volume claim templates); containers' resource
// claims get pod-level resourceClaims entries.
func completePodSpec(spec map[string]any, claims map[string]bool) {
	if l, isList := spec["containers"].([]any); spec["containers"] == nil || (isList && len(l) == 0) {
		spec["containers"] = []any{skeletonContainer()}
	}
	declared := map[string]bool{}
	vols, _ := spec["volumes"].([]any)
	for _, e := range vols {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				declared[n] = true
			}
		}
	}
	claimed := map[string]bool{}
	rcs, _ := spec["resourceClaims"].([]any)
	for _, e := range rcs {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				claimed[n] = true
			}
		}
	}
	var addVols, addClaims []any
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			for _, field := range []string{"volumeMounts", "volumeDevices"} {
				refs, _ := cm[field].([]any)
				for _, r := range refs {
					rm, _ := r.(map[string]any)
					n, _ := rm["name"].(string)
					if n == "" || declared[n] || claims[n] {
						continue
					}
					declared[n] = true
					vol := map[string]any{"name": n, "emptyDir": map[string]any{}}
					if field == "volumeDevices" {
						vol = map[string]any{"name": n, "persistentVolumeClaim": map[string]any{"claimName": n}}
					}
					addVols = append(addVols, vol)
				}
			}
			res, _ := cm["resources"].(map[string]any)
			cl, _ := res["claims"].([]any)
			for _, r := range cl {
				rm, _ := r.(map[string]any)
				n, _ := rm["name"].(string)
				if n == "" || claimed[n] {
					continue
				}
				claimed[n] = true
				addClaims = append(addClaims, map[string]any{"name": n, "resourceClaimName": n})
			}
		}
	}
	if len(addVols) > 0 {
		spec["volumes"] = append(append([]any{}, vols...), addVols...)
	}
	if len(addClaims) > 0 {
		spec["resourceClaims"] = append(append([]any{}, rcs...), addClaims...)
	}
}

// claimTemplateNames are the names a StatefulSet spec's volume claim templates declare.
func claimTemplateNames(spec map[string]any) map[string]bool {
	out := map[string]bool{}
	l, _ := spec["volumeClaimTemplates"].([]any)
	for _, e := range l {
		m, _ := e.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		if n, ok := md["name"].(string); ok {
			out[n] = true
		}
	}
	return out
}

// workloadSpec completes a Deployment's or StatefulSet's spec: a selector when it has none, a pod
// template (with a container) when it has none, and template labels its selector matches.
func workloadSpec(spec map[string]any, claims map[string]bool) map[string]any {
	sel, hasSel := spec["selector"].(map[string]any)
	if _, present := spec["selector"]; !present {
		sel, hasSel = map[string]any{"matchLabels": map[string]any{coreLabel: "x"}}, true
		spec["selector"] = sel
	}
	tmpl, ok := spec["template"].(map[string]any)
	if _, present := spec["template"]; !present {
		tmpl, ok = map[string]any{}, true
		spec["template"] = tmpl
	}
	if !ok {
		return spec
	}
	md, _ := tmpl["metadata"].(map[string]any)
	if _, present := tmpl["metadata"]; !present {
		md = map[string]any{}
		tmpl["metadata"] = md
	}
	if md != nil {
		labels, _ := md["labels"].(map[string]any)
		if _, present := md["labels"]; !present {
			labels = map[string]any{}
			md["labels"] = labels
		}
		if labels != nil && hasSel {
			for k, v := range selectedLabels(sel) {
				if _, set := labels[k]; !set {
					labels[k] = v
				}
			}
		}
	}
	ps, _ := tmpl["spec"].(map[string]any)
	if _, present := tmpl["spec"]; !present {
		ps = map[string]any{}
		tmpl["spec"] = ps
	}
	if ps != nil {
		completePodSpec(ps, claims)
	}
	return spec
}

// selectedLabels returns labels a selector matches (the operator labels its pods so): its
// matchLabels, the first value of each In requirement, a value for each Exists requirement.
func selectedLabels(sel map[string]any) map[string]any {
	out := map[string]any{}
	if ml, ok := sel["matchLabels"].(map[string]any); ok {
		for k, v := range ml {
			out[k] = v
		}
	}
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		k, _ := m["key"].(string)
		if k == "" {
			continue
		}
		if _, set := out[k]; set {
			continue
		}
		switch m["operator"] {
		case "In":
			if vals, _ := m["values"].([]any); len(vals) > 0 {
				out[k] = vals[0]
			}
		case "Exists":
			out[k] = "x"
		}
	}
	return out
}

// setPath stores v at the path of tokens in m, creating objects and one-element lists on the way.
func setPath(m map[string]any, toks []jsonv.Token, v any) error {
	var cur any = m
	for i, t := range toks {
		last := i == len(toks)-1
		next := func() any {
			if last {
				return v
			}
			if _, isIdx := toks[i+1].(int); isIdx {
				return []any{nil}
			}
			return map[string]any{}
		}
		switch x := cur.(type) {
		case map[string]any:
			k := t.(string)
			if _, ok := x[k]; !ok || last {
				x[k] = next()
			}
			cur = x[k]
		case []any:
			idx := t.(int)
			if x[idx] == nil || last {
				x[idx] = next()
			}
			cur = x[idx]
		}
	}
	return nil
}

// renderPath renders tokens as a field path suffix: ".containers[0].resources".
func renderPath(toks []jsonv.Token) string {
	var b strings.Builder
	for _, t := range toks {
		switch x := t.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(x) + "]")
		case string:
			b.WriteString("." + x)
		}
	}
	return b.String()
}

// coreTypes lists the types wrapCore handles, sorted (for documentation and tests).
func coreTypes() []string {
	var out []string
	for _, t := range []string{
		"Container", "Affinity", "NodeAffinity", "PodAffinity", "PodAntiAffinity", "PodAffinityTerm",
		"WeightedPodAffinityTerm", "NodeSelectorTerm", "NodeSelectorRequirement", "PreferredSchedulingTerm",
		"TopologySpreadConstraint", "Toleration", "PodSecurityContext", "SecurityContext", "Capabilities",
		"SELinuxOptions", "SeccompProfile", "WindowsSecurityContextOptions", "Probe", "Lifecycle",
		"LifecycleHandler", "HTTPGetAction", "TCPSocketAction", "ExecAction", "GRPCAction", "EnvVar",
		"EnvVarSource", "EnvFromSource", "SecretKeySelector", "ConfigMapKeySelector", "ObjectFieldSelector",
		"ResourceFieldSelector", "ContainerPort", "VolumeMount", "VolumeDevice", "ResourceRequirements",
		"Volume", "KeyToPath", "PodDNSConfig", "PodDNSConfigOption", "HostAlias", "Sysctl", "PodSpec",
		"PodTemplateSpec", "PersistentVolumeClaim", "PersistentVolumeClaimSpec", "ServiceSpec", "ServicePort",
	} {
		out = append(out, coreV1+t)
	}
	out = append(out, metaV1+"ObjectMeta", metaV1+"LabelSelector", metaV1+"LabelSelectorRequirement",
		appsV1+"DeploymentSpec", appsV1+"StatefulSetSpec", appsV1+"StatefulSetUpdateStrategy",
		appsV1+"RollingUpdateStatefulSetStrategy", appsV1+"DeploymentStrategy", appsV1+"RollingUpdateDeployment",
		policyV1+"PodDisruptionBudgetSpec")
	sort.Strings(out)
	return out
}
