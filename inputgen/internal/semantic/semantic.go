package semantic

import (
	"regexp"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// Name hints for primitive properties.
const (
	HintReplicas    = "replicas"
	HintImage       = "image"
	HintVersion     = "version"
	HintStorageSize = "storage-size"
	HintToggle      = "toggle"
	HintQuantity    = "quantity"
	HintPort        = "port"
	HintConfig      = "config"
)

// Match thresholds: a sub-schema matches a type when at least minPrecision of its fields exist in
// the type with a compatible shape, and the match covers minRecall of the type's fields or at
// least minMatchedFields of them.
const (
	minPrecision     = 0.8
	minRecall        = 0.5
	minMatchedFields = 4
)

// genericNames are field names too common to identify a type on their own.
var genericNames = map[string]bool{
	"name": true, "value": true, "key": true, "type": true, "kind": true, "optional": true,
	"namespace": true, "path": true, "enabled": true, "apiVersion": true, "items": true,
}

// Result summarises an annotation pass.
type Result struct {
	// Total is the number of properties considered.
	Total int
	// Mapped counts properties with any inferred meaning.
	Mapped int
	// Structural counts properties inside a structurally matched core type.
	Structural int
	// Hinted counts properties with a name hint.
	Hinted int
	// Roots lists each structurally matched root path with its type, sorted by path.
	Roots []RootMatch
}

// RootMatch is one sub-schema matched to a core type.
type RootMatch struct {
	Path  string  `json:"path"`
	Type  string  `json:"type"`
	Score float64 `json:"score"`
}

// Share is Mapped/Total (0 when there are no properties).
func (r Result) Share() float64 {
	if r.Total == 0 {
		return 0
	}
	return float64(r.Mapped) / float64(r.Total)
}

// Annotate fills Property.Semantic for every property of s and returns the mapping statistics.
func Annotate(c *Catalog, s *crd.Schema) Result {
	a := &annotator{c: c}
	for _, f := range s.Root.Fields {
		switch f.Name() {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		a.visit(f)
	}
	res := Result{Roots: a.roots}
	for _, p := range s.Properties() {
		if h := hint(p); h != "" {
			sem(p).Hint = h
		}
		res.Total++
		if p.Semantic != nil && p.Semantic.Root != "" {
			res.Structural++
		}
		if p.Semantic != nil && p.Semantic.Hint != "" {
			res.Hinted++
		}
		if p.Semantic.Mapped() {
			res.Mapped++
		}
	}
	sort.Slice(res.Roots, func(i, j int) bool { return res.Roots[i].Path < res.Roots[j].Path })
	return res
}

func sem(p *crd.Property) *crd.Semantic {
	if p.Semantic == nil {
		p.Semantic = &crd.Semantic{}
	}
	return p.Semantic
}

type annotator struct {
	c     *Catalog
	roots []RootMatch
}

func (a *annotator) visit(p *crd.Property) {
	if p.Type == crd.TypeObject && len(p.Fields) >= 1 {
		if e, score := a.best(p); e != nil {
			a.roots = append(a.roots, RootMatch{Path: p.Path.String(), Type: e.name, Score: score})
			a.descend(p, e.shape, p.Path.String(), "", score, e.name)
			return
		}
	}
	a.children(p)
}

func (a *annotator) children(p *crd.Property) {
	for _, f := range p.Fields {
		a.visit(f)
	}
	if p.Items != nil {
		a.visit(p.Items)
	}
	if p.Values != nil {
		a.visit(p.Values)
	}
}

// best returns the catalogue entry p matches best, or nil.
func (a *annotator) best(p *crd.Property) (*entry, float64) {
	var best *entry
	bestScore, bestRank := 0.0, 0.0
	for i := range a.c.entries {
		e := &a.c.entries[i]
		score, ok := matchScore(p, e.shape)
		if !ok {
			continue
		}
		// Equal shapes (ConfigMapKeySelector and SecretKeySelector) are told apart by name:
		// a small bonus for the longest common substring of property and type names.
		rank := score + 0.05*nameSimilarity(p.Name(), e.name)
		if rank > bestRank+1e-9 {
			best, bestScore, bestRank = e, score, rank
		}
	}
	return best, bestScore
}

// nameSimilarity is the longest common substring of a property name and a type's short name,
// relative to the type name's length, case-insensitively.
func nameSimilarity(prop, qualified string) float64 {
	t := qualified[strings.LastIndex(qualified, ".")+1:]
	a, b := strings.ToLower(prop), strings.ToLower(t)
	if len(b) == 0 {
		return 0
	}
	longest := 0
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
				longest = max(longest, cur[j])
			} else {
				cur[j] = 0
			}
		}
		prev, cur = cur, prev
	}
	return float64(longest) / float64(len(b))
}

// matchScore computes the F1 of field-name overlap between p and an object shape, and whether it
// passes the thresholds.
func matchScore(p *crd.Property, sh *Shape) (float64, bool) {
	if sh.Kind != KindObject || len(p.Fields) == 0 || len(sh.Fields) == 0 {
		return 0, false
	}
	matched, distinctive := 0, 0
	for _, f := range p.Fields {
		if fs, ok := sh.Fields[f.Name()]; ok && compatible(f, fs) {
			matched++
			if !genericNames[f.Name()] {
				distinctive++
			}
		}
	}
	if matched == 0 {
		return 0, false
	}
	precision := float64(matched) / float64(len(p.Fields))
	recall := float64(matched) / float64(len(sh.Fields))
	switch {
	case matched == 1:
		// One field identifies a small type only by a long, specific name (matchLabels).
		if precision < 1 || distinctive == 0 || len(sh.Fields) > 3 || len(p.Fields[0].Name()) < 10 {
			return 0, false
		}
	case matched == 2 && distinctive == 0:
		// Two generic names (name, value) say nothing.
		return 0, false
	case precision >= minPrecision:
		// Mostly the type's fields: enough when it covers a good part of the type, or several
		// fields, or only distinctive ones.
		if recall < minRecall && matched < minMatchedFields && !(matched == distinctive && precision == 1) {
			return 0, false
		}
	case precision >= 0.6 && distinctive >= 2 && recall >= 0.6:
		// A few extra fields next to most of a small type (affinity with a custom field).
	default:
		return 0, false
	}
	return 2 * precision * recall / (precision + recall), true
}

// compatible reports whether a CRD property can hold values of a shape.
func compatible(p *crd.Property, sh *Shape) bool {
	if sh.Kind == KindAny {
		return true
	}
	if p.IntOrString {
		switch sh.Kind {
		case KindIntOrString, KindQuantity, KindString, KindInteger:
			return true
		}
		return false
	}
	switch p.Type {
	case crd.TypeObject:
		return sh.Kind == KindObject || sh.Kind == KindMap
	case crd.TypeArray:
		return sh.Kind == KindArray
	case crd.TypeString:
		switch sh.Kind {
		case KindString, KindQuantity, KindTime, KindIntOrString:
			return true
		}
	case crd.TypeInteger:
		return sh.Kind == KindInteger || sh.Kind == KindIntOrString || sh.Kind == KindQuantity
	case crd.TypeNumber:
		return sh.Kind == KindNumber || sh.Kind == KindInteger || sh.Kind == KindQuantity
	case crd.TypeBoolean:
		return sh.Kind == KindBoolean
	case "":
		return true
	}
	return false
}

// descend labels p and its sub-tree with the shape's types; CRD fields the shape lacks are visited
// on their own.
func (a *annotator) descend(p *crd.Property, sh *Shape, root, field string, score float64, rootType string) {
	s := sem(p)
	s.Root, s.Field, s.Score = root, field, score
	s.Type = sh.GoType
	if s.Type == "" {
		s.Type = rootType + "#" + field
	}
	if sh.Kind == KindAny {
		return
	}
	for _, f := range p.Fields {
		if fs, ok := sh.Fields[f.Name()]; ok && compatible(f, fs) {
			a.descend(f, fs, root, join(field, f.Name()), score, rootType)
		} else {
			a.visit(f)
		}
	}
	if p.Items != nil {
		if sh.Kind == KindArray && sh.Elem != nil && compatible(p.Items, sh.Elem) {
			a.descend(p.Items, sh.Elem, root, field+"[*]", score, rootType)
		} else {
			a.visit(p.Items)
		}
	}
	if p.Values != nil {
		if (sh.Kind == KindMap || sh.Kind == KindAny) && sh.Elem != nil && compatible(p.Values, sh.Elem) {
			a.descend(p.Values, sh.Elem, root, field+"{*}", score, rootType)
		} else {
			a.visit(p.Values)
		}
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

var (
	toggleRE   = regexp.MustCompile(`^(enabled?|disabled?|enable[A-Z].*|disable[A-Z].*|.+Enabled|.+Disabled)$`)
	replicasRE = regexp.MustCompile(`(?i)^(replicas|size|nodes|members|clustersize|instances|shards|nodecount|numnodes|replicacount|.+replicas|replicaspershard)$`)
	versionRE  = regexp.MustCompile(`^(version|.+Version)$`)
	imageRE    = regexp.MustCompile(`^(image|.+Image)$`)
	storageRE  = regexp.MustCompile(`(?i)^(storage|size|storagesize|volumesize|capacity|disksize|datasize|storagecapacity)$`)
	portRE     = regexp.MustCompile(`^(port|.+Port)$`)
	configRE   = regexp.MustCompile(`(?i)^(config|configuration|.+config|.+configuration|parameters|settings|properties|options|.+options)$`)
	quantityRE = regexp.MustCompile(`\[KMGTPE\]i`)
)

var notVersion = map[string]bool{"apiVersion": true, "resourceVersion": true, "kubeletVersion": true, "minimumVersion": false}

// hint infers a primitive role from a property's name, type and context.
func hint(p *crd.Property) string {
	name := p.Name()
	parent := ""
	if p.Parent != nil {
		parent = strings.ToLower(p.Parent.Name())
	}
	quantityLike := (p.IntOrString && quantityRE.MatchString(p.Pattern)) ||
		(p.Semantic != nil && strings.HasSuffix(p.Semantic.Type, "resource.Quantity"))
	switch {
	case p.Type == crd.TypeBoolean && toggleRE.MatchString(name):
		return HintToggle
	case p.Type == crd.TypeInteger && replicasRE.MatchString(name) && !strings.Contains(strings.ToLower(p.Description), "bytes"):
		return HintReplicas
	case p.Type == crd.TypeInteger && portRE.MatchString(name):
		return HintPort
	case (p.Type == crd.TypeString || p.IntOrString) && storageRE.MatchString(name) && (quantityLike || p.Type == crd.TypeString) &&
		(parent != "" && (strings.Contains(parent, "storage") || strings.Contains(parent, "persist") || strings.Contains(parent, "volume") || strings.Contains(parent, "disk") || name == "storage" || quantityLike)):
		return HintStorageSize
	case p.Type == crd.TypeString && imageRE.MatchString(name):
		return HintImage
	case p.Type == crd.TypeString && name == "name" && parent == "image":
		return HintImage
	case p.Type == crd.TypeString && versionRE.MatchString(name) && !notVersion[name]:
		return HintVersion
	case quantityLike:
		return HintQuantity
	case (p.IsFreeForm() || (p.Values != nil && p.Values.Type == crd.TypeString)) && configRE.MatchString(name):
		return HintConfig
	}
	return ""
}
