package inputgen

import (
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
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
	case name == "successThreshold" && (owner == "livenessProbe" || owner == "startupProbe"):
		return 1, 1, true
	case name == "nodePort" || name == "healthCheckNodePort":
		return 30000, 32767, true
	case name == "containerPort" || name == "hostPort" || name == "port" || name == "targetPort":
		return 1, 65535, true
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
