// Package jsonv manipulates JSON-like values (map[string]any, []any, string, int64, float64, bool,
// nil) as held by unstructured Kubernetes objects: deep copies, number-aware equality, JSON pointer
// access and structural diffs.
package jsonv

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-openapi/jsonpointer"
)

// Map returns a copy of a JSON-like value, its maps and lists rebuilt, with
// every map key passed through key and every other value through leaf (a nil
// function keeps what it would change).
func Map(v any, key func(string) string, leaf func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if key != nil {
				k = key(k)
			}
			out[k] = Map(e, key, leaf)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Map(e, key, leaf)
		}
		return out
	}
	if leaf == nil {
		return v
	}
	return leaf(v)
}

// MapStrings returns a copy of a JSON-like value with f applied to every map
// key and every string.
func MapStrings(v any, f func(string) string) any {
	return Map(v, f, func(l any) any {
		if s, ok := l.(string); ok {
			return f(s)
		}
		return l
	})
}

// Normalize returns a copy of a value decoded with UseNumber whose json.Numbers
// are int64 (or float64 when not integral).
func Normalize(v any) any {
	return Map(v, nil, func(l any) any {
		n, ok := l.(json.Number)
		if !ok {
			return l
		}
		if i, err := n.Int64(); err == nil {
			return i
		}
		f, _ := n.Float64()
		return f
	})
}

// Copy deep-copies a JSON-like value. Numbers of other Go types are normalised to int64/float64.
func Copy(v any) any { return Map(v, nil, copyLeaf) }

func copyLeaf(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case nil, string, bool, int64, float64, json.Number:
		return v
	}
	// Typed maps, slices and structs built in Go: through JSON.
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer:
		b, err := json.Marshal(v)
		if err != nil {
			return v
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			return v
		}
		return out
	}
	return v
}

// CopyMap deep-copies an object.
func CopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Copy(m).(map[string]any)
}

// AsFloat returns a number of any Go numeric type (or a json.Number) as float64.
func AsFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// AsInt returns an integral number as int64.
func AsInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	}
	return 0, false
}

// Equal compares JSON-like values; numbers compare by value whatever their Go type.
func Equal(a, b any) bool { return EqualWith(a, b, equalLeaf) }

// EqualWith compares maps key by key and lists element by element, and everything
// else (scalars, or a structure against a scalar) with leaf.
func EqualWith(a, b any, leaf func(a, b any) bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !EqualWith(v, w, leaf) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualWith(x[i], y[i], leaf) {
				return false
			}
		}
		return true
	}
	return leaf(a, b)
}

func equalLeaf(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	if fa, ok := AsFloat(a); ok {
		fb, ok := AsFloat(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// Token is one step of a concrete path: a string (object key) or an int (list index).
type Token = any

// Pointer renders tokens as an RFC 6901 JSON pointer (escaped by
// github.com/go-openapi/jsonpointer).
func Pointer(tokens []Token) string {
	if len(tokens) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		switch x := t.(type) {
		case int:
			b.WriteString(strconv.Itoa(x))
		case string:
			b.WriteString(jsonpointer.Escape(x))
		default:
			fmt.Fprint(&b, x)
		}
	}
	return b.String()
}

// SplitPointer splits an RFC 6901 pointer into unescaped reference tokens (all
// strings), by github.com/go-openapi/jsonpointer.
func SplitPointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	p, err := jsonpointer.New(ptr)
	if err != nil {
		return nil, fmt.Errorf("JSON pointer %q must start with '/': %w", ptr, err)
	}
	return p.DecodedTokens(), nil
}

// Get returns the value at ptr in doc.
func Get(doc any, ptr string) (any, bool) {
	toks, err := SplitPointer(ptr)
	if err != nil {
		return nil, false
	}
	cur := doc
	for _, t := range toks {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Set stores a copy of value at ptr in doc, creating missing objects (and a list when the missing
// container's next token is "0" or "-"). An index equal to a list's length (or "-") appends.
func Set(doc map[string]any, ptr string, value any) error {
	toks, err := SplitPointer(ptr)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return fmt.Errorf("cannot replace the whole object through a change: give a path")
	}
	_, err = set(doc, toks, value)
	return err
}

func set(cur any, toks []string, value any) (any, error) {
	t := toks[0]
	last := len(toks) == 1
	switch c := cur.(type) {
	case map[string]any:
		if last {
			c[t] = Copy(value)
			return c, nil
		}
		next, ok := c[t]
		if !ok || next == nil {
			if toks[1] == "0" || toks[1] == "-" {
				next = []any{}
			} else {
				next = map[string]any{}
			}
		}
		nv, err := set(next, toks[1:], value)
		if err != nil {
			return nil, err
		}
		c[t] = nv
		return c, nil
	case []any:
		i := len(c)
		if t != "-" {
			var err error
			i, err = strconv.Atoi(t)
			if err != nil || i < 0 || i > len(c) {
				return nil, fmt.Errorf("list index %q out of range [0,%d]", t, len(c))
			}
		}
		if i == len(c) {
			var zero any
			if !last {
				if toks[1] == "0" || toks[1] == "-" {
					zero = []any{}
				} else {
					zero = map[string]any{}
				}
			}
			c = append(c, zero)
		}
		if last {
			c[i] = Copy(value)
			return c, nil
		}
		nv, err := set(c[i], toks[1:], value)
		if err != nil {
			return nil, err
		}
		c[i] = nv
		return c, nil
	default:
		return nil, fmt.Errorf("cannot descend into %T at %q", cur, t)
	}
}

// Remove deletes the value at ptr; a missing value is not an error.
func Remove(doc map[string]any, ptr string) error {
	toks, err := SplitPointer(ptr)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return fmt.Errorf("cannot remove the whole object")
	}
	parentPtr := Pointer(stringsToTokens(toks[:len(toks)-1]))
	var parent any = doc
	if parentPtr != "" {
		p, ok := Get(doc, parentPtr)
		if !ok {
			return nil
		}
		parent = p
	}
	t := toks[len(toks)-1]
	switch c := parent.(type) {
	case map[string]any:
		delete(c, t)
	case []any:
		i, err := strconv.Atoi(t)
		if err != nil || i < 0 || i >= len(c) {
			return nil
		}
		nl := append(append([]any{}, c[:i]...), c[i+1:]...)
		if parentPtr == "" {
			return fmt.Errorf("root is not a list")
		}
		return Set(doc, parentPtr, nl)
	}
	return nil
}

func stringsToTokens(s []string) []Token {
	out := make([]Token, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}
