package crd

import (
	"encoding/json"
	"fmt"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// SegmentKind tells what a path segment steps into; the kinds are jsonv's.
type SegmentKind = jsonv.SegKind

const (
	// Field steps into a named property of an object.
	Field = jsonv.SegKey
	// Item steps into the elements of an array (written "[*]").
	Item = jsonv.SegAnyIndex
	// Value steps into the values of a map, i.e. additionalProperties (written "{*}").
	Value = jsonv.SegAnyKey
)

// Segment is one step of a schema path.
type Segment struct {
	Kind SegmentKind
	Name string // set for Field segments only
}

// Path locates a property in a schema: field names, "[*]" for array items and "{*}" for map values.
// It is a jsonv.Path restricted to those three kinds of segment, kept as a comparable slice of
// small values; its text form is jsonv's (see JSON): "spec.tolerations[*].key",
// "spec.nodeSelector{*}", and a field name that is not a plain name quoted in brackets:
// spec.config["net.port"].
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
func (p Path) Last() string { return p.JSON().LastKey() }

// JSON is the path as a jsonv pattern: it matches the concrete paths of every value the
// property stands for (jsonv.Match, jsonv.Expand).
func (p Path) JSON() jsonv.Path {
	out := make(jsonv.Path, len(p))
	for i, s := range p {
		out[i] = jsonv.Segment{Kind: s.Kind, Key: s.Name}
	}
	return out
}

// FromJSON converts a jsonv path made of map keys, "[*]" and "{*}" (or "*") to a schema path;
// any other segment (a list index, a glob, "**", a selector) is an error.
func FromJSON(jp jsonv.Path) (Path, error) {
	out := make(Path, len(jp))
	for i, s := range jp {
		switch {
		case s.Kind == jsonv.SegKey && !s.Glob:
			out[i] = Segment{Kind: Field, Name: s.Key}
		case s.Kind == jsonv.SegAnyIndex, s.Kind == jsonv.SegAnyKey:
			out[i] = Segment{Kind: s.Kind}
		default:
			return nil, fmt.Errorf("schema path %q: segment %d (%s) is not a field name, [*] or {*} (a schema path names no list index, glob or selector)", jp, i+1, jsonv.Path{s})
		}
	}
	return out, nil
}

// String renders the path in its dotted form.
func (p Path) String() string { return p.JSON().String() }

// ParsePath parses the dotted form produced by Path.String.
func ParsePath(s string) (Path, error) {
	jp, err := jsonv.ParsePath(s)
	if err != nil {
		return nil, err
	}
	return FromJSON(jp)
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
