package inputgen

import (
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Source tells where a pool value comes from.
type Source string

// Value sources.
const (
	SourceExample Source = "example"
	SourceTarget  Source = "target"
	SourceLLM     Source = "llm"
)

// PoolValue is one candidate value and its provenance.
type PoolValue struct {
	Value  any    `json:"value"`
	Source Source `json:"source"`
}

// Pool holds candidate values per property: mined from the target's example CRs (the values the
// operator's developers wrote), declared by the target, or proposed by an LLM. Lookups fall back
// from the exact property path to properties of the same name and type. It is safe for concurrent
// reads after filling.
type Pool struct {
	mu     sync.RWMutex
	byPath map[string][]PoolValue
	// byName lists, per property name, the paths recorded under it (Related reads them).
	byName map[string][]string
	// keys holds, per map or free-form object property, the keys seen with their values.
	keys map[string]map[string][]PoolValue
	// memo caches Related's answers; any addition clears it.
	memo map[string][]any
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{
		byPath: map[string][]PoolValue{},
		byName: map[string][]string{},
		keys:   map[string]map[string][]PoolValue{},
	}
}

func appendUnique(list []PoolValue, v PoolValue) []PoolValue {
	for _, e := range list {
		if jsonv.Equal(e.Value, v.Value) {
			return list
		}
	}
	return append(list, v)
}

// Add records a candidate value for the property at path (string form, e.g. "spec.image").
func (p *Pool) Add(path string, v any, src Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(path, v, src)
}

func (p *Pool) add(path string, v any, src Source) {
	pv := PoolValue{Value: jsonv.Copy(v), Source: src}
	if _, known := p.byPath[path]; !known {
		if parsed, err := crd.ParsePath(path); err == nil {
			if name := parsed.Last(); name != "" {
				p.byName[name] = append(p.byName[name], path)
			}
		}
	}
	p.byPath[path] = appendUnique(p.byPath[path], pv)
	p.memo = nil
}

// AddKey records a key and value seen in a map or free-form object at path.
func (p *Pool) AddKey(path, key string, v any, src Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.keys[path]
	if m == nil {
		m = map[string][]PoolValue{}
		p.keys[path] = m
	}
	m[key] = appendUnique(m[key], PoolValue{Value: jsonv.Copy(v), Source: src})
	p.memo = nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any, nil:
		return false
	}
	return true
}

// Values returns the candidates recorded for exactly this property.
func (p *Pool) Values(path string) []PoolValue {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]PoolValue(nil), p.byPath[path]...)
}

// Keys returns the keys (sorted) and their values seen for a map or free-form property.
func (p *Pool) Keys(path string) ([]string, map[string][]PoolValue) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m := p.keys[path]
	keys := slices.Sorted(maps.Keys(m))
	return keys, m
}

// Candidates returns the values recorded for prop's own path whose type fits.
func (p *Pool) Candidates(prop *crd.Property) []any {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []any
	for _, v := range p.byPath[prop.Path.String()] {
		if fitsType(prop, v.Value) {
			out = append(out, v.Value)
		}
	}
	return out
}

// Related returns the scalar values recorded for other paths that same selects, computed once per
// key until the pool changes: values mined for one property are offered to another only when
// the caller judges them of the same meaning. names restricts the paths looked at to those of
// properties with one of these names (nil: every path).
func (p *Pool) Related(key string, names []string, same func(path string) bool) []any {
	p.mu.RLock()
	if v, ok := p.memo[key]; ok {
		p.mu.RUnlock()
		return v
	}
	var paths []string
	if names == nil {
		for path := range p.byPath {
			paths = append(paths, path)
		}
	} else {
		for _, n := range names {
			paths = append(paths, p.byName[n]...)
		}
	}
	sort.Strings(paths) // deterministic order
	var out []any
	for _, path := range paths {
		if !same(path) {
			continue
		}
		for _, v := range p.byPath[path] {
			if isScalar(v.Value) && !containsValue(out, v.Value) {
				out = append(out, v.Value)
			}
		}
	}
	p.mu.RUnlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.memo == nil {
		p.memo = map[string][]any{}
	}
	p.memo[key] = out
	return out
}

// Len returns the number of recorded values (paths and keys).
func (p *Pool) Len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := 0
	for _, v := range p.byPath {
		n += len(v)
	}
	for _, m := range p.keys {
		for _, v := range m {
			n += len(v)
		}
	}
	return n
}

func isLeafType(prop *crd.Property) bool {
	switch prop.Type {
	case crd.TypeString, crd.TypeInteger, crd.TypeNumber, crd.TypeBoolean:
		return true
	}
	return prop.IntOrString
}

// fitsType reports whether v has the JSON type prop declares.
func fitsType(prop *crd.Property, v any) bool {
	if prop.IntOrString {
		switch v.(type) {
		case string, int64, int:
			return true
		}
		_, ok := jsonv.AsInt(v)
		return ok
	}
	switch prop.Type {
	case crd.TypeString:
		_, ok := v.(string)
		return ok
	case crd.TypeInteger:
		_, ok := jsonv.AsInt(v)
		return ok
	case crd.TypeNumber:
		_, ok := jsonv.AsFloat(v)
		return ok
	case crd.TypeBoolean:
		_, ok := v.(bool)
		return ok
	case crd.TypeObject:
		_, ok := v.(map[string]any)
		return ok
	case crd.TypeArray:
		_, ok := v.([]any)
		return ok
	}
	return true
}

// Mine walks an example CR along the schema and records every value it holds: scalars and whole
// objects and lists per property, and keys of maps and free-form objects. Fields the schema does
// not know are skipped.
func (p *Pool) Mine(s *crd.Schema, obj map[string]any, src Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range s.Root.Fields {
		switch f.Name() {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		if v, ok := obj[f.Name()]; ok {
			p.mine(f, v, src)
		}
	}
}

func (p *Pool) mine(prop *crd.Property, v any, src Source) {
	if v == nil {
		return
	}
	if fitsType(prop, v) {
		p.add(prop.Path.String(), v, src)
	}
	switch x := v.(type) {
	case map[string]any:
		if len(prop.Fields) > 0 {
			for _, f := range prop.Fields {
				if fv, ok := x[f.Name()]; ok {
					p.mine(f, fv, src)
				}
			}
		}
		if prop.Values != nil || prop.IsFreeForm() || prop.AnyValues {
			path := prop.Path.String()
			keys := slices.Sorted(maps.Keys(x)) // deterministic pool order
			for _, k := range keys {
				e := x[k]
				if prop.Field(k) != nil {
					continue
				}
				m := p.keys[path]
				if m == nil {
					m = map[string][]PoolValue{}
					p.keys[path] = m
				}
				m[k] = appendUnique(m[k], PoolValue{Value: jsonv.Copy(e), Source: src})
				if prop.Values != nil {
					p.mine(prop.Values, e, src)
				}
			}
		}
	case []any:
		if prop.Items != nil {
			for _, e := range x {
				p.mine(prop.Items, e, src)
			}
		}
	}
}
