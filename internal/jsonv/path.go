package jsonv

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Field paths.
//
// A field path locates a value inside an object. Its string form is dotted,
// with list indices in brackets and map keys that are not plain names (see
// KeyNeedsQuote) quoted in brackets:
//
//	spec.template.spec.containers[0].image
//	metadata.labels["app.kubernetes.io/name"]
//	data["valkey.conf"]
//
// The parser also reads a key in single quotes (['a.b'], no escapes) and a list
// element chosen by one of its fields ([name=valkey]); anything else in
// brackets is an error.
//
// Patterns (masks, skips, mappings, Step.Changed) may also use:
//
//	[*]    any list index
//	* {*}  any map key (one segment)
//	a*b    a map key matching a glob (path.Match syntax)
//	**     any number of segments, including none
//
// An RFC 6901 JSON pointer ("/spec/replicas", "/spec/tolerations/0") is
// accepted wherever a path is read; its tokens are keys, and numeric ones also
// address list elements.
//
// Formatting then parsing gives the same path back (FuzzPathRoundTrip), for
// any key.

// SegKind is the kind of a path segment.
type SegKind uint8

// Segment kinds.
const (
	SegKey      SegKind = iota // a map key (Key); a glob when Glob is set
	SegIndex                   // a list index (Index)
	SegAnyIndex                // [*]
	SegAnyKey                  // * or {*}
	SegDeep                    // **
	SegSelect                  // [Key=Value]: the list element whose field Key is Value
)

// Segment is one step of a path.
type Segment struct {
	Kind  SegKind
	Key   string // SegKey: the key or glob; SegSelect: the field
	Index int    // SegIndex
	Glob  bool   // SegKey: Key is a glob pattern
	Value string // SegSelect: the field's value
}

// Path is a parsed field path or pattern; the empty path is the root.
type Path []Segment

// KeyPath is the path of nested map keys.
func KeyPath(keys ...string) Path {
	p := make(Path, len(keys))
	for i, k := range keys {
		p[i] = Segment{Kind: SegKey, Key: k}
	}
	return p
}

// ParsePath reads a dotted path, a pattern or a JSON pointer. The empty string
// is the root.
func ParsePath(s string) (Path, error) {
	if strings.HasPrefix(s, "/") {
		toks, err := SplitPointer(s)
		if err != nil {
			return nil, err
		}
		return KeyPath(toks...), nil
	}
	var p Path
	i := 0
	for i < len(s) {
		switch {
		case s[i] == '.':
			if i == 0 || i == len(s)-1 || s[i+1] == '.' {
				return nil, fmt.Errorf("path %q: empty field name at offset %d (write keys with dots as [\"a.b\"])", s, i)
			}
			i++
		case strings.HasPrefix(s[i:], "[*]"):
			p = append(p, Segment{Kind: SegAnyIndex})
			i += 3
		case strings.HasPrefix(s[i:], "{*}"):
			p = append(p, Segment{Kind: SegAnyKey})
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
			p = append(p, Segment{Kind: SegKey, Key: name})
		case strings.HasPrefix(s[i:], "['"):
			j := strings.Index(s[i+2:], "']")
			if j < 0 {
				return nil, fmt.Errorf("path %q: quoted key must end with '] at offset %d", s, i)
			}
			p = append(p, Segment{Kind: SegKey, Key: s[i+2 : i+2+j]})
			i += 2 + j + 2
		case s[i] == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("path %q: unclosed [ at offset %d", s, i)
			}
			inner := s[i+1 : i+j]
			seg, err := bracket(inner)
			if err != nil {
				return nil, fmt.Errorf("path %q: %w at offset %d", s, err, i)
			}
			p = append(p, seg)
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
				p = append(p, Segment{Kind: SegDeep})
			case name == "*":
				p = append(p, Segment{Kind: SegAnyKey})
			case strings.ContainsAny(name, "*?"):
				if _, err := path.Match(name, ""); err != nil {
					return nil, fmt.Errorf("path %q: bad glob %q: %w", s, name, err)
				}
				p = append(p, Segment{Kind: SegKey, Key: name, Glob: true})
			default:
				p = append(p, Segment{Kind: SegKey, Key: name})
			}
			i = j
		}
	}
	return p, nil
}

// bracket reads what stands between [ and ] (not quoted, not *): a list index
// or a selector field=value.
func bracket(inner string) (Segment, error) {
	if inner == "" {
		return Segment{}, fmt.Errorf("empty []")
	}
	if n, err := strconv.Atoi(inner); err == nil {
		if n < 0 {
			return Segment{}, fmt.Errorf("list index %s is negative", inner)
		}
		return Segment{Kind: SegIndex, Index: n}, nil
	}
	if k, v, ok := strings.Cut(inner, "="); ok && k != "" {
		return Segment{Kind: SegSelect, Key: k, Value: v}, nil
	}
	return Segment{}, fmt.Errorf("[%s] is not a list index, [*], a selector [field=value] or a quoted key (write a key in brackets quoted: [%q])", inner, inner)
}

// MustPath parses a path known to be valid (built-in tables); it panics on an
// invalid one.
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String renders the path in its dotted form.
func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s.Kind {
		case SegIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		case SegAnyIndex:
			b.WriteString("[*]")
		case SegAnyKey:
			b.WriteString("{*}")
		case SegSelect:
			b.WriteString("[" + s.Key + "=" + s.Value + "]")
		case SegDeep:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString("**")
		default:
			if !s.Glob && KeyNeedsQuote(s.Key) {
				b.WriteString("[")
				b.WriteString(strconv.Quote(s.Key))
				b.WriteString("]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Key)
		}
	}
	return b.String()
}

// Child is p followed by map key name.
func (p Path) Child(name string) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, Segment{Kind: SegKey, Key: name})
}

// Item is p followed by list index i.
func (p Path) Item(i int) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, Segment{Kind: SegIndex, Index: i})
}

// AnyIndex is p followed by [*] (any list index).
func (p Path) AnyIndex() Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, Segment{Kind: SegAnyIndex})
}

// AnyKey is p followed by {*} (any map key).
func (p Path) AnyKey() Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, Segment{Kind: SegAnyKey})
}

// HasPrefix reports whether q is a prefix of p (or equal to it), segment by
// segment: no pattern matching (see Match for that).
func (p Path) HasPrefix(q Path) bool {
	return len(q) <= len(p) && slices.Equal(p[:len(q)], q)
}

// Join is p followed by q.
func (p Path) Join(q Path) Path {
	return append(append(make(Path, 0, len(p)+len(q)), p...), q...)
}

// Generalized replaces list indices by [*].
func (p Path) Generalized() Path {
	out := make(Path, len(p))
	for i, s := range p {
		if s.Kind == SegIndex {
			s = Segment{Kind: SegAnyIndex}
		}
		out[i] = s
	}
	return out
}

// Last is the last map key of the path ("" if none), skipping indices and
// patterns after it.
func (p Path) Last() string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].Kind == SegKey {
			return p[i].Key
		}
	}
	return ""
}

// MarshalJSON encodes the path as its string form.
func (p Path) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON decodes a path from its string form (anything ParsePath reads).
func (p *Path) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a field path must be a string: %w", err)
	}
	q, err := ParsePath(s)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// Keys lists the map keys of the path, in order.
func (p Path) Keys() []string {
	var out []string
	for _, s := range p {
		if s.Kind == SegKey {
			out = append(out, s.Key)
		}
	}
	return out
}

// Tokens renders a concrete path as pointer tokens: keys as strings, indices
// as ints (see Pointer). Pattern and selector segments have no token and end
// the list, with ok false.
func (p Path) Tokens() (toks []Token, ok bool) {
	toks = make([]Token, 0, len(p))
	for _, s := range p {
		switch s.Kind {
		case SegKey:
			if s.Glob {
				return toks, false
			}
			toks = append(toks, s.Key)
		case SegIndex:
			toks = append(toks, s.Index)
		default:
			return toks, false
		}
	}
	return toks, true
}

// GeneralizePath replaces the list indices of a dotted path by [*]
// ("spec.containers[0].image" → "spec.containers[*].image"), as signatures and
// learned masks use them. A path that does not parse is returned unchanged.
func GeneralizePath(p string) string {
	fp, err := ParsePath(p)
	if err != nil {
		return p
	}
	return fp.Generalized().String()
}

// MatchesKey reports whether pattern segment s matches map key k.
func (s Segment) MatchesKey(k string) bool {
	switch s.Kind {
	case SegAnyKey:
		return true
	case SegKey:
		if s.Glob {
			ok, _ := path.Match(s.Key, k)
			return ok
		}
		return s.Key == k
	}
	return false
}

// MatchesIndex reports whether pattern segment s matches list index i (a
// selector, which needs the element, does not).
func (s Segment) MatchesIndex(i int) bool {
	switch s.Kind {
	case SegAnyIndex:
		return true
	case SegIndex:
		return s.Index == i
	case SegKey:
		// JSON pointer tokens address list elements by number.
		return !s.Glob && s.Key == strconv.Itoa(i)
	}
	return false
}

// matchesElement reports whether pattern segment s matches element e at index i.
func (s Segment) matchesElement(i int, e any) bool {
	if s.Kind == SegSelect {
		m, ok := e.(map[string]any)
		return ok && m[s.Key] != nil && fmt.Sprint(m[s.Key]) == s.Value
	}
	return s.MatchesIndex(i)
}

// Matches reports whether pattern segment s matches concrete segment c.
func (s Segment) Matches(c Segment) bool {
	switch c.Kind {
	case SegKey:
		return s.MatchesKey(c.Key)
	case SegIndex:
		return s.MatchesIndex(c.Index)
	case SegAnyIndex, SegAnyKey:
		return s.Kind == c.Kind
	case SegSelect:
		return s.Kind == SegSelect && s.Key == c.Key && s.Value == c.Value
	}
	return false
}

// Match reports whether pattern pat matches the concrete path c; with prefix
// set, matching a prefix of c is enough (a pattern covers the subtree below it).
func Match(pat, c Path, prefix bool) bool {
	if len(pat) == 0 {
		return prefix || len(c) == 0
	}
	if pat[0].Kind == SegDeep {
		for i := 0; i <= len(c); i++ {
			if Match(pat[1:], c[i:], prefix) {
				return true
			}
		}
		return false
	}
	if len(c) == 0 || !pat[0].Matches(c[0]) {
		return false
	}
	return Match(pat[1:], c[1:], prefix)
}

// GetPath returns the value at a concrete path in v (pointer tokens may address
// list elements, selectors pick the first element that matches).
func GetPath(v any, p Path) (any, bool) {
	for _, s := range p {
		switch n := v.(type) {
		case map[string]any:
			if s.Kind != SegKey {
				return nil, false
			}
			c, ok := n[s.Key]
			if !ok {
				return nil, false
			}
			v = c
		case []any:
			i := -1
			for j, e := range n {
				if s.Kind != SegAnyIndex && s.Kind != SegDeep && s.matchesElement(j, e) {
					i = j
					break
				}
			}
			if i < 0 {
				return nil, false
			}
			v = n[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Expand returns the concrete paths in v that pattern pat matches exactly,
// with pointer tokens and selectors resolved against the value's shape.
func Expand(v any, pat Path) []Path {
	var out []Path
	var walk func(v any, pat Path, at Path)
	walk = func(v any, pat Path, at Path) {
		if len(pat) == 0 {
			out = append(out, at)
			return
		}
		s := pat[0]
		if s.Kind == SegDeep {
			walk(v, pat[1:], at)
			ForEachChild(v, func(c any, seg Segment) { walk(c, pat, append(at[:len(at):len(at)], seg)) })
			return
		}
		switch n := v.(type) {
		case map[string]any:
			if s.Kind == SegKey && !s.Glob {
				if c, ok := n[s.Key]; ok {
					walk(c, pat[1:], at.Child(s.Key))
				}
				return
			}
			for _, k := range SortedKeys(n) {
				if s.MatchesKey(k) {
					walk(n[k], pat[1:], at.Child(k))
				}
			}
		case []any:
			for i, c := range n {
				if s.matchesElement(i, c) {
					walk(c, pat[1:], at.Item(i))
				}
			}
		}
	}
	walk(v, pat, nil)
	return out
}

// ForEachChild calls fn for every direct child of a map (in key order) or list.
func ForEachChild(v any, fn func(c any, seg Segment)) {
	switch n := v.(type) {
	case map[string]any:
		for _, k := range SortedKeys(n) {
			fn(n[k], Segment{Kind: SegKey, Key: k})
		}
	case []any:
		for i, c := range n {
			fn(c, Segment{Kind: SegIndex, Index: i})
		}
	}
}

// SortedKeys returns a map's keys in order.
func SortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// At walks nested maps by keys and returns the value there (nil when a key is
// missing or a value on the way is not a map).
func At(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
