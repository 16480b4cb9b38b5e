package oracles

import (
	"fmt"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"path"
	"strconv"
	"strings"
)

// Field paths.
//
// A field path locates a value inside an object. Its string form is dotted, with
// list indices in brackets and map keys that are not plain identifiers quoted:
//
//	spec.template.spec.containers[0].image
//	metadata.labels["app.kubernetes.io/name"]
//	data["valkey.conf"]
//
// Patterns (masks, skips, mappings, Step.Changed) may also use:
//
//	[*]    any list index
//	* {*}  any map key (one segment)
//	a*b    a map key matching a glob (path.Match syntax)
//	**     any number of segments, including none
//
// An RFC 6901 JSON pointer ("/spec/replicas", "/spec/tolerations/0") is accepted
// wherever a path is read; numeric pointer tokens address list elements.

type segKind uint8

const (
	segField    segKind = iota // a map key (name); a glob when glob is set
	segIndex                   // a list index (index)
	segAnyIndex                // [*]
	segAnyKey                  // * or {*}
	segDeep                    // **
)

type segment struct {
	kind  segKind
	name  string
	index int
	glob  bool
}

type fieldPath []segment

// parsePath reads a dotted path, a pattern or a JSON pointer. The empty string is
// the root.
func parsePath(s string) (fieldPath, error) {
	if strings.HasPrefix(s, "/") {
		return parsePointer(s), nil
	}
	var p fieldPath
	i := 0
	for i < len(s) {
		switch {
		case s[i] == '.':
			if i == 0 || i == len(s)-1 || s[i+1] == '.' {
				return nil, fmt.Errorf("path %q: empty field name at offset %d (write keys with dots as [\"a.b\"])", s, i)
			}
			i++
		case strings.HasPrefix(s[i:], "[*]"):
			p = append(p, segment{kind: segAnyIndex})
			i += 3
		case strings.HasPrefix(s[i:], "{*}"):
			p = append(p, segment{kind: segAnyKey})
			i += 3
		case strings.HasPrefix(s[i:], "[\""):
			q, err := strconv.QuotedPrefix(s[i+1:])
			if err != nil {
				return nil, fmt.Errorf("path %q: bad quoted key at offset %d: %w", s, i, err)
			}
			name, err := strconv.Unquote(q)
			if err != nil {
				return nil, fmt.Errorf("path %q: bad quoted key at offset %d: %w", s, i, err)
			}
			i += 1 + len(q)
			if i >= len(s) || s[i] != ']' {
				return nil, fmt.Errorf("path %q: quoted key must end with \"] at offset %d", s, i)
			}
			i++
			p = append(p, segment{kind: segField, name: name})
		case s[i] == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("path %q: unclosed [ at offset %d", s, i)
			}
			n, err := strconv.Atoi(s[i+1 : i+j])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: list index %q at offset %d is not a non-negative integer, [*] or a quoted key", s, s[i+1:i+j], i)
			}
			p = append(p, segment{kind: segIndex, index: n})
			i += j + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' && s[j] != '{' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("path %q: unexpected %q at offset %d", s, s[i], i)
			}
			name := s[i:j]
			switch {
			case name == "**":
				p = append(p, segment{kind: segDeep})
			case name == "*":
				p = append(p, segment{kind: segAnyKey})
			case strings.ContainsAny(name, "*?"):
				if _, err := path.Match(name, ""); err != nil {
					return nil, fmt.Errorf("path %q: bad glob %q: %w", s, name, err)
				}
				p = append(p, segment{kind: segField, name: name, glob: true})
			default:
				p = append(p, segment{kind: segField, name: name})
			}
			i = j
		}
	}
	return p, nil
}

func parsePointer(s string) fieldPath {
	if s == "/" {
		return fieldPath{segment{kind: segField, name: ""}}
	}
	toks := strings.Split(s[1:], "/")
	p := make(fieldPath, 0, len(toks))
	for _, t := range toks {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		p = append(p, segment{kind: segField, name: t})
	}
	return p
}

// mustPath parses a path known to be valid (built-in tables).
func mustPath(s string) fieldPath {
	p, err := parsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// needsQuote: the one quoting rule of dotted paths, shared with the campaign.
func needsQuote(name string) bool { return jsonv.KeyNeedsQuote(name) }

// String renders the path in its dotted form.
func (p fieldPath) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s.kind {
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case segAnyIndex:
			b.WriteString("[*]")
		case segAnyKey:
			b.WriteString("{*}")
		case segDeep:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString("**")
		default:
			if !s.glob && needsQuote(s.name) {
				b.WriteString("[")
				b.WriteString(strconv.Quote(s.name))
				b.WriteString("]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

func (p fieldPath) child(name string) fieldPath {
	out := make(fieldPath, len(p), len(p)+1)
	copy(out, p)
	return append(out, segment{kind: segField, name: name})
}

func (p fieldPath) item(i int) fieldPath {
	out := make(fieldPath, len(p), len(p)+1)
	copy(out, p)
	return append(out, segment{kind: segIndex, index: i})
}

// generalized replaces list indices by [*].
func (p fieldPath) generalized() fieldPath {
	out := make(fieldPath, len(p))
	for i, s := range p {
		if s.kind == segIndex {
			s = segment{kind: segAnyIndex}
		}
		out[i] = s
	}
	return out
}

// lastField is the last map key of the path ("" if none).
func (p fieldPath) lastField() string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].kind == segField {
			return p[i].name
		}
	}
	return ""
}

// fields lists the map keys of the path, in order.
func (p fieldPath) fields() []string {
	var out []string
	for _, s := range p {
		if s.kind == segField {
			out = append(out, s.name)
		}
	}
	return out
}

// GeneralizePath replaces the list indices of a dotted path by [*]
// ("spec.containers[0].image" → "spec.containers[*].image"), as signatures and
// learned masks use them. A path that does not parse is returned unchanged.
func GeneralizePath(p string) string {
	fp, err := parsePath(p)
	if err != nil {
		return p
	}
	return fp.generalized().String()
}

// segMatchesKey reports whether a pattern segment matches map key k.
func segMatchesKey(s segment, k string) bool {
	switch s.kind {
	case segAnyKey:
		return true
	case segField:
		if s.glob {
			ok, _ := path.Match(s.name, k)
			return ok
		}
		return s.name == k
	}
	return false
}

// segMatchesIndex reports whether a pattern segment matches list index i.
func segMatchesIndex(s segment, i int) bool {
	switch s.kind {
	case segAnyIndex:
		return true
	case segIndex:
		return s.index == i
	case segField:
		// JSON pointer tokens address list elements by number.
		return !s.glob && s.name == strconv.Itoa(i)
	}
	return false
}

// segMatches reports whether pattern segment ps matches concrete segment cs.
func segMatches(ps, cs segment) bool {
	switch cs.kind {
	case segField:
		return segMatchesKey(ps, cs.name)
	case segIndex:
		return segMatchesIndex(ps, cs.index)
	case segAnyIndex:
		return ps.kind == segAnyIndex
	case segAnyKey:
		return ps.kind == segAnyKey
	}
	return false
}

// matchPath reports whether pattern pat matches the concrete path c; with prefix
// set, matching a prefix of c is enough (a pattern covers the subtree below it).
func matchPath(pat, c fieldPath, prefix bool) bool {
	if len(pat) == 0 {
		return prefix || len(c) == 0
	}
	if pat[0].kind == segDeep {
		for i := 0; i <= len(c); i++ {
			if matchPath(pat[1:], c[i:], prefix) {
				return true
			}
		}
		return false
	}
	if len(c) == 0 || !segMatches(pat[0], c[0]) {
		return false
	}
	return matchPath(pat[1:], c[1:], prefix)
}

// getPath returns the value at a concrete path (pointer tokens may address list
// elements).
func getPath(v any, p fieldPath) (any, bool) {
	for _, s := range p {
		switch n := v.(type) {
		case map[string]any:
			if s.kind != segField {
				return nil, false
			}
			c, ok := n[s.name]
			if !ok {
				return nil, false
			}
			v = c
		case []any:
			i := -1
			switch s.kind {
			case segIndex:
				i = s.index
			case segField:
				if k, err := strconv.Atoi(s.name); err == nil {
					i = k
				}
			}
			if i < 0 || i >= len(n) {
				return nil, false
			}
			v = n[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// expandPath returns the concrete paths in v that pattern pat matches exactly,
// with pointer tokens resolved against the value's shape.
func expandPath(v any, pat fieldPath) []fieldPath {
	var out []fieldPath
	var walk func(v any, pat fieldPath, at fieldPath)
	walk = func(v any, pat fieldPath, at fieldPath) {
		if len(pat) == 0 {
			out = append(out, at)
			return
		}
		s := pat[0]
		if s.kind == segDeep {
			walk(v, pat[1:], at)
			forEachChild(v, func(c any, seg segment) { walk(c, pat, append(at[:len(at):len(at)], seg)) })
			return
		}
		switch n := v.(type) {
		case map[string]any:
			if s.kind == segField && !s.glob {
				if c, ok := n[s.name]; ok {
					walk(c, pat[1:], at.child(s.name))
				}
				return
			}
			for _, k := range sortedKeys(n) {
				if segMatchesKey(s, k) {
					walk(n[k], pat[1:], at.child(k))
				}
			}
		case []any:
			for i, c := range n {
				if segMatchesIndex(s, i) {
					walk(c, pat[1:], at.item(i))
				}
			}
		}
	}
	walk(v, pat, nil)
	return out
}

// forEachChild calls fn for every direct child of a map or list, in a stable order.
func forEachChild(v any, fn func(c any, seg segment)) {
	switch n := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(n) {
			fn(n[k], segment{kind: segField, name: k})
		}
	case []any:
		for i, c := range n {
			fn(c, segment{kind: segIndex, index: i})
		}
	}
}
