package inputgen

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/regexgen"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// errSkip tells the framework a generator does not apply to a property (not an error).
var errSkip = errors.New("generator does not apply")

// errNoValue is returned when no valid value different from the current one exists.
var errNoValue = errors.New("no valid value different from the current one")

// caseCtx is the working state of one draw of one generator for one property.
type caseCtx struct {
	g *Generator
	p *crd.Property
	r *rand.Rand
	// start is the state after setup; generators copy it before mutating.
	start map[string]any
	// key is the map key chosen for a map-value property ("{*}") by locate.
	key string
	// nested are the lists and objects enrich created below the case's property: what
	// Kubernetes requires of them is checked where they land (keepConsistent).
	nested []*crd.Property
}

// chain returns the properties from the first path segment down to p.
func chain(p *crd.Property) []*crd.Property {
	return append(p.Ancestors(), p)
}

// ensure materialises every container on the way to p in state (creating minimal valid objects,
// list elements and map entries where missing) and returns p's concrete location. p itself is not
// created. Along the way, toggles of objects inside lists are switched on.
func (c *caseCtx) ensure(state map[string]any, p *crd.Property) ([]jsonv.Token, error) {
	nodes := chain(p)
	var tokens []jsonv.Token
	var cur any = state
	for i, node := range nodes {
		seg := node.Path[len(node.Path)-1]
		last := i == len(nodes)-1
		switch seg.Kind {
		case crd.Field:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: expected an object, found %T", node.Path, cur)
			}
			tokens = append(tokens, seg.Key)
			if last {
				return tokens, nil
			}
			child, ok := m[seg.Key]
			if !ok || child == nil {
				child = c.minimal(node)
				m[seg.Key] = child
			}
			cur = child
		case crd.Item:
			list, ok := cur.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: expected a list, found %T", node.Path, cur)
			}
			if len(list) == 0 {
				list = append(list, c.newItem(node.Parent, list))
				if err := jsonv.Set(state, jsonv.Pointer(tokens), list); err != nil {
					return nil, err
				}
				// Set stores a copy: continue with the stored list.
				stored, _ := jsonv.Get(state, jsonv.Pointer(tokens))
				list, _ = stored.([]any)
			}
			idx := c.r.IntN(len(list))
			tokens = append(tokens, idx)
			if last {
				return tokens, nil
			}
			cur = list[idx]
		case crd.Value:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: expected a map, found %T", node.Path, cur)
			}
			if len(m) == 0 {
				m[c.newKey(node.Parent, m)] = c.fill(node)
			}
			keys := jsonv.SortedKeys(m)
			k := keys[c.r.IntN(len(keys))]
			tokens = append(tokens, k)
			if last {
				return tokens, nil
			}
			cur = m[k]
		}
		if !last && node.InsideList() {
			c.switchOn(cur, nodes[i+1])
		}
	}
	return tokens, nil
}

// switchOn turns on the toggle of an object inside a list when the path continues to a sibling.
func (c *caseCtx) switchOn(obj any, next *crd.Property) {
	m, ok := obj.(map[string]any)
	if !ok || next.Parent == nil {
		return
	}
	for _, f := range next.Parent.Fields {
		if f == next || f.Semantic == nil || f.Semantic.Hint != semantic.HintToggle {
			continue
		}
		switch f.Name() {
		case "enabled", "enable":
			m[f.Name()] = true
		case "disabled", "disable":
			m[f.Name()] = false
		}
	}
}

// fill returns a complete valid value for a node that must be present: its default, a pool value,
// or a generated one; objects get their required fields.
func (c *caseCtx) fill(node *crd.Property) any {
	if node.HasDefault {
		// An empty default name ("" for a LocalObjectReference) is refused once rendered.
		if s, ok := node.Default.(string); !ok || s != "" || !isNameDomain(c.domain(node)) {
			return jsonv.Copy(node.Default)
		}
	}
	if node.Type == crd.TypeObject || node.Type == crd.TypeArray {
		return c.minimal(node)
	}
	if cands := c.candidates(node); len(cands) > 0 {
		return jsonv.Copy(cands[c.r.IntN(len(cands))])
	}
	if c.domain(node) == domImage && c.g.fits(node, fallbackImage) {
		return fallbackImage
	}
	v, err := c.scalar(node, nil)
	if err != nil {
		return ""
	}
	return v
}

// candidates returns the pool values for p that pass its cheap constraints (type, enum,
// pattern, lengths, bounds) and belong to its domain: those recorded for p itself, else those
// recorded for properties of the same meaning (all container images for an image).
func (c *caseCtx) candidates(p *crd.Property) []any {
	d := c.domain(p)
	ok := func(v any) bool { return c.g.fits(p, v) && (d == domNone || domainAccepts(d, v)) }
	var out []any
	for _, v := range c.g.pool.Candidates(p) {
		if ok(v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 && isLeafType(p) {
		for _, v := range c.related(p) {
			if ok(v) {
				out = append(out, v)
			}
		}
	}
	// Values the Kubernetes API accepts for the core type the property maps to.
	for _, v := range knownValues(p) {
		if c.g.fits(p, v) && !containsValue(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// knownValues returns the values Kubernetes accepts for p's core type (imagePullPolicy, toleration
// operators, access modes, ...), or nil.
func knownValues(p *crd.Property) []string {
	if p.Semantic == nil || p.Semantic.Type == "" {
		return nil
	}
	// Where the field is narrows its type's values (a pod template's restartPolicy is Always).
	if v := coreKnown(p); len(v) > 0 {
		return v
	}
	return semantic.KnownValues(p.Semantic.Type)
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if jsonv.Equal(e, v) {
			return true
		}
	}
	return false
}

// maxMaterialized bounds minItems/minProperties/minLength a generator honours; schemas asking for
// more produce candidates validation rejects (and the test case is dropped with the reason).
const maxMaterialized = 256

// minimal returns the smallest valid instance of node: required fields, minItems elements,
// minProperties entries, and apiVersion/kind/metadata for embedded resources.
func (c *caseCtx) minimal(node *crd.Property) any {
	switch {
	case node.Type == crd.TypeArray:
		list := []any{}
		n := 0
		if node.MinItems != nil {
			n = int(min(*node.MinItems, maxMaterialized))
		}
		for len(list) < n && node.Items != nil {
			list = append(list, c.newItem(node, list))
		}
		return list
	case node.Type == crd.TypeObject || node.EmbeddedResource:
		m := map[string]any{}
		for _, name := range node.RequiredFields {
			if f := node.Field(name); f != nil {
				m[name] = c.fill(f)
			} else if node.Values != nil {
				m[name] = c.fill(node.Values)
			} else {
				m[name] = ""
			}
		}
		c.completeCore(node, m)
		if node.EmbeddedResource {
			c.embed(node, m)
		}
		minProps := 0
		if node.MinProperties != nil {
			minProps = int(min(*node.MinProperties, maxMaterialized))
		}
		for i := 0; len(m) < minProps && i < len(node.Fields); i++ {
			f := node.Fields[i]
			if _, ok := m[f.Name()]; !ok {
				m[f.Name()] = c.fill(f)
			}
		}
		for len(m) < minProps && (node.Values != nil || node.IsFreeForm() || node.AnyValues) {
			if node.Values != nil {
				m[c.newKey(node, m)] = c.fill(node.Values)
			} else {
				m[c.newKey(node, m)] = c.freeValue(node, "")
			}
		}
		return m
	}
	return c.fill(node)
}

// rich returns a minimal instance of an object with a few optional scalar fields set as well, so an
// added element or object carries meaning (a toleration with a key and an effect, not {}): fields
// the value pool knows are preferred, else one field at random.
func (c *caseCtx) rich(node *crd.Property) any {
	v := c.minimal(node)
	m, ok := v.(map[string]any)
	if !ok || node.IsMap() || node.IsFreeForm() {
		return v
	}
	var known, other []*crd.Property
	group := oneOfGroup(node)
	for _, f := range node.Fields {
		if _, set := m[f.Name()]; set || f.Type == crd.TypeObject || f.Type == crd.TypeArray {
			continue
		}
		if group != nil && containsString(group.members, f.Name()) {
			// One of a value and a source, of a probe's handlers: the minimal instance has its one.
			continue
		}
		if coreForbidden(f) != "" || (clusterRef(f) != "" && len(c.candidates(f)) == 0) {
			// Nothing Kubernetes refuses, no class or account the cluster does not have.
			continue
		}
		if d := c.domain(f); d == domImage || isReferenceName(f, d) {
			// What Kubernetes requires though the CRD does not: a container's image, the name
			// of what a volume or an environment source refers to.
			m[f.Name()] = c.fill(f)
			continue
		}
		if len(c.candidates(f)) > 0 {
			known = append(known, f)
		} else if c.domain(f) != domImage {
			// An image nothing offers would be made up: the element would never run.
			other = append(other, f)
		}
	}
	const maxExtra = 3
	added := 0
	for _, f := range known {
		if added == maxExtra {
			break
		}
		m[f.Name()] = c.fill(f)
		added++
	}
	if added == 0 && len(other) > 0 {
		f := other[c.r.IntN(len(other))]
		m[f.Name()] = c.fill(f)
	}
	return m
}

// fillOther is a value for an optional scalar field that differs from what its absence means (its
// default, false for a flag): one from the value pool when it has one, else generated. A field set
// to its default would make an added object or element carry nothing.
func (c *caseCtx) fillOther(f *crd.Property) any {
	def := effectiveOf(f, nil)
	var opts []any
	for _, v := range c.candidates(f) {
		if def == nil || !jsonv.Equal(v, def) {
			opts = append(opts, v)
		}
	}
	if len(opts) > 0 {
		return jsonv.Copy(opts[c.r.IntN(len(opts))])
	}
	if c.domain(f) == domImage {
		return c.fill(f)
	}
	if v, err := c.scalar(f, def); err == nil {
		return v
	}
	return c.fill(f)
}

// enrich sets one more field of m, an instance of the object node holding only defaults, to
// something the operator reads as a change: a scalar field to a value other than its default
// (pool values first), else a list with one element, a map with one entry, or a nested object
// enriched in turn. It reports whether it found one.
func (c *caseCtx) enrich(node *crd.Property, m map[string]any) bool {
	group := oneOfGroup(node)
	var scalars, known, lists, maps, objects []*crd.Property
	for _, f := range node.Fields {
		if cur, set := m[f.Name()]; set && !jsonv.Equal(effectiveOf(f, cur), effectiveOf(f, nil)) {
			continue
		}
		if group != nil && containsString(group.members, f.Name()) {
			continue
		}
		if coreForbidden(f) != "" || (clusterRef(f) != "" && len(c.candidates(f)) == 0) {
			continue
		}
		d := c.domain(f)
		switch {
		case f.EmbeddedResource || f.IsFreeForm():
		case f.Type == crd.TypeArray:
			if f.Items != nil && (f.Items.Semantic == nil || f.Items.Semantic.Type != typeResourceClaim) {
				// A resource claim needs a pod-level claim the operator's pod may not have.
				lists = append(lists, f)
			}
		case f.IsMap():
			if _, keyed := c.g.pool.Keys(f.Path.String()); len(keyed) > 0 || isResourceList(f) {
				// Keys the seed or the examples use, or a resource list: a meaningful entry.
				known = append(known, f)
			} else {
				maps = append(maps, f)
			}
		case f.Type == crd.TypeObject:
			objects = append(objects, f)
		case d == domImage || isReferenceName(f, d):
			// An image nothing offers, a name nothing declares: the change would never run.
			if len(c.candidates(f)) > 0 {
				known = append(known, f)
			}
		case len(c.candidates(f)) > 0:
			known = append(known, f)
		default:
			scalars = append(scalars, f)
		}
	}
	pick := func(fs []*crd.Property) *crd.Property { return fs[c.r.IntN(len(fs))] }
	for _, tier := range [][]*crd.Property{known, scalars} {
		if len(tier) == 0 {
			continue
		}
		f := pick(tier)
		if f.IsMap() {
			fc := *c
			fc.p, fc.key = f, ""
			entry := map[string]any{}
			k := fc.newKey(f, entry)
			entry[k] = fc.mapValue(k, nil)
			m[f.Name()] = entry
			return true
		}
		v := c.fillOther(f)
		if !jsonv.Equal(effectiveOf(f, v), effectiveOf(f, nil)) {
			m[f.Name()] = v
			return true
		}
	}
	if len(lists) > 0 {
		f := pick(lists)
		m[f.Name()] = []any{c.newItem(f, nil)}
		c.nested = append(c.nested, f)
		return true
	}
	if len(maps) > 0 {
		f := pick(maps)
		entry := map[string]any{}
		if f.Values != nil {
			entry[c.newKey(f, entry)] = c.fill(f.Values)
			m[f.Name()] = entry
			return true
		}
	}
	for _, i := range c.r.Perm(len(objects)) {
		f := objects[i]
		sub, _ := c.rich(f).(map[string]any)
		if sub == nil {
			continue
		}
		if effectiveDiff(map[string]bool{}, f, nil, sub) || c.enrich(f, sub) {
			m[f.Name()] = sub
			c.nested = append(c.nested, f)
			return true
		}
	}
	return false
}

// embed fills the type and object metadata an embedded resource needs.
func (c *caseCtx) embed(node *crd.Property, m map[string]any) {
	kind := "ConfigMap"
	apiVersion := "v1"
	if node.Semantic != nil && node.Semantic.Type != "" {
		t := node.Semantic.Type
		if i := strings.LastIndex(t, "."); i >= 0 {
			kind = t[i+1:]
		}
		if strings.Contains(t, "/apps/v1.") {
			apiVersion = "apps/v1"
		}
	} else if name := node.Path.Last(); name != "" {
		kind = strings.ToUpper(name[:1]) + identOnly(name[1:])
	}
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = apiVersion
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = kind
	}
	if _, ok := m["metadata"]; !ok {
		m["metadata"] = map[string]any{"name": "gauntlet-" + c.word(5)}
	}
}

func identOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// newItem returns a new element for the list property arr that keeps list-type invariants with
// the existing elements (distinct map keys for list-type=map, distinct values for sets).
func (c *caseCtx) newItem(arr *crd.Property, existing []any) any {
	it := arr.Items
	if it == nil {
		return nil
	}
	keys := arr.ListMapKeys
	implicit := len(keys) == 0 && c.g.uniqueNames(arr)
	if implicit {
		// Containers, volumes and ports are keyed by name in Kubernetes though the CRD says not.
		keys = []string{"name"}
	}
	var best any
	for attempt := 0; attempt < 8; attempt++ {
		var v any
		if it.Type == crd.TypeObject {
			v = c.rich(it)
			if m, ok := v.(map[string]any); ok {
				if implicit {
					// A new container, volume or port gets a new name: one from the pool may be a
					// sibling's (an init container named like a container).
					if sv, err := c.scalar(it.Field("name"), nil); err == nil {
						m["name"] = sv
					}
				}
				for _, k := range keys {
					if _, ok := m[k]; !ok {
						if f := it.Field(k); f != nil {
							m[k] = c.fill(f)
						}
					}
				}
				if attempt > 0 {
					// Re-draw the key fields to get distinct keys.
					for _, k := range keys {
						if f := it.Field(k); f != nil && !f.HasDefault {
							if sv, err := c.scalar(f, nil); err == nil {
								m[k] = sv
							}
						}
					}
				}
			}
		} else if attempt == 0 {
			v = c.fill(it)
		} else {
			sv, err := c.scalar(it, nil)
			if err != nil {
				v = c.fill(it)
			} else {
				v = sv
			}
		}
		best = v
		if !collides(arr, existing, v) && (!implicit || !nameTaken(existing, v)) {
			return v
		}
	}
	return best
}

func collides(arr *crd.Property, existing []any, v any) bool {
	switch arr.ListType {
	case "set":
		for _, e := range existing {
			if jsonv.Equal(e, v) {
				return true
			}
		}
	case "map":
		vm, _ := v.(map[string]any)
		for _, e := range existing {
			em, _ := e.(map[string]any)
			same := true
			for _, k := range arr.ListMapKeys {
				if !jsonv.Equal(em[k], vm[k]) {
					same = false
					break
				}
			}
			if same {
				return true
			}
		}
	}
	return false
}

// newKey returns a key not yet in m for the map (or free-form object) property node: a key the
// pool has seen first, then a key suggested by the map's meaning.
func (c *caseCtx) newKey(node *crd.Property, m map[string]any) string {
	keys, _ := c.g.pool.Keys(node.Path.String())
	var fresh []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) > 0 {
		return fresh[c.r.IntN(len(fresh))]
	}
	for _, k := range suggestedKeys(node) {
		if _, ok := m[k]; !ok {
			return k
		}
	}
	for {
		k := "gauntlet-" + c.word(5)
		if isLabelMap(node) {
			k = "gauntlet.dev/" + c.word(6)
		}
		if _, ok := m[k]; !ok {
			return k
		}
	}
}

func isLabelMap(node *crd.Property) bool {
	n := strings.ToLower(node.Path.Last())
	return strings.Contains(n, "label") || strings.Contains(n, "annotation") || strings.Contains(n, "selector")
}

// suggestedKeys lists natural keys for well-known maps.
func suggestedKeys(node *crd.Property) []string {
	n := node.Path.Last()
	if isResourceList(node) {
		if node.Semantic != nil && strings.Contains(node.Semantic.Root, "olume") {
			return []string{"storage"}
		}
		if strings.Contains(strings.ToLower(node.Path.String()), "storage") || strings.Contains(strings.ToLower(node.Path.String()), "volume") || strings.Contains(strings.ToLower(node.Path.String()), "pvc") {
			return []string{"storage"}
		}
		return []string{"cpu", "memory", "ephemeral-storage"}
	}
	switch n {
	case "nodeSelector":
		return []string{"kubernetes.io/os"}
	}
	return nil
}

// isResourceList reports whether node is a map of resource name to quantity (limits, requests).
func isResourceList(node *crd.Property) bool {
	if node.Values == nil {
		// A free-form limits or requests of a container's resources (Strimzi's).
		n := node.Path.Last()
		return node.IsFreeForm() && (n == "limits" || n == "requests") && node.Parent != nil && node.Parent.Path.Last() == "resources"
	}
	v := node.Values
	if v.Semantic != nil && strings.HasSuffix(v.Semantic.Type, "resource.Quantity") {
		return true
	}
	n := node.Path.Last()
	return (n == "limits" || n == "requests") && (v.IntOrString || v.Type == crd.TypeString)
}

// word returns n random lower-case alphanumerics starting with a letter.
func (c *caseCtx) word(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		if i == 0 {
			b[i] = letters[c.r.IntN(len(letters))]
		} else {
			b[i] = alnum[c.r.IntN(len(alnum))]
		}
	}
	return string(b)
}

// freeValue returns a value for a key of a free-form object: from the pool when the key was seen,
// else a string.
func (c *caseCtx) freeValue(node *crd.Property, key string) any {
	_, vals := c.g.pool.Keys(node.Path.String())
	if vs := vals[key]; len(vs) > 0 {
		return jsonv.Copy(vs[c.r.IntN(len(vs))].Value)
	}
	return "gauntlet-" + c.word(4)
}

var quantityPatternRE = regexp.MustCompile(`\[KMGTPE\]i|\[numkMGTPE\]|eEinumkKMGTP|\[mMgG\]|\[KMG\]i`)

// isQuantity reports whether a property holds Kubernetes quantities.
func isQuantity(p *crd.Property) bool {
	if p.Semantic != nil && (strings.HasSuffix(p.Semantic.Type, "resource.Quantity") || p.Semantic.Hint == semantic.HintQuantity || p.Semantic.Hint == semantic.HintStorageSize) {
		return true
	}
	return quantityPatternRE.MatchString(p.Pattern)
}

// quantityKind classifies a quantity by the resource it measures.
func quantityKind(p *crd.Property, key string) string {
	s := strings.ToLower(key + " " + p.Path.String())
	if p.Semantic != nil && p.Semantic.Hint == semantic.HintStorageSize {
		return "storage"
	}
	switch {
	case key == "cpu" || strings.HasSuffix(s, "cpu"):
		return "cpu"
	case strings.Contains(key, "memory") || strings.Contains(key, "hugepages"):
		return "memory"
	case strings.Contains(key, "storage") || strings.Contains(s, "storage") || strings.Contains(s, "volume") || strings.Contains(s, "size"):
		return "storage"
	case strings.Contains(s, "memory") || strings.Contains(s, "heap"):
		return "memory"
	case strings.Contains(s, "cpu"):
		return "cpu"
	}
	return ""
}

var quantityLadders = map[string][]string{
	"cpu":     {"100m", "250m", "500m", "1", "2"},
	"memory":  {"64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi"},
	"storage": {"1Gi", "2Gi", "5Gi", "10Gi", "20Gi"},
	"":        {"1", "2", "100m", "128Mi", "1Gi"},
}

// quantity returns a quantity string for p (key is the resource name for resource lists), valid
// under p's pattern and different from avoid when possible.
func (c *caseCtx) quantity(p *crd.Property, key string, avoid any) (any, error) {
	if _, name, ok := coreField(p); ok && name == "divisor" {
		// A downward API divisor: 1 is the one every resource accepts.
		if avoid != nil && sameQuantity(avoid, "1") {
			return nil, errNoValue
		}
		return "1", nil
	}
	ladder := quantityLadders[quantityKind(p, key)]
	order := c.r.Perm(len(ladder))
	for _, i := range order {
		q := ladder[i]
		if avoid != nil && sameQuantity(avoid, q) {
			continue
		}
		if c.g.patternOK(p, q) {
			return q, nil
		}
	}
	if p.Pattern != "" {
		return c.fromPattern(p, avoid)
	}
	return nil, errNoValue
}

func sameQuantity(a any, b string) bool {
	qa, err1 := parseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	return err1 == nil && err2 == nil && qa.Cmp(qb) == 0
}

func parseQuantity(v any) (resource.Quantity, error) {
	switch x := v.(type) {
	case string:
		return resource.ParseQuantity(x)
	default:
		if n, ok := jsonv.AsInt(v); ok {
			return *resource.NewQuantity(n, resource.DecimalSI), nil
		}
		if f, ok := jsonv.AsFloat(v); ok {
			return resource.ParseQuantity(fmt.Sprintf("%g", f))
		}
	}
	return resource.Quantity{}, fmt.Errorf("not a quantity: %v", v)
}

// scaleQuantity multiplies a quantity by num/den, rounding to a milli-unit.
func scaleQuantity(v any, num, den int64) (string, error) {
	q, err := parseQuantity(v)
	if err != nil {
		return "", err
	}
	m := q.MilliValue()
	if m > math.MaxInt64/num {
		return "", fmt.Errorf("quantity %s too large to scale", q.String())
	}
	out := resource.NewMilliQuantity(m*num/den, q.Format)
	return out.String(), nil
}

// fromPattern samples p's pattern within its length bounds, avoiding avoid.
func (c *caseCtx) fromPattern(p *crd.Property, avoid any) (any, error) {
	s, err := c.g.sampler(p.Pattern)
	if err != nil {
		return nil, err
	}
	o := regexgen.Options{}
	if p.MinLength != nil {
		o.MinLen = int(*p.MinLength)
	}
	if p.MaxLength != nil {
		o.MaxLen = int(*p.MaxLength)
	}
	var last string
	for i := 0; i < 6; i++ {
		v, err := s.Sample(c.r, o)
		if err != nil {
			return nil, err
		}
		last = v
		if avoid == nil || !jsonv.Equal(v, avoid) {
			return v, nil
		}
	}
	return last, errNoValue
}

// scalar generates a valid scalar for p from its constraints, different from avoid when possible.
func (c *caseCtx) scalar(p *crd.Property, avoid any) (any, error) {
	if len(p.Enum) > 0 {
		var opts []any
		for _, e := range p.Enum {
			if avoid == nil || !jsonv.Equal(e, avoid) {
				opts = append(opts, e)
			}
		}
		if len(opts) == 0 {
			return nil, errNoValue
		}
		return jsonv.Copy(opts[c.r.IntN(len(opts))]), nil
	}
	key := ""
	if p == c.p {
		key = c.key
	}
	switch {
	case p.IntOrString || (p.Type == crd.TypeString && isQuantity(p)):
		if isQuantity(p) {
			return c.quantity(p, key, avoid)
		}
		if c.domain(p) == domPort {
			return c.port(p, avoid)
		}
		if p.Pattern != "" && c.r.IntN(2) == 0 {
			return c.fromPattern(p, avoid)
		}
		if c.r.IntN(2) == 0 {
			pct := fmt.Sprintf("%d%%", 10*(1+c.r.IntN(9)))
			if c.g.patternOK(p, pct) && (avoid == nil || !jsonv.Equal(pct, avoid)) {
				return pct, nil
			}
		}
		return c.integer(p, avoid)
	case p.Type == crd.TypeBoolean:
		if b, ok := avoid.(bool); ok {
			return !b, nil
		}
		return c.r.IntN(2) == 0, nil
	case p.Type == crd.TypeInteger:
		return c.integer(p, avoid)
	case p.Type == crd.TypeNumber:
		return c.number(p, avoid)
	case p.Type == crd.TypeString:
		return c.str(p, avoid)
	case p.Type == "":
		return c.str(p, avoid)
	}
	return nil, fmt.Errorf("%s: no scalar generator for type %q", p.Path, p.Type)
}

// intBounds returns the inclusive integer range p allows, narrowed to a small default range
// (small scale first) where the schema leaves it open.
func intBounds(p *crd.Property) (lo, hi int64) {
	lo, hi = -(1 << 53), 1<<53
	switch p.Format {
	case "int32":
		lo, hi = math.MinInt32, math.MaxInt32
	}
	hasLo, hasHi := false, false
	// Keep bounds where float64 and int64 agree so conversions and spans cannot overflow.
	const limit = 1 << 53
	clamp := func(f float64) float64 { return math.Max(-limit, math.Min(limit, f)) }
	if p.Minimum != nil {
		lo = int64(math.Ceil(clamp(*p.Minimum)))
		if p.ExclusiveMinimum && float64(lo) == *p.Minimum {
			lo++
		}
		hasLo = true
	}
	if p.Maximum != nil {
		hi = int64(math.Floor(clamp(*p.Maximum)))
		if p.ExclusiveMaximum && float64(hi) == *p.Maximum {
			hi--
		}
		hasHi = true
	}
	hint := ""
	if p.Semantic != nil {
		hint = p.Semantic.Hint
	}
	if !hasLo {
		switch {
		case hint == semantic.HintReplicas:
			lo = 1
		case hint == semantic.HintPort:
			lo = 1024
		case hasHi && hi < 0:
			lo = hi - 10
		default:
			lo = 0
		}
	}
	if !hasHi {
		switch hint {
		case semantic.HintPort:
			hi = max(lo, 9999)
		default:
			hi = lo + 10
		}
	}
	return lo, hi
}

// snapInt moves v onto a multiple of p.multipleOf inside [lo, hi] if one exists.
func snapInt(p *crd.Property, v, lo, hi int64) (int64, bool) {
	if p.MultipleOf == nil || *p.MultipleOf <= 0 || *p.MultipleOf != math.Trunc(*p.MultipleOf) {
		return v, v >= lo && v <= hi
	}
	m := int64(*p.MultipleOf)
	s := (v / m) * m
	if s < lo {
		s += m
	}
	return s, s >= lo && s <= hi
}

// smallClusterReplicas bounds the random replica counts of valid test cases:
// every pod is a process of a test cluster, and a roll of dozens of pods costs
// minutes per step (a generated 91 made an untuned campaign time out twice).
// Boundary test cases still reach the schema's maximum (as misoperations
// above 50).
const smallClusterReplicas = 5

func (c *caseCtx) integer(p *crd.Property, avoid any) (any, error) {
	lo, hi := intBounds(p)
	if clo, chi, ok := coreIntRange(p); ok {
		if lo, hi = max(lo, clo), min(hi, chi); lo > hi {
			// The name's hint (a port of 1024 to 9999) is no node port; the schema's bounds win.
			lo, hi = intBounds(p)
			if p.Minimum == nil && p.Maximum == nil {
				lo, hi = clo, chi
			}
		}
	}
	if p.Semantic != nil && p.Semantic.Hint == semantic.HintReplicas {
		hi = min(hi, max(lo, smallClusterReplicas))
	}
	if lo > hi {
		return nil, fmt.Errorf("%s: empty integer range [%d,%d]", p.Path, lo, hi)
	}
	for i := 0; i < 16; i++ {
		v := lo + c.r.Int64N(hi-lo+1)
		v, ok := snapInt(p, v, lo, hi)
		if !ok {
			continue
		}
		if avoid == nil || !jsonv.Equal(v, avoid) {
			return v, nil
		}
	}
	return nil, errNoValue
}

func (c *caseCtx) number(p *crd.Property, avoid any) (any, error) {
	lo, hi := 0.0, 10.0
	if p.Minimum != nil {
		lo = *p.Minimum
	}
	if p.Maximum != nil {
		hi = *p.Maximum
	} else {
		hi = lo + 10
	}
	for i := 0; i < 16; i++ {
		v := math.Round((lo+c.r.Float64()*(hi-lo))*100) / 100
		if p.MultipleOf != nil && *p.MultipleOf > 0 {
			v = math.Round(v / *p.MultipleOf) * *p.MultipleOf
		}
		if v < lo || v > hi || (p.ExclusiveMinimum && v == lo) || (p.ExclusiveMaximum && v == hi) {
			continue
		}
		if avoid == nil || !jsonv.Equal(v, avoid) {
			return v, nil
		}
	}
	return nil, errNoValue
}

// str generates a string for p from its domain, format, pattern, hint and length bounds.
func (c *caseCtx) str(p *crd.Property, avoid any) (any, error) {
	// Images come from the pool (candidates); a drawn one is made up (genChange's misoperation).
	if d := c.domain(p); d != domNone && d != domImage {
		if v, ok := c.domainString(p, d, avoid); ok {
			return v, nil
		}
	}
	if old, ok := avoid.(string); ok && p.Name() == "{*}" && p.Format == "" {
		// A value of a string map (configuration): in the form of the value it replaces.
		if v, ok := c.likeValue(old); ok && c.g.fits(p, v) {
			return v, nil
		}
	}
	if p.Pattern != "" {
		return c.fromPattern(p, avoid)
	}
	for i := 0; i < 8; i++ {
		v := c.formatted(p)
		v = fitLength(v, p, c)
		if avoid == nil || !jsonv.Equal(v, avoid) {
			return v, nil
		}
	}
	return nil, errNoValue
}

func fitLength(v string, p *crd.Property, c *caseCtx) string {
	if p.MaxLength != nil && int64(len(v)) > *p.MaxLength {
		v = v[:*p.MaxLength]
	}
	if p.MinLength != nil {
		for int64(len(v)) < min(*p.MinLength, maxMaterialized) {
			v += c.word(1)
		}
	}
	return v
}

// formatted returns a string for p's format (or hint, or a generic name).
func (c *caseCtx) formatted(p *crd.Property) string {
	r := c.r
	switch strings.ReplaceAll(p.Format, "-", "") {
	case "datetime":
		return fmt.Sprintf("2025-%02d-%02dT%02d:%02d:%02dZ", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
	case "date":
		return fmt.Sprintf("2025-%02d-%02d", 1+r.IntN(12), 1+r.IntN(28))
	case "duration":
		units := []string{"s", "m", "h"}
		return fmt.Sprintf("%d%s", 1+r.IntN(59), units[r.IntN(len(units))])
	case "uuid", "uuid4":
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Int64N(1<<48))
	case "uuid3":
		return fmt.Sprintf("%08x-%04x-3%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Int64N(1<<48))
	case "uuid5":
		return fmt.Sprintf("%08x-%04x-5%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Int64N(1<<48))
	case "hostname":
		return c.word(6) + ".example.com"
	case "ipv4":
		return fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), 1+r.IntN(254))
	case "ipv6":
		return fmt.Sprintf("fd00::%x", 1+r.IntN(0xfffe))
	case "cidr":
		return fmt.Sprintf("10.%d.0.0/16", r.IntN(256))
	case "mac":
		return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256))
	case "email":
		return c.word(6) + "@example.com"
	case "uri":
		return "https://" + c.word(6) + ".example.com/" + c.word(4)
	case "byte":
		b := make([]byte, 12)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return base64.StdEncoding.EncodeToString(b)
	case "bsonobjectid":
		return fmt.Sprintf("%012x%012x", r.Int64N(1<<48), r.Int64N(1<<48))
	case "hexcolor":
		return fmt.Sprintf("#%06x", r.IntN(1<<24))
	case "k8sshortname":
		return "gauntlet-" + c.word(5)
	case "k8slongname":
		return "gauntlet-" + c.word(5) + ".example.com"
	}
	hint := ""
	if p.Semantic != nil {
		hint = p.Semantic.Hint
	}
	switch hint {
	case semantic.HintVersion:
		return fmt.Sprintf("%d.%d.%d", 1+r.IntN(3), r.IntN(10), r.IntN(10))
	case semantic.HintImage:
		if c.g.domainOf(p) != domImage {
			break // an RBD image: a plain name
		}
		return fmt.Sprintf("registry.example.com/gauntlet/%s:%d.%d.%d", c.word(5), 1+r.IntN(3), r.IntN(10), r.IntN(10))
	}
	return "gauntlet-" + c.word(5)
}

// boolPtr-free helpers for bounds used by boundary generators.

// minInt returns the smallest integer p allows, if bounded.
func minInt(p *crd.Property) (int64, bool) {
	if p.Minimum == nil {
		return 0, false
	}
	lo, hi := intBounds(p)
	v, ok := snapInt(p, lo, lo, hi)
	return v, ok
}

// maxInt returns the largest integer p allows, if bounded.
func maxInt(p *crd.Property) (int64, bool) {
	if p.Maximum == nil {
		return 0, false
	}
	lo, hi := intBounds(p)
	if p.MultipleOf != nil && *p.MultipleOf >= 1 {
		m := int64(*p.MultipleOf)
		v := (hi / m) * m
		return v, v >= lo
	}
	return hi, hi >= lo
}
