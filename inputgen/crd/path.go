package crd

import (
	"fmt"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// SegmentKind tells what a path segment steps into; the kinds are jsonv's.
type SegmentKind = jsonv.SegKind

const (
	// Field steps into a named property of an object (the segment's Key).
	Field = jsonv.SegKey
	// Item steps into the elements of an array (written "[*]").
	Item = jsonv.SegAnyIndex
	// Value steps into the values of a map, i.e. additionalProperties (written "{*}").
	Value = jsonv.SegAnyKey
)

// Path locates a property in a schema: field names, "[*]" for array items and "{*}" for map values.
// It is a jsonv.Path made of those three kinds of segment only (ParsePath checks it), so its text
// form, matching (jsonv.Match, jsonv.Expand) and JSON encoding are jsonv's:
// "spec.tolerations[*].key", "spec.nodeSelector{*}", and a field name that is not a plain name
// quoted in brackets: spec.config["net.port"]. Extend one with Child, AnyIndex and AnyKey.
type Path = jsonv.Path

// ParsePath parses a schema path in jsonv's text form (a JSON pointer is read too); a segment that
// is not a field name, [*] or {*} (or "*") — a list index, a glob, "**", a selector — is an error.
func ParsePath(s string) (Path, error) {
	jp, err := jsonv.ParsePath(s)
	if err != nil {
		return nil, err
	}
	for i, seg := range jp {
		switch {
		case seg.Kind == jsonv.SegKey && !seg.Glob, seg.Kind == jsonv.SegAnyIndex, seg.Kind == jsonv.SegAnyKey:
		default:
			return nil, fmt.Errorf("schema path %q: segment %d (%s) is not a field name, [*] or {*} (a schema path names no list index, glob or selector)", s, i+1, jsonv.Path{seg})
		}
	}
	return jp, nil
}
