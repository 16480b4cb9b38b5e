package inputgen

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// What Kubernetes requires of fields of its core types beyond their Go types: the values a field
// accepts, the integer ranges it allows, and the places it may not appear at all. The generator
// draws valid test cases inside these rules; the API server's dry run (CoreValidator) is the
// judge, these rules spare it most refusals and hold when it does not run.

// coreKnown returns the values the API server accepts for a free-string field of a core type
// whose Go type carries no enumeration (a field selector's key, a downward API field path), or nil.
func coreKnown(p *crd.Property) []string {
	owner, name, ok := coreField(p)
	if !ok || p.Type != crd.TypeString {
		return nil
	}
	switch {
	case owner == "matchFields" && name == "key":
		return []string{"metadata.name"}
	case owner == "fieldRef" && name == "fieldPath":
		return []string{"metadata.name", "metadata.namespace", "metadata.uid"}
	case owner == "resourceFieldRef" && name == "resource":
		return []string{"limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}
	case name == "topologyKey":
		return []string{"kubernetes.io/hostname"}
	case owner == "initContainers" && name == "restartPolicy":
		// The only restart policy of an init container: a sidecar.
		return []string{"Always"}
	case name == "restartPolicy" && (containerLists[owner] || owner == "container") && p.Type == crd.TypeString:
		// A regular container restarts as its pod does: Never and OnFailure per container need
		// the ContainerRestartRules feature, which the embedded cluster's kubelet does not
		// implement (it applies the pod's policy).
		return []string{"Always"}
	case name == "restartPolicy" && owner == "spec" && inPodTemplate(p):
		// A workload's pod template restarts always.
		return []string{"Always"}
	case name == "dnsPolicy" && p.Parent != nil && (p.Parent.Field("dnsConfig") == nil || p.Parent.Field("dnsConfig").Field("nameservers") == nil):
		// None needs name servers in a dnsConfig the CRD cannot carry here.
		return []string{"ClusterFirst", "ClusterFirstWithHostNet", "Default"}
	case owner == "resizePolicy" && name == "resourceName":
		return []string{"cpu", "memory"}
	case (owner == "dataSource" || owner == "dataSourceRef") && name == "kind":
		return []string{"PersistentVolumeClaim"}
	case name == "kind" && p.Parent != nil:
		// An embedded object's kind is its type's (a claim template is a PersistentVolumeClaim).
		if sh := coreShape(p.Parent); sh != nil && sh.GoType != "" && sh.Fields["kind"] != nil {
			return []string{sh.GoType[strings.LastIndex(sh.GoType, ".")+1:]}
		}
	}
	return nil
}

// coreIntRange narrows the integer range of a field of a core type to what the API server
// accepts (a positive skew, a weight of 1 to 100, a liveness probe's success threshold of 1, a
// node port in the node port range); ok is false when it says nothing.
func coreIntRange(p *crd.Property) (lo, hi int64, ok bool) {
	owner, name, found := coreField(p)
	if !found || p.Type != crd.TypeInteger {
		return 0, 0, false
	}
	switch {
	case name == "maxSkew":
		return 1, 5, true
	case name == "weight":
		return 1, 100, true
	case name == "successThreshold" && (owner == "livenessProbe" || owner == "startupProbe" ||
		(p.Parent != nil && (p.Parent.Path.Last() == "livenessProbe" || p.Parent.Path.Last() == "startupProbe"))):
		return 1, 1, true
	case name == "terminationGracePeriodSeconds" && inProbe(p):
		// A probe's grace period overrides the pod's: it must be positive.
		return 1, 60, true
	case name == "nodePort" || name == "healthCheckNodePort":
		return 30000, 32767, true
	case name == "containerPort" || name == "hostPort" || name == "port" || name == "targetPort":
		return 1, 65535, true
	case owner == "serviceAccountToken" && name == "expirationSeconds":
		return 600, 86400, true
	}
	return 0, 0, false
}

// coreForbidden says why a property of a core type may not be set in a valid desired state
// wherever the operator renders it, or "".
func coreForbidden(p *crd.Property) string {
	if p.Semantic == nil || p.Semantic.Root == "" {
		return ""
	}
	f := p.Semantic.Field
	if strings.HasPrefix(f, "ephemeralContainers") || strings.Contains(f, ".ephemeralContainers") {
		return "ephemeral containers cannot be set when a pod is created or in a pod template"
	}
	if i := strings.Index(f, "ephemeral.volumeClaimTemplate.metadata."); i >= 0 {
		rest := f[i+len("ephemeral.volumeClaimTemplate.metadata."):]
		if !strings.HasPrefix(rest, "labels") && !strings.HasPrefix(rest, "annotations") {
			return "an ephemeral volume's claim template takes only labels and annotations"
		}
	}
	if strings.HasSuffix(f, "windowsOptions.hostProcess") {
		return "a Windows host process container needs a Windows node and the host's network"
	}
	if strings.Contains(f, "valueFrom.fileKeyRef") {
		return "an environment variable from a file names a volume of the pod the operator creates"
	}
	if strings.Contains(f, "restartPolicyRules") {
		return "container restart rules need a feature gate test clusters do not enable"
	}
	if inPodTemplate(p) && (strings.HasSuffix(f, "spec.activeDeadlineSeconds")) {
		return "a workload's pod template takes no active deadline"
	}
	if strings.HasSuffix(f, "readinessProbe.terminationGracePeriodSeconds") ||
		(p.Path.Last() == "terminationGracePeriodSeconds" && p.Parent != nil && p.Parent.Path.Last() == "readinessProbe" && inProbe(p)) {
		return "a readiness probe takes no termination grace period"
	}
	if src := exoticVolume(p); src != "" {
		return "a " + src + " volume needs storage or a driver the test cluster does not have: the pod never starts"
	}
	return ""
}

// sidecarOnly lists the fields of an init container the API server accepts only when the init
// container is a sidecar (restartPolicy: Always).
var sidecarOnly = []string{"lifecycle", "livenessProbe", "readinessProbe", "startupProbe"}

// initContainerOf returns the init container item p lies in (spec.initContainers[*] of a pod
// spec the semantic mapping matched), or nil.
func initContainerOf(p *crd.Property) *crd.Property {
	for q := p; q != nil; q = q.Parent {
		if q.Name() == "[*]" && q.Parent != nil && q.Parent.Path.Last() == "initContainers" &&
			q.Semantic != nil && q.Semantic.Root != "" {
			return q
		}
	}
	return nil
}

// exoticSources are the volume sources that need storage or a driver a test cluster does not have:
// a pod with one never starts.
var exoticSources = map[string]bool{
	"awsElasticBlockStore": true, "azureDisk": true, "azureFile": true, "cephfs": true, "cinder": true,
	"csi": true, "fc": true, "flexVolume": true, "flocker": true, "gcePersistentDisk": true, "gitRepo": true,
	"glusterfs": true, "iscsi": true, "nfs": true, "photonPersistentDisk": true, "portworxVolume": true,
	"quobyte": true, "rbd": true, "scaleIO": true, "storageos": true, "vsphereVolume": true, "image": true,
}

// exoticVolume returns the exotic volume source p lies in ("rbd"), or "".
func exoticVolume(p *crd.Property) string {
	if p.Semantic == nil || p.Semantic.Root == "" {
		return ""
	}
	segs := strings.Split(dropWildcards.Replace(p.Semantic.Field), ".")
	rootVolume := strings.HasSuffix(rootType(p), "/v1.Volume")
	for i, s := range segs {
		if !exoticSources[s] {
			continue
		}
		if (i > 0 && segs[i-1] == "volumes") || (i == 0 && rootVolume) {
			return s
		}
	}
	return ""
}

// completeCore adds to m, a new instance of node, the fields Kubernetes requires of the core type
// node maps to though the CRD does not (a container's image, a claim's access modes and storage,
// the name a reference needs, a probe's handler).
func (c *caseCtx) completeCore(node *crd.Property, m map[string]any) {
	if node.Semantic == nil || node.Semantic.Root == "" {
		return
	}
	set := func(name string, v func() any) {
		if f := node.Field(name); f != nil {
			if _, ok := m[name]; !ok {
				m[name] = v()
			}
		}
	}
	last := node.Path.Last()
	typ := strings.TrimPrefix(strings.SplitN(node.Semantic.Type, "#", 2)[0], coreV1)
	switch {
	case refTypes[typ] && node.Field("name") != nil:
		// A reference under a name of the CRD's own (a password's SecretKeySelector): it names
		// its object (an empty name, the CRD's default, is refused).
		if n, _ := m["name"].(string); n == "" {
			delete(m, "name")
		}
		set("name", func() any { return c.fill(node.Field("name")) })
		set("key", func() any { return c.fill(node.Field("key")) })
	case last == "selector" && typ == metaV1+"LabelSelector" && node.Parent != nil && node.Parent.Field("template") != nil:
		// A workload's selector selects something (an empty one is refused); the label it
		// selects is set on the pods by the operator (the judgement labels the template so).
		ml, _ := m["matchLabels"].(map[string]any)
		me, _ := m["matchExpressions"].([]any)
		if len(ml) == 0 && len(me) == 0 && node.Field("matchLabels") != nil {
			m["matchLabels"] = map[string]any{"app.kubernetes.io/name": "gauntlet-" + c.word(5)}
		}
	case node.Field("accessModes") != nil && node.Field("resources") != nil:
		// A PersistentVolumeClaimSpec.
		set("accessModes", func() any { return []any{"ReadWriteOnce"} })
		res, _ := m["resources"].(map[string]any)
		req, _ := res["requests"].(map[string]any)
		if req["storage"] == nil && node.Field("resources").Field("requests") != nil {
			nreq := map[string]any{"storage": "1Gi"}
			for k, v := range req {
				nreq[k] = v
			}
			nres := map[string]any{"requests": nreq}
			for k, v := range res {
				if k != "requests" {
					nres[k] = v
				}
			}
			m["resources"] = nres
		}
	case node.Field("image") != nil && c.g.domainOf(node.Field("image")) == domImage:
		set("image", func() any { return c.fill(node.Field("image")) })
	case last == "configMap" || last == "configMapRef" || last == "secretRef" || last == "configMapKeyRef" || last == "secretKeyRef":
		set("name", func() any { return c.fill(node.Field("name")) })
		set("key", func() any { return c.fill(node.Field("key")) })
	case last == "secret":
		set("secretName", func() any { return c.fill(node.Field("secretName")) })
		set("name", func() any { return c.fill(node.Field("name")) })
	case last == "persistentVolumeClaim" && node.Field("claimName") != nil:
		set("claimName", func() any { return c.fill(node.Field("claimName")) })
	case last == "exec":
		set("command", func() any { return []any{"true"} })
	case last == "ephemeral" && node.Field("volumeClaimTemplate") != nil:
		// A generic ephemeral volume is its claim template.
		set("volumeClaimTemplate", func() any { return c.minimal(node.Field("volumeClaimTemplate")) })
	case last == "resourceFieldRef" && node.Field("containerName") != nil && strings.Contains(node.Semantic.Field, "items"):
		// A volume's resource field names a container: the seed's, else a fresh name.
		set("containerName", func() any {
			f := node.Field("containerName")
			for _, v := range c.g.pool.Related("container-names", []string{"name"}, func(path string) bool {
				src := c.g.schema.Lookup(path)
				return src != nil && c.g.domainOf(src) == domDNSLabel && strings.HasSuffix(c.g.meaning(src), "|core:container.name")
			}) {
				if c.g.fits(f, v) {
					return v
				}
			}
			return c.fill(f)
		})
	case node.Field("nodeSelectorTerms") != nil:
		// A required node affinity: one term every Linux node satisfies.
		if l, _ := m["nodeSelectorTerms"].([]any); len(l) == 0 {
			m["nodeSelectorTerms"] = []any{map[string]any{"matchExpressions": []any{
				map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"}}}}}
		}
	case last == "options" && node.Name() == "[*]" && node.Parent.Parent != nil && node.Parent.Parent.Path.Last() == "dnsConfig":
		set("name", func() any { return "ndots" })
	case node.Field("spec") != nil && node.Field("spec").Field("accessModes") != nil && node.Field("spec").Field("resources") != nil:
		// A PersistentVolumeClaim (template): a spec, and a name the workload names its claims by.
		set("spec", func() any { return c.minimal(node.Field("spec")) })
		ephemeral := strings.Contains(node.Semantic.Field, "ephemeral.volumeClaimTemplate") || node.Path.Last() == "volumeClaimTemplate" && node.Parent != nil && node.Parent.Path.Last() == "ephemeral"
		if md := node.Field("metadata"); md != nil && (md.Field("name") != nil || md.IsFreeForm() || len(md.Fields) == 0) && !ephemeral {
			meta, _ := m["metadata"].(map[string]any)
			if meta["name"] == nil {
				nm := jsonv.CopyMap(meta)
				if nm == nil {
					nm = map[string]any{}
				}
				nm["name"] = "gauntlet-" + c.word(5)
				m["metadata"] = nm
			}
		}
	case last == "envFrom" && node.Field("configMapRef") != nil:
		if !hasAny(m, []string{"configMapRef", "secretRef"}) {
			ref := node.Field("configMapRef")
			v := c.minimal(ref).(map[string]any)
			if ref.Field("optional") != nil {
				// Whatever it names may not exist: the container starts anyway.
				v["optional"] = true
			}
			m["configMapRef"] = v
		}
	}
	// The scalar fields the core type's Go struct declares without omitempty.
	if sh := coreShape(node); sh != nil {
		req := slices.Sorted(maps.Keys(sh.Required))
		for _, name := range req {
			f := node.Field(name)
			switch {
			case f == nil:
			case f.IntOrString || (f.Type != crd.TypeObject && f.Type != crd.TypeArray):
				set(name, func() any { return c.fill(f) })
			case requiredObjects[name]:
				set(name, func() any { return c.minimal(f) })
			}
		}
	}
	if g := oneOfGroup(node); g != nil && g.fallback != "" && !hasAny(m, g.members) {
		set(g.fallback, func() any { return jsonv.Copy(g.value) })
	}
}

// refTypes are the core types that reference an object by name, which Kubernetes requires though
// the Go type allows it empty (not a bare LocalObjectReference: an image pull secret without a
// name is only warned about).
var refTypes = map[string]bool{
	"SecretKeySelector": true, "ConfigMapKeySelector": true, "SecretEnvSource": true, "ConfigMapEnvSource": true,
	"ConfigMapVolumeSource": true, "ConfigMapProjection": true, "SecretProjection": true,
}

// oneOf is a group of fields of a core type of which at most one may be set (exactly one when
// fallback is set: the field and value used when none is).
type oneOf struct {
	members  []string
	fallback string
	value    any
}

var (
	handlers    = []string{"exec", "httpGet", "tcpSocket", "grpc", "sleep"}
	trueCommand = map[string]any{"command": []any{"true"}}
	oneOfs      = map[string]oneOf{
		"env":            {members: []string{"value", "valueFrom"}},
		"valueFrom":      {members: []string{"fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef"}, fallback: "fieldRef", value: map[string]any{"fieldPath": "metadata.name"}},
		"envFrom":        {members: []string{"configMapRef", "secretRef"}},
		"livenessProbe":  {members: handlers, fallback: "exec", value: trueCommand},
		"readinessProbe": {members: handlers, fallback: "exec", value: trueCommand},
		"startupProbe":   {members: handlers, fallback: "exec", value: trueCommand},
		"postStart":      {members: handlers, fallback: "exec", value: trueCommand},
		"preStop":        {members: handlers, fallback: "exec", value: trueCommand},
		"volumes": {members: []string{"emptyDir", "configMap", "secret", "projected", "downwardAPI", "hostPath", "persistentVolumeClaim", "ephemeral",
			"awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo",
			"glusterfs", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume", "image"},
			fallback: "emptyDir", value: map[string]any{}},
		"sources": {members: []string{"secret", "configMap", "downwardAPI", "serviceAccountToken", "clusterTrustBundle", "podCertificate"}},
		// A mount's sub-path is written out or expanded from the environment, not both.
		"volumeMounts": {members: []string{"subPath", "subPathExpr"}},
	}
)

// oneOfGroup returns the one-of group of the core object node (an env var, an env source, a probe,
// a volume), or nil.
func oneOfGroup(node *crd.Property) *oneOf {
	if node.Semantic == nil || node.Semantic.Root == "" || node.Type != crd.TypeObject {
		return nil
	}
	name := node.Path.Last()
	if node.Semantic.Field == "" {
		// The matched root itself: by its type.
		t := strings.SplitN(node.Semantic.Type, "#", 2)[0]
		switch t[strings.LastIndex(t, ".")+1:] {
		case "EnvVar":
			name = "env"
		case "Volume":
			name = "volumes"
		case "Probe":
			name = "livenessProbe"
		case "VolumeMount":
			name = "volumeMounts"
		default:
			return nil
		}
	}
	if name == "items" && node.Parent != nil && node.Parent.Parent != nil && node.Parent.Parent.Path.Last() == "downwardAPI" {
		return &oneOf{members: []string{"fieldRef", "resourceFieldRef"}, fallback: "fieldRef", value: map[string]any{"fieldPath": "metadata.name"}}
	}
	if name == "sources" && (node.Parent == nil || node.Parent.Path.Last() != "projected") {
		return nil
	}
	g, ok := oneOfs[name]
	if !ok {
		return nil
	}
	return &g
}

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return true
		}
	}
	return false
}

// keepOneOf removes, in every instance of a one-of group p lies in (or is a member of), the
// other members when p's member is set, and sets the fallback member of a group left with none.
func keepOneOf(p *crd.Property, states []map[string]any) []string {
	var notes []string
	for q := p; q != nil && q.Parent != nil; q = q.Parent {
		obj := q.Parent
		g := oneOfGroup(obj)
		if g == nil || !containsString(g.members, q.Name()) {
			continue
		}
		for _, st := range states {
			for ptr, m := range objectsAt(st, obj.Path) {
				if x, set := m[q.Name()]; !set || x == nil {
					continue
				}
				for _, other := range g.members {
					if _, set := m[other]; set && other != q.Name() {
						delete(m, other)
						if n := "removing " + ptr + "/" + other; !containsString(notes, n) {
							notes = append(notes, n)
						}
					}
				}
			}
		}
	}
	return notes
}

// keepConsistent makes the objects p lies in agree with themselves the way the API server
// requires: a selector requirement's values with its operator (none for Exists, one for Gt/Lt and
// for a node field selector, some for In/NotIn), a toleration's value and seconds with its
// operator and effect, a downward API divisor with its resource, a recursive read-only mount with
// its readOnly, node ports with their Service's type, a pod's DNS policy None with its DNS
// configuration. What the test case sets wins; the rest follows. why says why the test case is
// refused in any case (a divisor no resource takes), else "".
func keepConsistent(p *crd.Property, states []map[string]any) (notes []string, why string) {
	start := p
	if p.Type == crd.TypeArray && p.Items != nil {
		// An element appended or removed: the requirement is the element.
		start = p.Items
	}
	for q := start; q != nil; q = q.Parent {
		obj := q
		fix := fixerFor(obj, p.Path.Last())
		if fix == nil {
			continue
		}
		target := ""
		if p != obj {
			for r := p; r.Parent != nil; r = r.Parent {
				if r.Parent == obj {
					target = r.Name()
				}
			}
		}
		for _, st := range states {
			for ptr, m := range objectsAt(st, obj.Path) {
				before := jsonv.CopyMap(m)
				if w := fix(m, target); w != "" && why == "" {
					why = w
				}
				notes = appendNotes(notes, ptr, before, m)
			}
		}
		return notes, why
	}
	return notes, why
}

// fixer makes one object of a core type consistent (see keepConsistent); target is the field
// the test case changes ("" when the whole object). It returns why the object is refused in
// any case, or "".
type fixer func(m map[string]any, target string) string

// fixerFor returns the fixer of the core object obj, or nil; leaf is the name of the field the
// test case changes.
func fixerFor(obj *crd.Property, leaf string) fixer {
	if obj.Type != crd.TypeObject {
		return nil
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if obj.Field(n) == nil {
				return false
			}
		}
		return true
	}
	plain := func(f func(m map[string]any, target string)) fixer {
		return func(m map[string]any, target string) string { f(m, target); return "" }
	}
	switch {
	case has("limits", "requests"):
		return plain(fixResources)
	case has("localhostProfile", "type"):
		return plain(fixProfile)
	case has("labelSelector") && (has("matchLabelKeys") || has("minDomains")):
		return plain(fixLabelKeys)
	case has("operator", "values"):
		fieldSelector := obj.Path.Last() == "matchFields"
		return plain(func(m map[string]any, target string) { fixRequirement(m, target, fieldSelector) })
	case has("operator") && (has("tolerationSeconds") || has("effect")):
		return plain(fixToleration)
	case has("operator"):
		// Another requirement: nothing to keep, and nothing above it to look at.
		return plain(func(map[string]any, string) {})
	}
	if obj.Semantic == nil || obj.Semantic.Root == "" {
		return nil
	}
	switch {
	case has("resource", "divisor"):
		return fixDivisor
	case has("recursiveReadOnly", "readOnly"):
		return plain(fixRecursiveReadOnly)
	case has("type", "ports") && obj.Field("ports").Items != nil && obj.Field("ports").Items.Field("nodePort") != nil:
		return plain(func(m map[string]any, target string) {
			if leaf == "nodePort" {
				target = "nodePort"
			}
			fixNodePorts(m, target)
		})
	case has("dnsPolicy"):
		canConfigure := obj.Field("dnsConfig") != nil && obj.Field("dnsConfig").Field("nameservers") != nil
		return plain(func(m map[string]any, target string) { fixDNS(m, target, canConfigure) })
	}
	return nil
}

// divisors are the divisors the API server accepts for a downward API resource, by resource.
var (
	cpuDivisors    = []string{"1m", "1"}
	memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

// divisorsOf returns the divisors the API server accepts for a downward API resource
// ("limits.cpu"), or nil when it says nothing of it.
func divisorsOf(res string) []string {
	switch {
	case strings.HasSuffix(res, ".cpu"):
		return cpuDivisors
	case strings.HasSuffix(res, ".memory") || strings.HasSuffix(res, ".ephemeral-storage") || strings.Contains(res, ".hugepages-"):
		return memoryDivisors
	}
	return nil
}

// fixDivisor keeps a resource field selector's divisor to one its resource takes: a divisor the
// test case sets picks the resource (limits.memory for 1Mi, limits.cpu for 1m); otherwise the
// divisor follows the resource (1m for cpu, 1Mi for memory).
func fixDivisor(m map[string]any, target string) string {
	d, set := m["divisor"]
	res, _ := m["resource"].(string)
	if !set || d == nil {
		return ""
	}
	q, err := parseQuantity(d)
	if err != nil {
		return ""
	}
	allowed := divisorsOf(res)
	if allowed == nil || containsString(allowed, q.String()) {
		return ""
	}
	if target == "divisor" {
		prefix := "limits."
		if strings.HasPrefix(res, "requests.") {
			prefix = "requests."
		}
		switch {
		case containsString(memoryDivisors, q.String()):
			m["resource"] = prefix + "memory"
		case containsString(cpuDivisors, q.String()):
			m["resource"] = prefix + "cpu"
		default:
			return fmt.Sprintf("the API server accepts a divisor of %s for cpu and of %s for memory, not %s",
				strings.Join(cpuDivisors, ", "), strings.Join(memoryDivisors, ", "), describeValue(d))
		}
		return ""
	}
	if containsString(allowed, "1Mi") {
		m["divisor"] = "1Mi"
	} else {
		m["divisor"] = "1m"
	}
	return ""
}

// fixRecursiveReadOnly keeps a recursive read-only mount (Enabled, IfPossible) read-only and
// without propagation, as the API server requires.
func fixRecursiveReadOnly(m map[string]any, target string) {
	rro, _ := m["recursiveReadOnly"].(string)
	if rro != "Enabled" && rro != "IfPossible" {
		return
	}
	if m["readOnly"] != true {
		if target == "readOnly" {
			m["recursiveReadOnly"] = "Disabled"
			return
		}
		m["readOnly"] = true
	}
	if mp, set := m["mountPropagation"]; set && mp != nil && mp != "None" {
		if target == "mountPropagation" {
			m["recursiveReadOnly"] = "Disabled"
			return
		}
		delete(m, "mountPropagation")
	}
}

// fixNodePorts keeps node ports to a Service of type NodePort or LoadBalancer: a node port the
// test case sets makes the Service a NodePort one, otherwise the node ports go.
func fixNodePorts(m map[string]any, target string) {
	switch m["type"] {
	case "NodePort", "LoadBalancer":
		return
	}
	ports, _ := m["ports"].([]any)
	with := false
	for _, p := range ports {
		if pm, _ := p.(map[string]any); pm != nil && pm["nodePort"] != nil {
			with = true
		}
	}
	if !with {
		return
	}
	if target == "nodePort" || target == "ports" {
		m["type"] = "NodePort"
		if m["clusterIP"] == "None" {
			// A headless Service has no node ports.
			delete(m, "clusterIP")
		}
		return
	}
	out := make([]any, len(ports))
	for i, p := range ports {
		pm, _ := p.(map[string]any)
		if pm == nil || pm["nodePort"] == nil {
			out[i] = p
			continue
		}
		np := jsonv.CopyMap(pm)
		delete(np, "nodePort")
		out[i] = np
	}
	m["ports"] = out
}

// clusterDNS is the cluster DNS Service's address in a Service range of 10.96.0.0/16 (its 10th
// address, as kubeadm and the embedded cluster choose it): a pod whose DNS policy is None gets it
// as its name server, so it still resolves the cluster's names.
const clusterDNS = "10.96.0.10"

// fixDNS gives a pod whose DNS policy is None the DNS configuration (name servers) the API server
// requires then; a pod spec that cannot carry one, or whose configuration the test case removes,
// goes back to ClusterFirst.
func fixDNS(m map[string]any, target string, canConfigure bool) {
	if m["dnsPolicy"] != "None" {
		return
	}
	cfg, _ := m["dnsConfig"].(map[string]any)
	if ns, _ := cfg["nameservers"].([]any); len(ns) > 0 {
		return
	}
	if !canConfigure || target == "dnsConfig" {
		m["dnsPolicy"] = "ClusterFirst"
		return
	}
	nc := jsonv.CopyMap(cfg)
	if nc == nil {
		nc = map[string]any{}
	}
	nc["nameservers"] = []any{clusterDNS}
	if _, set := nc["searches"]; !set {
		nc["searches"] = []any{"svc.cluster.local", "cluster.local"}
	}
	m["dnsConfig"] = nc
}

// appendNotes describes, once each, the fields of the object at ptr that changed from before.
func appendNotes(notes []string, ptr string, before, after map[string]any) []string {
	for _, k := range jsonv.SortedKeys(mergeKeys(before, after)) {
		b, hadB := before[k]
		a, hadA := after[k]
		var n string
		switch {
		case hadB && !hadA:
			n = "removing " + ptr + "/" + k
		case hadA && (!hadB || !jsonv.Equal(a, b)):
			n = "setting " + ptr + "/" + k + " to " + describeValue(a)
		default:
			continue
		}
		if !containsString(notes, n) {
			notes = append(notes, n)
		}
	}
	return notes
}

func mergeKeys(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k := range a {
		out[k] = nil
	}
	for k := range b {
		out[k] = nil
	}
	return out
}

func fixRequirement(m map[string]any, target string, fieldSelector bool) {
	op, _ := m["operator"].(string)
	values, _ := m["values"].([]any)
	if fieldSelector && op != "In" && op != "NotIn" {
		op = "In"
		m["operator"] = op
	}
	switch op {
	case "Exists", "DoesNotExist":
		if target == "values" && len(values) > 0 {
			m["operator"] = "In"
			return
		}
		delete(m, "values")
	case "Gt", "Lt":
		if target == "values" && len(values) > 0 {
			m["operator"] = "In"
			return
		}
		m["values"] = []any{"1"}
	case "In", "NotIn":
		switch {
		case len(values) == 0:
			m["values"] = []any{"gauntlet"}
		case fieldSelector && len(values) > 1:
			m["values"] = values[:1]
		}
	}
}

func fixToleration(m map[string]any, target string) {
	op, _ := m["operator"].(string)
	if v, _ := m["value"].(string); op == "Exists" && v != "" {
		if target == "value" {
			m["operator"] = "Equal"
			op = "Equal"
		} else {
			delete(m, "value")
		}
	}
	if key, _ := m["key"].(string); key == "" && op != "Exists" {
		if target == "operator" || target == "value" {
			m["key"] = "gauntlet.dev/dedicated"
		} else {
			m["operator"] = "Exists"
			delete(m, "value")
		}
	}
	if _, set := m["tolerationSeconds"]; set && m["effect"] != "NoExecute" {
		if target == "tolerationSeconds" {
			m["effect"] = "NoExecute"
		} else {
			delete(m, "tolerationSeconds")
		}
	}
}

// rootType returns the core type of the root p's semantic match lies in.
func rootType(p *crd.Property) string {
	for q := p; q != nil; q = q.Parent {
		if q.Path.String() == p.Semantic.Root {
			if q.Semantic != nil {
				return strings.SplitN(q.Semantic.Type, "#", 2)[0]
			}
			break
		}
	}
	return strings.SplitN(p.Semantic.Type, "#", 2)[0]
}

// coreMissing returns the fields completeCore would add to a copy of m (empty lists count as
// missing): what Kubernetes requires of node's core type that m lacks.
func (c *caseCtx) coreMissing(node *crd.Property, m map[string]any) []string {
	cp := jsonv.CopyMap(m)
	for k, v := range cp {
		if l, ok := v.([]any); ok && len(l) == 0 {
			delete(cp, k)
		}
	}
	c.completeCore(node, cp)
	var out []string
	for k, v := range cp {
		if old, ok := m[k]; !ok || !jsonv.Equal(old, v) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// breaksCore says what a draft's last state lacks that Kubernetes requires of a core object p
// lies in (a probe left without its handler, a claim template without access modes), where the
// start state had it; "" when nothing.
func (c *caseCtx) breaksCore(p *crd.Property, states []map[string]any) string {
	if len(states) == 0 {
		return ""
	}
	last := states[len(states)-1]
	for q := p; q != nil; q = q.Parent {
		if q.Type != crd.TypeObject || q.Semantic == nil || q.Semantic.Root == "" {
			continue
		}
		for ptr, m := range objectsAt(last, q.Path) {
			missing := c.coreMissing(q, m)
			if len(missing) == 0 {
				continue
			}
			var before []string
			if v, ok := jsonv.Get(c.start, ptr); ok {
				if bm, ok := v.(map[string]any); ok {
					before = c.coreMissing(q, bm)
				}
			}
			for _, k := range missing {
				if !containsString(before, k) {
					return "Kubernetes requires " + ptr + "/" + k
				}
			}
		}
		if q.Path.String() == q.Semantic.Root {
			break
		}
	}
	return ""
}

// requiredObjects are the object fields Go requires that a new instance gets (a weighted pod
// affinity term's term, a preferred scheduling term's preference); larger ones (a workload's
// template and selector, a pod's containers) are the operator's to complete.
var requiredObjects = map[string]bool{"podAffinityTerm": true, "preference": true}

// clusterRefs are fields naming a cluster-scoped object the test cluster must have: a made-up
// name is refused at admission (PriorityClass, RuntimeClass) or leaves the pod pending.
var clusterRefs = map[string]string{
	"priorityClassName":  "PriorityClass",
	"runtimeClassName":   "RuntimeClass",
	"storageClassName":   "StorageClass",
	"schedulerName":      "scheduler",
	"serviceAccountName": "ServiceAccount",
}

// clusterRef returns the kind of cluster object a core field names, or "".
func clusterRef(p *crd.Property) string {
	if _, name, ok := coreField(p); ok {
		return clusterRefs[name]
	}
	return ""
}

// coreCatalog is the catalogue of Kubernetes types' shapes, built once (immutable).
var coreCatalog = sync.OnceValue(semantic.NewCatalog)

// coreShape returns the shape of the core type node maps to, or nil.
func coreShape(node *crd.Property) *semantic.Shape {
	if node.Semantic == nil || node.Semantic.Root == "" {
		return nil
	}
	return coreCatalog().FieldShape(rootType(node), node.Semantic.Field)
}

// uniqueNames reports whether the items of the list arr are core objects Kubernetes requires
// distinct names of (containers, volumes, ports, env vars), whatever the CRD's list type.
func (g *Generator) uniqueNames(arr *crd.Property) bool {
	if arr.Items == nil || arr.Items.Type != crd.TypeObject {
		return false
	}
	f := arr.Items.Field("name")
	if f == nil {
		return false
	}
	switch g.domainOf(f) {
	case domDNSLabel, domPortName, domEnvName:
		_, _, ok := coreField(f)
		return ok
	}
	return false
}

// nameTaken reports whether v's name is the name of an item of existing.
func nameTaken(existing []any, v any) bool {
	m, _ := v.(map[string]any)
	name, ok := m["name"]
	if !ok {
		return false
	}
	for _, e := range existing {
		if em, _ := e.(map[string]any); em != nil && jsonv.Equal(em["name"], name) {
			return true
		}
	}
	return false
}

// duplicateName says which name the states give two items of a list Kubernetes keys by name
// when p is that name (a pool value may be a sibling's), or "".
func (g *Generator) duplicateName(p *crd.Property, states []map[string]any) string {
	if p.Path.Last() != "name" || p.Parent == nil || p.Parent.Parent == nil || !g.uniqueNames(p.Parent.Parent) {
		return ""
	}
	list := p.Parent.Parent
	siblings := containerSiblings(list)
	for _, st := range states {
		if len(siblings) == 0 {
			for _, ptr := range instances(st, list.Path) {
				v, _ := jsonv.Get(st, ptr)
				items, _ := v.([]any)
				if n := dupName(items); n != "" {
					return fmt.Sprintf("two items of %s are named %q", ptr, n)
				}
			}
			continue
		}
		// A pod's containers and init containers share their names.
		for _, at := range instances(st, list.Parent.Path) {
			var all []any
			for _, l := range append([]*crd.Property{list}, siblings...) {
				v, _ := jsonv.Get(st, at+"/"+l.Path.Last())
				items, _ := v.([]any)
				all = append(all, items...)
			}
			if n := dupName(all); n != "" {
				return fmt.Sprintf("two containers of %s are named %q", at, n)
			}
		}
	}
	return ""
}

// containerSiblings returns the other container lists of the pod spec the container list
// belongs to (initContainers for containers), or nil when list is no container list.
func containerSiblings(list *crd.Property) []*crd.Property {
	_, name, ok := coreField(list)
	if !ok || !containerLists[name] || list.Parent == nil || list.Path[len(list.Path)-1].Kind != jsonv.SegKey {
		return nil
	}
	var out []*crd.Property
	for _, f := range list.Parent.Fields {
		if _, fn, ok := coreField(f); ok && f != list && containerLists[fn] && f.Type == crd.TypeArray && f.Items != nil {
			out = append(out, f)
		}
	}
	return out
}

// fixProfile keeps a seccomp or AppArmor profile's localhostProfile to type Localhost, which
// requires one.
func fixProfile(m map[string]any, target string) {
	_, has := m["localhostProfile"]
	switch {
	case has && m["type"] != "Localhost":
		if target == "localhostProfile" {
			m["type"] = "Localhost"
		} else {
			delete(m, "localhostProfile")
		}
	case !has && m["type"] == "Localhost":
		m["localhostProfile"] = "profiles/gauntlet.json"
	}
}

// fixLabelKeys gives a pod affinity term or a topology spread constraint the label selector its
// matchLabelKeys and mismatchLabelKeys need, and keeps minDomains to DoNotSchedule.
func fixLabelKeys(m map[string]any, target string) {
	if (m["matchLabelKeys"] != nil || m["mismatchLabelKeys"] != nil) && m["labelSelector"] == nil {
		if target == "labelSelector" {
			delete(m, "matchLabelKeys")
			delete(m, "mismatchLabelKeys")
		} else {
			m["labelSelector"] = map[string]any{}
		}
	}
	if _, set := m["minDomains"]; set && m["whenUnsatisfiable"] != nil && m["whenUnsatisfiable"] != "DoNotSchedule" {
		if target == "minDomains" {
			m["whenUnsatisfiable"] = "DoNotSchedule"
		} else {
			delete(m, "minDomains")
		}
	}
}

// canName reports whether a claim template item can carry metadata.name through the API server's
// pruning (a name field, free-form or embedded metadata).
func canName(item *crd.Property) bool {
	md := item.Field("metadata")
	return md == nil || md.Field("name") != nil || md.IsFreeForm() || item.EmbeddedResource
}

// unnamedClaims returns the list of claim templates p lies in (or is) whose items cannot carry
// a name, or nil: a new one is refused (the workload names its claims by it).
func unnamedClaims(p *crd.Property) *crd.Property {
	for q := p; q != nil; q = q.Parent {
		if q.Type != crd.TypeArray || q.Items == nil {
			continue
		}
		spec := q.Items.Field("spec")
		if spec != nil && spec.Field("accessModes") != nil && q.Items.Semantic != nil && q.Items.Semantic.Root != "" && !canName(q.Items) {
			return q
		}
	}
	return nil
}

// countItems counts the items of every instance of the list at path in st.
func countItems(st map[string]any, path crd.Path) int {
	n := 0
	for _, ptr := range instances(st, path) {
		v, _ := jsonv.Get(st, ptr)
		l, _ := v.([]any)
		n += len(l)
	}
	return n
}

// inPodTemplate reports whether p lies in a workload's pod template (a PodTemplateSpec root or a
// template.spec inside a StatefulSet or Deployment spec), where the pod restarts always and has no
// deadline.
func inPodTemplate(p *crd.Property) bool {
	f := p.Semantic.Field
	if strings.HasPrefix(f, "template.spec.") || strings.Contains(f, ".template.spec.") {
		return true
	}
	return strings.HasSuffix(rootType(p), "/v1.PodTemplateSpec") && strings.HasPrefix(f, "spec.")
}

// fixResources keeps every request at most its limit: the side the test case changes wins (a
// raised request raises the limit, a lowered limit lowers the request).
func fixResources(m map[string]any, target string) {
	req, _ := m["requests"].(map[string]any)
	lim, _ := m["limits"].(map[string]any)
	if req == nil || lim == nil {
		return
	}
	for _, k := range jsonv.SortedKeys(req) {
		l, ok := lim[k]
		if !ok {
			continue
		}
		qr, err1 := parseQuantity(req[k])
		ql, err2 := parseQuantity(l)
		if err1 != nil || err2 != nil || qr.Cmp(ql) <= 0 {
			continue
		}
		if target == "requests" {
			nl := jsonv.CopyMap(lim)
			nl[k] = jsonv.Copy(req[k])
			m["limits"], lim = nl, nl
		} else {
			nr := jsonv.CopyMap(req)
			nr[k] = jsonv.Copy(l)
			m["requests"], req = nr, nr
		}
	}
}

// inProbe reports whether p is a field of a probe of a core type (a container's or a CRD's own
// probe the semantic mapping matched to v1.Probe).
func inProbe(p *crd.Property) bool {
	q := p.Parent
	return q != nil && q.Semantic != nil && q.Semantic.Root != "" && strings.SplitN(q.Semantic.Type, "#", 2)[0] == coreV1+"Probe"
}

// completeNew completes, in every state, the core objects above p that the test case creates
// (setting a Secret key selector's key creates the selector): what Kubernetes requires of them
// (the Secret's name) is set as completeCore sets it in new objects; it returns what was set.
func (c *caseCtx) completeNew(p *crd.Property, states []map[string]any) []string {
	var notes []string
	child := p
	for q := p.Parent; q != nil; child, q = q, q.Parent {
		if q.Type != crd.TypeObject || q.Semantic == nil || q.Semantic.Root == "" {
			break
		}
		// The field on the way to p is the test case's: completion does not undo its change.
		own := child.Name()
		for _, st := range states {
			for ptr, m := range objectsAt(st, q.Path) {
				if _, existed := jsonv.Get(c.start, ptr); existed {
					continue
				}
				before := jsonv.CopyMap(m)
				c.completeCore(q, m)
				if v, ok := before[own]; ok {
					m[own] = v
				} else {
					delete(m, own)
				}
				notes = appendNotes(notes, ptr, before, m)
			}
		}
	}
	return notes
}

// dupName returns a name two of the items have, or "".
func dupName(items []any) string {
	seen := map[string]bool{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		n, ok := m["name"].(string)
		if !ok {
			continue
		}
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}
