package jsonv

import "sort"

// Lists says how DiffWith compares two lists (that are not matched by key).
type Lists uint8

// List comparisons.
const (
	// ListsByIndex compares elements by position; elements past the shorter
	// list are added or removed.
	ListsByIndex Lists = iota
	// ListsSameLength compares elements by position when the lists have the
	// same length, and replaces the whole list otherwise.
	ListsSameLength
	// ListsWhole compares a list as one value.
	ListsWhole
)

// DiffOptions tune DiffWith.
type DiffOptions struct {
	// ListKeys are fields (e.g. "name", "type") by which two lists whose
	// elements all are maps with a unique non-empty string under the field are
	// matched element by element; the first field both lists carry wins.
	// Elements keep their own index in the paths: A's for a change or a
	// removal, B's for an addition.
	ListKeys []string
	// Lists says how other lists are compared.
	Lists Lists
}

// Change is one difference between two values: the value at Path in A and in
// B. A value present on one side only is reported once, at its own path, with
// its whole sub-tree.
type Change struct {
	Path     Path
	A, B     any
	InA, InB bool // whether the path exists in A, in B
}

// DiffWith lists the differences between a and b in document order (map keys
// sorted, list elements in order). Maps are compared key by key, lists as o
// says, everything else by value (numbers whatever their Go type, see Equal).
func DiffWith(a, b any, o DiffOptions) []Change {
	var out []Change
	diffWith(nil, a, b, o, &out)
	return out
}

func diffWith(at Path, a, b any, o DiffOptions, out *[]Change) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
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
				diffWith(at.Child(k), av, bv, o, out)
			case aok:
				*out = append(*out, Change{Path: at.Child(k), A: av, InA: true})
			default:
				*out = append(*out, Change{Path: at.Child(k), B: bv, InB: true})
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		if key := listKey(x, y, o.ListKeys); key != "" {
			diffKeyedLists(at, x, y, key, o, out)
			return
		}
		switch {
		case o.Lists == ListsWhole, o.Lists == ListsSameLength && len(x) != len(y):
			// compared whole below
		default:
			for i := 0; i < len(x) || i < len(y); i++ {
				switch {
				case i < len(x) && i < len(y):
					diffWith(at.Item(i), x[i], y[i], o, out)
				case i < len(x):
					*out = append(*out, Change{Path: at.Item(i), A: x[i], InA: true})
				default:
					*out = append(*out, Change{Path: at.Item(i), B: y[i], InB: true})
				}
			}
			return
		}
	}
	if !Equal(a, b) {
		*out = append(*out, Change{Path: at, A: a, B: b, InA: true, InB: true})
	}
}

// listKey returns the first of keys under which every element of both lists is
// a map with a unique non-empty string.
func listKey(a, b []any, keys []string) string {
	for _, key := range keys {
		if uniqueKeyed(a, key) && uniqueKeyed(b, key) {
			return key
		}
	}
	return ""
}

func uniqueKeyed(l []any, key string) bool {
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

func diffKeyedLists(at Path, a, b []any, key string, o DiffOptions, out *[]Change) {
	bi := make(map[string]int, len(b))
	for i, e := range b {
		bi[e.(map[string]any)[key].(string)] = i
	}
	matched := make([]bool, len(b))
	for i, e := range a {
		k := e.(map[string]any)[key].(string)
		j, ok := bi[k]
		if !ok {
			*out = append(*out, Change{Path: at.Item(i), A: e, InA: true})
			continue
		}
		matched[j] = true
		diffWith(at.Item(i), e, b[j], o, out)
	}
	for j, e := range b {
		if !matched[j] {
			*out = append(*out, Change{Path: at.Item(j), B: e, InB: true})
		}
	}
}

// Op names a diff operation.
type Op string

// Diff operations.
const (
	OpSet    Op = "set"
	OpRemove Op = "remove"
)

// Edit is one difference between two documents, as pointer tokens.
type Edit struct {
	Op     Op
	Tokens []Token
	Value  any
	Old    any
	HadOld bool
}

// Diff lists the edits that turn a into b: objects are compared key by key
// (sorted), lists of equal length element by element, anything else is
// replaced whole (DiffWith with ListsSameLength).
func Diff(a, b map[string]any) []Edit {
	var out []Edit
	for _, c := range DiffWith(a, b, DiffOptions{Lists: ListsSameLength}) {
		toks, _ := c.Path.Tokens()
		switch {
		case !c.InB:
			out = append(out, Edit{Op: OpRemove, Tokens: toks, Old: c.A, HadOld: true})
		case !c.InA:
			out = append(out, Edit{Op: OpSet, Tokens: toks, Value: c.B})
		default:
			out = append(out, Edit{Op: OpSet, Tokens: toks, Value: c.B, Old: c.A, HadOld: true})
		}
	}
	return out
}
