package crd

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SegmentKind tells what a path segment steps into.
type SegmentKind uint8

const (
	// Field steps into a named property of an object.
	Field SegmentKind = iota
	// Item steps into the elements of an array (written "[*]").
	Item
	// Value steps into the values of a map, i.e. additionalProperties (written "{*}").
	Value
)

// Segment is one step of a schema path.
type Segment struct {
	Kind SegmentKind
	Name string // set for Field segments only
}

// Path locates a property in a schema: field names, "[*]" for array items and "{*}" for map values.
// Its string form is dotted, e.g. "spec.tolerations[*].key" or "spec.nodeSelector{*}"; field names
// that contain '.', '[', ']', '{', '}', '"' or spaces are quoted: spec.config["net.port"].
type Path []Segment

// Child returns a copy of p extended with a field segment.
func (p Path) Child(name string) Path { return p.with(Segment{Kind: Field, Name: name}) }

// Items returns a copy of p extended with an array-item segment.
func (p Path) Items() Path { return p.with(Segment{Kind: Item}) }

// Values returns a copy of p extended with a map-value segment.
func (p Path) Values() Path { return p.with(Segment{Kind: Value}) }

func (p Path) with(s Segment) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}

// HasPrefix reports whether q is a prefix of p (or equal to it).
func (p Path) HasPrefix(q Path) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Last returns the name of the last field segment (skipping "[*]" and "{*}"), or "".
func (p Path) Last() string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].Kind == Field {
			return p[i].Name
		}
	}
	return ""
}

func needsQuote(name string) bool {
	if name == "" {
		return true
	}
	return strings.ContainsAny(name, ".[]{}\" \t\n")
}

// String renders the path in its dotted form.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s.Kind {
		case Item:
			b.WriteString("[*]")
		case Value:
			b.WriteString("{*}")
		default:
			if needsQuote(s.Name) {
				b.WriteString("[")
				b.WriteString(strconv.Quote(s.Name))
				b.WriteString("]")
				continue
			}
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Name)
		}
	}
	return b.String()
}

// ParsePath parses the dotted form produced by Path.String.
func ParsePath(s string) (Path, error) {
	var p Path
	i := 0
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "[*]"):
			p = append(p, Segment{Kind: Item})
			i += 3
		case strings.HasPrefix(s[i:], "{*}"):
			p = append(p, Segment{Kind: Value})
			i += 3
		case strings.HasPrefix(s[i:], "[\""):
			q, err := strconv.QuotedPrefix(s[i+1:])
			if err != nil {
				return nil, fmt.Errorf("parse path %q at %d: bad quoted field: %w", s, i, err)
			}
			name, _ := strconv.Unquote(q)
			i += 1 + len(q)
			if i >= len(s) || s[i] != ']' {
				return nil, fmt.Errorf("parse path %q at %d: quoted field must end with ']'", s, i)
			}
			i++
			p = append(p, Segment{Kind: Field, Name: name})
		case s[i] == '.':
			if i == 0 || i == len(s)-1 || s[i+1] == '.' {
				return nil, fmt.Errorf("parse path %q: empty field name at %d", s, i)
			}
			i++
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' && s[j] != '{' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("parse path %q: unexpected %q at %d", s, s[i], i)
			}
			p = append(p, Segment{Kind: Field, Name: s[i:j]})
			i = j
		}
	}
	return p, nil
}

// MarshalJSON encodes the path as its string form.
func (p Path) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON decodes the string form.
func (p *Path) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("path must be a string: %w", err)
	}
	q, err := ParsePath(s)
	if err != nil {
		return err
	}
	*p = q
	return nil
}
