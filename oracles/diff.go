package oracles

import (
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"sort"

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

// diffObjects diffs two already masked objects.
func diffObjects(a, b map[string]any) []Change {
	var out []Change
	if a == nil {
		a = map[string]any{}
	}
	if b == nil {
		b = map[string]any{}
	}
	diffValues(nil, a, b, &out)
	return out
}

func diffValues(at fieldPath, a, b any, out *[]Change) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := sortedKeys(x)
		for _, k := range sortedKeys(y) {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			av, aok := x[k]
			bv, bok := y[k]
			switch {
			case aok && bok:
				diffValues(at.child(k), av, bv, out)
			case aok:
				*out = append(*out, Change{Path: at.child(k).String(), A: av})
			default:
				*out = append(*out, Change{Path: at.child(k).String(), B: bv})
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		if key := listKey(x, y); key != "" {
			diffKeyedLists(at, x, y, key, out)
			return
		}
		for i := 0; i < len(x) || i < len(y); i++ {
			switch {
			case i < len(x) && i < len(y):
				diffValues(at.item(i), x[i], y[i], out)
			case i < len(x):
				*out = append(*out, Change{Path: at.item(i).String(), A: x[i]})
			default:
				*out = append(*out, Change{Path: at.item(i).String(), B: y[i]})
			}
		}
		return
	}
	if !jsonv.Equal(a, b) {
		*out = append(*out, Change{Path: at.String(), A: a, B: b})
	}
}

// listKey returns "name" or "type" when every element of both lists is a map with
// a unique non-empty string under that key.
func listKey(a, b []any) string {
	for _, key := range []string{"name", "type"} {
		if uniqueKeyed(a, key) && uniqueKeyed(b, key) {
			return key
		}
	}
	return ""
}

func uniqueKeyed(l []any, key string) bool {
	if len(l) == 0 {
		return true
	}
	seen := make(map[string]bool, len(l))
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		k, ok := m[key].(string)
		if !ok || k == "" || seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

func diffKeyedLists(at fieldPath, a, b []any, key string, out *[]Change) {
	bi := make(map[string]int, len(b))
	for i, e := range b {
		bi[e.(map[string]any)[key].(string)] = i
	}
	matched := make([]bool, len(b))
	for i, e := range a {
		k := e.(map[string]any)[key].(string)
		j, ok := bi[k]
		if !ok {
			*out = append(*out, Change{Path: at.item(i).String(), A: e})
			continue
		}
		matched[j] = true
		diffValues(at.item(i), e, b[j], out)
	}
	for j, e := range b {
		if !matched[j] {
			*out = append(*out, Change{Path: at.item(j).String(), B: e})
		}
	}
}
