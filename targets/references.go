package targets

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Reference says that the string at Path (dotted, list indices written as [])
// names an object of Kind (a core/v1 kind unless APIVersion says otherwise) in
// the CR's namespace.
//
// With Creates, the path names an object the operator itself creates (a
// cert-manager Certificate's spec.secretName): it is not a reference, and is
// not inferred as one from its field name.
//
// With Named, the path names something that is not a Kubernetes object (a
// CloudNativePG plugin, an issuer API group): Named says what it is, for
// messages, and Available lists the names the test cluster has (none when
// empty). A desired state naming another one is run as a misoperation, like one
// naming a missing Secret.
type Reference struct {
	Path       string   `json:"path"`
	Kind       string   `json:"kind,omitempty"`
	APIVersion string   `json:"apiVersion,omitempty"`
	Creates    bool     `json:"creates,omitempty"`
	Named      string   `json:"named,omitempty"`
	Available  []string `json:"available,omitempty"`
}

// check says what is wrong with a declared reference ("" when nothing).
func (r Reference) check() string {
	set := 0
	for _, b := range []bool{r.Kind != "", r.Creates, r.Named != ""} {
		if b {
			set++
		}
	}
	switch {
	case r.Path == "":
		return "needs a path"
	case set != 1:
		return "needs exactly one of kind (the object it names, e.g. {path: spec.tls.secretName, kind: Secret}), creates: true (a path naming an object the operator creates) or named (what the name stands for, with the available names, e.g. {path: spec.plugins[].name, named: CNPG-I plugin, available: []})"
	case len(r.Available) > 0 && r.Named == "":
		return "lists available names without saying what they name (named: …)"
	}
	return ""
}

// Ref is one reference found in a desired state.
type Ref struct {
	// Path is where the name was found, with list indices ("spec.tls.secretName").
	Path       string
	APIVersion string
	Kind       string
	Name       string
	// Named is what a reference to something other than an object names (see
	// Reference.Named); Unavailable says the test cluster has no such thing.
	Named       string
	Unavailable bool
	// Key is the key the reference selects in the Secret or ConfigMap (a key
	// selector's "key" beside its "name"), at KeyPath; "" when none.
	Key, KeyPath string
}

// inferred maps a field name, or the name of the object holding a "name" field,
// to the kind it refers to (lower case; the usual Kubernetes API conventions).
var (
	nameFields = map[string]struct{ apiVersion, kind string }{
		"secretname":         {"v1", "Secret"},
		"configmapname":      {"v1", "ConfigMap"},
		"serviceaccountname": {"v1", "ServiceAccount"},
		// Cluster-scoped: a pod naming a missing one is refused at admission
		// (PriorityClass, RuntimeClass) or its claim stays Pending (StorageClass).
		"priorityclassname": {"scheduling.k8s.io/v1", "PriorityClass"},
		"runtimeclassname":  {"node.k8s.io/v1", "RuntimeClass"},
		"storageclassname":  {"storage.k8s.io/v1", "StorageClass"},
	}
	holderSuffixes = []struct{ suffix, kind string }{
		{"secretkeyref", "Secret"}, {"secretref", "Secret"}, {"secret", "Secret"},
		{"configmapkeyref", "ConfigMap"}, {"configmapref", "ConfigMap"}, {"configmap", "ConfigMap"},
	}
)

// ReferencesIn lists the object references in a desired state: the target's
// declared References and the ones inferred from field names (a "secretName" or
// "configMapName" string; the "name" of an object whose field name ends with
// secret, secretRef, secretKeyRef, configMap, configMapRef or configMapKeyRef,
// with the "key" beside it when there is one).
// Plural holders (imagePullSecrets) are not references a missing object breaks.
func (t *Target) ReferencesIn(d map[string]any) []Ref {
	declared := map[string]Reference{}
	for _, r := range t.References {
		declared[strings.TrimPrefix(r.Path, ".")] = r
	}
	var out []Ref
	// key is the field holding v; holder is the field holding the object that holds v.
	// parent is the object holding v.
	var walk func(path, generic, key, holder string, parent map[string]any, v any)
	walk = func(path, generic, key, holder string, parent map[string]any, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(path+"."+k, generic+"."+k, k, key, x, c)
			}
		case []any:
			for i, c := range x {
				walk(path+"["+strconv.Itoa(i)+"]", generic+"[]", key, holder, nil, c)
			}
		case string:
			if x == "" {
				return
			}
			p, g := strings.TrimPrefix(path, "."), strings.TrimPrefix(generic, ".")
			if r, ok := declared[g]; ok {
				if r.Creates {
					return
				}
				if r.Named != "" {
					out = append(out, Ref{Path: p, Named: r.Named, Name: x, Unavailable: !slices.Contains(r.Available, x)})
					return
				}
				out = append(out, Ref{Path: p, APIVersion: orV1(r.APIVersion), Kind: r.Kind, Name: x})
				return
			}
			field := strings.ToLower(g[strings.LastIndexAny(g, ".]")+1:])
			if nf, ok := nameFields[field]; ok {
				out = append(out, Ref{Path: p, APIVersion: nf.apiVersion, Kind: nf.kind, Name: x})
				return
			}
			if field != "name" || strings.HasSuffix(g, "[].name") {
				return
			}
			for _, h := range holderSuffixes {
				if strings.HasSuffix(strings.ToLower(holder), h.suffix) {
					ref := Ref{Path: p, APIVersion: "v1", Kind: h.kind, Name: x}
					if k, ok := parent["key"].(string); ok && k != "" {
						ref.Key, ref.KeyPath = k, strings.TrimSuffix(p, "name")+"key"
					}
					out = append(out, ref)
					return
				}
			}
		}
	}
	if spec, ok := d["spec"]; ok {
		walk(".spec", ".spec", "spec", "", nil, spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func orV1(s string) string {
	if s == "" {
		return "v1"
	}
	return s
}
