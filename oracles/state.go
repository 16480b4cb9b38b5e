package oracles

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// This file compares whole states (snapshots) for the differential, recovery and
// stability oracles and for LearnMasks: objects are masked, the test namespace is
// replaced by a placeholder (a reference run uses another namespace), objects with
// generated names are paired by owner and template hash instead of by name, and
// kinds that only record history (events, controller revisions, leases, endpoint
// slices) are left out.

// nsPlaceholder replaces the test namespace in keys and string values.
const nsPlaceholder = "<namespace>"

// DefaultIgnoreKinds are the kinds the state oracles leave out: they record
// history or mirror other objects (events, controller revisions, leader-election
// leases, endpoints) and differ between runs that reach the same state.
func DefaultIgnoreKinds() []string {
	return []string{"Event", "ControllerRevision", "Lease", "EndpointSlice", "Endpoints"}
}

type objView struct {
	key       string // key in the snapshot
	group     string
	kind      string
	namespace string // normalized
	name      string
	stem      string // name with generated suffixes and ordinals as "*"
	match     string // identity across runs of a generated name
	generated bool
	obj       map[string]any // masked and normalized
}

func (v *objView) exactID() string { return v.group + "|" + v.kind + "|" + v.namespace + "|" + v.name }
func (v *objView) matchID() string { return v.group + "|" + v.kind + "|" + v.namespace + "|" + v.match }
func (v *objView) stemID() string  { return v.group + "|" + v.kind + "|" + v.namespace + "|" + v.stem }

// ident is the object's identity within one run: its name, or for a generated
// name its owner and template hash.
func (v *objView) ident() string {
	if v.generated {
		return v.match
	}
	return v.name
}

type viewOptions struct {
	rules       []maskRule
	ignoreKinds map[string]bool
}

func newViewOptions(ignore []string, masks ...[]string) viewOptions {
	if ignore == nil {
		ignore = DefaultIgnoreKinds()
	}
	o := viewOptions{rules: compileMasks(masks...), ignoreKinds: map[string]bool{}}
	for _, k := range ignore {
		o.ignoreKinds[k] = true
	}
	return o
}

// testNamespace is the namespace of the CR, or the most common namespace.
func testNamespace(s *model.Snapshot) string {
	if s == nil {
		return ""
	}
	if k, ok := model.ParseObjectKey(s.CR); ok && k.Namespace != "" {
		return k.Namespace
	}
	count := map[string]int{}
	best := ""
	for _, key := range s.Keys() {
		if k, ok := model.ParseObjectKey(key); ok && k.Namespace != "" {
			count[k.Namespace]++
			if count[k.Namespace] > count[best] {
				best = k.Namespace
			}
		}
	}
	return best
}

var (
	// generated suffixes of pod names (rand.String's alphabet: no vowels, no 0, 1, 3).
	randSuffixRE = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	ordinalRE    = regexp.MustCompile(`^[0-9]+$`)
	// volumes the service-account admission adds to pods.
	apiAccessRE = regexp.MustCompile(`\bkube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}\b`)
)

// identity derives the stem (for signatures and masks) and the pairing identity
// of an object's name.
func identity(obj model.Object, name string) (stem, match string, generated bool) {
	md, _ := obj["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	if h, _ := labels["pod-template-hash"].(string); h != "" {
		if i := strings.Index(name, "-"+h); i > 0 {
			prefix, rest := name[:i], name[i+1+len(h):]
			if rest == "" { // a ReplicaSet
				return prefix + "-*", prefix + "-" + h, true
			}
			return prefix + "-*", prefix + "-" + h + "-*", true
		}
	}
	i := strings.LastIndexByte(name, '-')
	if i > 0 && ordinalRE.MatchString(name[i+1:]) {
		if kind, _ := controllerOf(obj); kind == "" || kind == "StatefulSet" {
			// an ordinal (StatefulSet pods and claims): a stable identity
			return name[:i+1] + "*", name, false
		}
		// a serial an operator numbers its own objects with and never
		// reuses (CloudNativePG's instances example-1, -2, -3 become
		// example-1, -4, -5 after a scale-down and up): paired by stem
		return name[:i+1] + "*", name[:i+1] + "*", true
	}
	if g, _ := md["generateName"].(string); g != "" && strings.HasPrefix(name, g) && len(name) > len(g) {
		return g + "*", g + "*", true
	}
	if i > 0 && randSuffixRE.MatchString(name[i+1:]) {
		return name[:i+1] + "*", name[:i+1] + "*", true
	}
	return name, name, false
}

// nameStem is the generalized name of the object under key in s.
func nameStem(obj model.Object, name string) string {
	stem, _, _ := identity(obj, name)
	return stem
}

// replaceWord replaces whole occurrences of w in s (not inside a longer DNS name
// label: the neighbours must not be letters, digits or '-').
func replaceWord(s, w, by string) string {
	if w == "" || !strings.Contains(s, w) {
		return s
	}
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(s[i:], w)
		if j < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		j += i
		end := j + len(w)
		if (j == 0 || !dnsChar(s[j-1])) && (end == len(s) || !dnsChar(s[end])) {
			b.WriteString(s[i:j])
			b.WriteString(by)
		} else {
			b.WriteString(s[i:end])
		}
		i = end
	}
}

func dnsChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// normalizeStrings replaces, in every string of v, the test namespace ns by a
// placeholder and each pod IP of ips by its pod's placeholder (whole words).
func normalizeStrings(v any, ns string, ips map[string]string) any {
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			n[k] = normalizeStrings(c, ns, ips)
		}
	case []any:
		for i, c := range n {
			n[i] = normalizeStrings(c, ns, ips)
		}
	case string:
		s := replaceWord(n, ns, nsPlaceholder)
		for ip, by := range ips {
			s = replaceWord(s, ip, by)
		}
		if strings.Contains(s, "kube-api-access-") {
			s = apiAccessRE.ReplaceAllString(s, "kube-api-access-*")
		}
		return s
	}
	return v
}

// podIPs maps the IPs of the test namespace's pods in a snapshot to a
// placeholder naming the pod ("<podIP example-2>"), so that an operator's
// record of its pods' addresses (CloudNativePG's Cluster
// status.instancesReportedState.*.ip) compares equal across runs whose pods got
// other addresses. Pods of generated names are named by their stem.
func podIPs(s *model.Snapshot, ns string) map[string]string {
	ips := map[string]string{}
	for key, obj := range s.Objects {
		k, ok := model.ParseObjectKey(key)
		if !ok || k.Kind != "Pod" || k.Group != "" || k.Namespace != ns || obj == nil {
			continue
		}
		status, _ := obj["status"].(map[string]any)
		if status == nil {
			continue
		}
		name := k.Name
		if stem, _, generated := identity(obj, k.Name); generated {
			name = stem
		}
		var addrs []string
		if ip, ok := status["podIP"].(string); ok {
			addrs = append(addrs, ip)
		}
		if l, ok := status["podIPs"].([]any); ok {
			for _, e := range l {
				if m, ok := e.(map[string]any); ok {
					if ip, ok := m["ip"].(string); ok {
						addrs = append(addrs, ip)
					}
				}
			}
		}
		for _, ip := range addrs {
			if ip != "" {
				ips[ip] = "<podIP " + name + ">"
			}
		}
	}
	return ips
}

// historyOnly reports a ReplicaSet scaled to zero: an old revision of a
// Deployment, kept as history.
func historyOnly(kind string, obj model.Object) bool {
	if kind != "ReplicaSet" {
		return false
	}
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	r, ok := jsonv.AsFloat(spec["replicas"])
	s, _ := jsonv.AsFloat(status["replicas"])
	return ok && r == 0 && s == 0
}

// buildView masks and normalizes the objects of a snapshot.
func buildView(s *model.Snapshot, o viewOptions) []*objView {
	if s == nil {
		return nil
	}
	ns := testNamespace(s)
	ips := podIPs(s, ns)
	saPull := serviceAccountPullSecrets(s)
	var out []*objView
	for _, key := range s.Keys() {
		k, ok := model.ParseObjectKey(key)
		raw := s.Objects[key]
		if !ok || raw == nil || o.ignoreKinds[k.Kind] || historyOnly(k.Kind, raw) {
			continue
		}
		if _, has := raw["kind"]; !has {
			raw = withKindName(raw, k)
		}
		masked := applyMasks(raw, o.rules)
		if masked == nil {
			continue
		}
		if k.Group == "" && k.Kind == "Pod" {
			dropAdmittedPullSecrets(masked, saPull[k.Namespace])
		}
		stem, match, gen := identity(raw, k.Name)
		norm := normalizeStrings(masked, ns, ips).(map[string]any)
		if md, ok := norm["metadata"].(map[string]any); ok {
			if _, has := md["namespace"]; has && k.Namespace == ns {
				md["namespace"] = nsPlaceholder
			}
			if gen {
				md["name"] = stem
			}
		}
		vns := k.Namespace
		if vns == ns && ns != "" {
			vns = nsPlaceholder
		}
		out = append(out, &objView{
			key: key, group: k.Group, kind: k.Kind, namespace: vns, name: k.Name,
			stem: stem, match: match, generated: gen, obj: norm,
		})
	}
	return out
}

// serviceAccountPullSecrets maps namespace and ServiceAccount name to the
// names of the image pull secrets the account lists.
func serviceAccountPullSecrets(s *model.Snapshot) map[string]map[string]map[string]bool {
	out := map[string]map[string]map[string]bool{}
	for key, o := range s.Objects {
		k, ok := model.ParseObjectKey(key)
		if !ok || k.Group != "" || k.Kind != "ServiceAccount" || o == nil {
			continue
		}
		l, _ := o["imagePullSecrets"].([]any)
		for _, e := range l {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				continue
			}
			if out[k.Namespace] == nil {
				out[k.Namespace] = map[string]map[string]bool{}
			}
			if out[k.Namespace][k.Name] == nil {
				out[k.Namespace][k.Name] = map[string]bool{}
			}
			out[k.Namespace][k.Name][name] = true
		}
	}
	return out
}

// dropAdmittedPullSecrets removes from a (masked copy of a) pod the image
// pull secrets its ServiceAccount lists: the API server's admission copies
// them into a pod when it is created, so a pod created after the account
// gained one holds it and an older pod does not, though both run the same
// spec (CloudNativePG seed 3: a rollback "failed" because the instance pod,
// re-created meanwhile, carried the pull secret its Cluster's account had
// gained since the reference was taken).
func dropAdmittedPullSecrets(pod map[string]any, bySA map[string]map[string]bool) {
	spec, _ := pod["spec"].(map[string]any)
	if spec == nil || len(bySA) == 0 {
		return
	}
	sa, _ := spec["serviceAccountName"].(string)
	if sa == "" {
		sa = "default"
	}
	names := bySA[sa]
	l, _ := spec["imagePullSecrets"].([]any)
	if len(names) == 0 || len(l) == 0 {
		return
	}
	var kept []any
	for _, e := range l {
		m, _ := e.(map[string]any)
		if n, _ := m["name"].(string); !names[n] {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(spec, "imagePullSecrets")
		return
	}
	spec["imagePullSecrets"] = kept
}

// withKindName fills kind and metadata.name from the key when an object lacks them.
func withKindName(obj model.Object, k model.ObjectKey) model.Object {
	out := make(model.Object, len(obj)+1)
	for kk, v := range obj {
		out[kk] = v
	}
	out["kind"] = k.Kind
	if _, ok := out["metadata"]; !ok {
		out["metadata"] = map[string]any{"name": k.Name}
	}
	return out
}

// objPair is an object of state A and its counterpart in B (either may be nil:
// missing from one side) with their differences.
type objPair struct {
	a, b    *objView
	changes []Change
}

// compareViews pairs the objects of two states and diffs them; only pairs with
// differences (or a missing side) are returned, sorted by A's key (then B's).
func compareViews(as, bs []*objView) []objPair {
	pairs := pairViews(as, bs)
	rename := renames(pairs)
	var out []objPair
	for _, p := range pairs {
		if p.a == nil || p.b == nil {
			out = append(out, p)
			continue
		}
		bobj := p.b.obj
		if len(rename) > 0 {
			bobj = renameIn(bobj, rename).(map[string]any)
		}
		if ch := diffObjects(p.a.obj, bobj); len(ch) > 0 {
			p.changes = ch
			out = append(out, p)
		}
	}
	return out
}

// renames maps the names of B's generated objects to those of the A objects
// they were paired with, where they differ: the other objects of B name them
// too (a pod's claim, the CR's status listing its instances), and B is
// compared as if its objects had A's names.
func renames(pairs []objPair) map[string]string {
	out := map[string]string{}
	for _, p := range pairs {
		if p.a != nil && p.b != nil && p.a.generated && p.b.generated && p.a.name != p.b.name {
			out[p.b.name] = p.a.name
		}
	}
	return out
}

// renameIn returns a copy of v with every whole-word occurrence of a key of
// rename, in strings and map keys, replaced by its value, all at once (a
// name renamed to one that is itself renamed is not renamed twice).
func renameIn(v any, rename map[string]string) any {
	olds := make([]string, 0, len(rename))
	for o := range rename {
		olds = append(olds, o)
	}
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	one := func(s string) string {
		for i, o := range olds {
			s = replaceWord(s, o, "\x00"+strconv.Itoa(i)+"\x00")
		}
		if !strings.Contains(s, "\x00") {
			return s
		}
		for i, o := range olds {
			s = strings.ReplaceAll(s, "\x00"+strconv.Itoa(i)+"\x00", rename[o])
		}
		return s
	}
	return jsonv.MapStrings(v, one)
}

func pairViews(as, bs []*objView) []objPair {
	var pairs []objPair
	usedA := make([]bool, len(as))
	usedB := make([]bool, len(bs))
	// 1. Same name.
	byExact := map[string]int{}
	for j, b := range bs {
		byExact[b.exactID()] = j
	}
	for i, a := range as {
		if j, ok := byExact[a.exactID()]; ok && !usedB[j] {
			usedA[i], usedB[j] = true, true
			pairs = append(pairs, objPair{a: a, b: bs[j]})
		}
	}
	// Generated names only (ordinals are identities): 2. same owner and template
	// hash; 3. same stem. Within a group, the closest object is taken.
	for _, id := range []func(*objView) string{(*objView).matchID, (*objView).stemID} {
		groupsB := map[string][]int{}
		for j, b := range bs {
			if !usedB[j] && b.generated {
				groupsB[id(b)] = append(groupsB[id(b)], j)
			}
		}
		for i, a := range as {
			if usedA[i] || !a.generated {
				continue
			}
			best, bestCost := -1, 0
			for _, j := range groupsB[id(a)] {
				if usedB[j] {
					continue
				}
				c := len(diffObjects(a.obj, bs[j].obj))
				if best < 0 || c < bestCost {
					best, bestCost = j, c
				}
			}
			if best >= 0 {
				usedA[i], usedB[best] = true, true
				pairs = append(pairs, objPair{a: a, b: bs[best]})
			}
		}
	}
	for i, a := range as {
		if !usedA[i] {
			pairs = append(pairs, objPair{a: a})
		}
	}
	for j, b := range bs {
		if !usedB[j] {
			pairs = append(pairs, objPair{b: b})
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairKey(pairs[i]) < pairKey(pairs[j]) })
	return pairs
}

func pairKey(p objPair) string {
	if p.a != nil {
		return p.a.key
	}
	return p.b.key
}

// side returns the view present in p (A first).
func (p objPair) side() *objView {
	if p.a != nil {
		return p.a
	}
	return p.b
}
