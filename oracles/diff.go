package oracles

import (
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Change is one difference between two objects: the value at Path in A and in B
// (nil where the field is absent). A field present on one side only is reported
// once, at its own path, with the whole sub-tree as its value.
type Change struct {
	Path string `json:"path"`
	A    any    `json:"a,omitempty"`
	B    any    `json:"b,omitempty"`
}

// Diff returns the differences between a and b after masking (see Mask), sorted
// in document order (map keys sorted, list elements in order). Maps are compared key by key; lists whose elements all carry a unique
// "name" (containers, volumes, env, ports) or "type" (conditions) are compared
// element by element by that key, other lists by index. Numbers compare by value.
// A nil object is empty; when a mask covers a whole object, it has no differences.
func Diff(a, b model.Object, masks []string) []Change {
	rules := compileMasks(masks)
	if a != nil && wholeMasked(a, rules) || b != nil && wholeMasked(b, rules) {
		return nil
	}
	return diffObjects(applyMasks(a, rules), applyMasks(b, rules))
}

// diffObjects diffs two already masked objects (jsonv.DiffWith: lists matched
// by "name" or "type" where every element has a unique one, else by index).
func diffObjects(a, b map[string]any) []Change {
	if a == nil {
		a = map[string]any{}
	}
	if b == nil {
		b = map[string]any{}
	}
	var out []Change
	for _, c := range jsonv.DiffWith(a, b, jsonv.DiffOptions{ListKeys: []string{"name", "type"}}) {
		out = append(out, Change{Path: c.Path.String(), A: c.A, B: c.B})
	}
	return out
}
