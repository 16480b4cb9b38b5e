package jsonv

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func doc() map[string]any {
	return map[string]any{
		"spec": map[string]any{
			"replicas": int64(3),
			"labels":   map[string]any{"a/b": "x", "t~": "y"},
			"ports":    []any{map[string]any{"name": "http"}},
		},
	}
}

func TestPointer(t *testing.T) {
	if got := Pointer([]Token{"spec", "labels", "a/b", 0, "t~"}); got != "/spec/labels/a~1b/0/t~0" {
		t.Errorf("Pointer = %q", got)
	}
	toks, err := SplitPointer("/spec/labels/a~1b/t~0")
	if err != nil || len(toks) != 4 || toks[2] != "a/b" || toks[3] != "t~" {
		t.Errorf("SplitPointer = %v, %v", toks, err)
	}
	if _, err := SplitPointer("spec"); err == nil {
		t.Error("pointer without leading slash accepted")
	}
}

func TestGetSetRemove(t *testing.T) {
	tests := []struct {
		name string
		op   func(d map[string]any) error
		want string
	}{
		{"set existing", func(d map[string]any) error { return Set(d, "/spec/replicas", int64(5)) },
			`{"spec":{"labels":{"a/b":"x","t~":"y"},"ports":[{"name":"http"}],"replicas":5}}`},
		{"set creates objects", func(d map[string]any) error { return Set(d, "/spec/tls/enabled", true) },
			`{"spec":{"labels":{"a/b":"x","t~":"y"},"ports":[{"name":"http"}],"replicas":3,"tls":{"enabled":true}}}`},
		{"set creates list", func(d map[string]any) error { return Set(d, "/spec/args/0", "x") },
			`{"spec":{"args":["x"],"labels":{"a/b":"x","t~":"y"},"ports":[{"name":"http"}],"replicas":3}}`},
		{"append", func(d map[string]any) error { return Set(d, "/spec/ports/-", map[string]any{"name": "tls"}) },
			`{"spec":{"labels":{"a/b":"x","t~":"y"},"ports":[{"name":"http"},{"name":"tls"}],"replicas":3}}`},
		{"set escaped key", func(d map[string]any) error { return Set(d, "/spec/labels/a~1b", "z") },
			`{"spec":{"labels":{"a/b":"z","t~":"y"},"ports":[{"name":"http"}],"replicas":3}}`},
		{"remove key", func(d map[string]any) error { return Remove(d, "/spec/labels/t~0") },
			`{"spec":{"labels":{"a/b":"x"},"ports":[{"name":"http"}],"replicas":3}}`},
		{"remove element", func(d map[string]any) error { return Remove(d, "/spec/ports/0") },
			`{"spec":{"labels":{"a/b":"x","t~":"y"},"ports":[],"replicas":3}}`},
		{"remove missing", func(d map[string]any) error { return Remove(d, "/spec/nothing/here") },
			`{"spec":{"labels":{"a/b":"x","t~":"y"},"ports":[{"name":"http"}],"replicas":3}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc()
			if err := tt.op(d); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(d)
			if string(b) != tt.want {
				t.Errorf("got %s\nwant %s", b, tt.want)
			}
		})
	}
	d := doc()
	if err := Set(d, "/spec/ports/5", "x"); err == nil {
		t.Error("out-of-range index accepted")
	}
	if err := Set(d, "/spec/replicas/x", 1); err == nil {
		t.Error("descending into a number accepted")
	}
	if v, ok := Get(d, "/spec/ports/0/name"); !ok || v != "http" {
		t.Errorf("Get = %v, %v", v, ok)
	}
	if _, ok := Get(d, "/spec/ports/9"); ok {
		t.Error("Get out of range found a value")
	}
}

func TestSetCopies(t *testing.T) {
	d := doc()
	v := map[string]any{"k": "v"}
	if err := Set(d, "/spec/extra", v); err != nil {
		t.Fatal(err)
	}
	v["k"] = "changed"
	if got, _ := Get(d, "/spec/extra/k"); got != "v" {
		t.Error("Set kept a reference to the caller's value")
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{int64(3), float64(3), true},
		{int64(3), 3, true},
		{int64(3), "3", false},
		{nil, nil, true},
		{map[string]any{"a": []any{int64(1)}}, map[string]any{"a": []any{1.0}}, true},
		{map[string]any{"a": 1}, map[string]any{"b": 1}, false},
		{[]any{1, 2}, []any{1}, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}

func TestDiff(t *testing.T) {
	a := doc()
	b := doc()
	_ = Set(b, "/spec/replicas", int64(4))
	_ = Remove(b, "/spec/labels/t~0")
	_ = Set(b, "/spec/ports/-", map[string]any{"name": "tls"})
	_ = Set(b, "/spec/new", "x")
	edits := Diff(a, b)
	var got []string
	for _, e := range edits {
		got = append(got, string(e.Op)+" "+Pointer(e.Tokens))
	}
	want := []string{"remove /spec/labels/t~0", "set /spec/new", "set /spec/ports", "set /spec/replicas"}
	if len(got) != len(want) {
		t.Fatalf("Diff = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("edit %d = %s, want %s", i, got[i], want[i])
		}
	}
	if len(Diff(a, doc())) != 0 {
		t.Error("equal documents differ")
	}
}

func TestAsInt(t *testing.T) {
	for _, v := range []any{int64(3), 3, int32(3), 3.0, json.Number("3")} {
		if n, ok := AsInt(v); !ok || n != 3 {
			t.Errorf("AsInt(%#v) = %d, %v; want 3, true", v, n, ok)
		}
	}
	for _, v := range []any{3.5, json.Number("3.5"), "3", nil} {
		if _, ok := AsInt(v); ok {
			t.Errorf("AsInt(%#v) is ok, want not an integer", v)
		}
	}
}

func TestNormalize(t *testing.T) {
	v := map[string]any{"i": json.Number("3"), "f": json.Number("1.5"), "l": []any{json.Number("-2"), "s", map[string]any{"n": json.Number("1e3")}}}
	want := map[string]any{"i": int64(3), "f": 1.5, "l": []any{int64(-2), "s", map[string]any{"n": 1000.0}}}
	if got := Normalize(v); !reflect.DeepEqual(got, want) {
		t.Errorf("Normalize = %#v, want %#v", got, want)
	}
	if got := Normalize(json.Number("7")); got != int64(7) {
		t.Errorf("Normalize(7) = %#v", got)
	}
}

func TestMapStrings(t *testing.T) {
	v := map[string]any{"ns-a": []any{"in ns-a", int64(1), map[string]any{"k": "ns-a/x"}}}
	got := MapStrings(v, func(s string) string { return strings.ReplaceAll(s, "ns-a", "ns-b") })
	want := map[string]any{"ns-b": []any{"in ns-b", int64(1), map[string]any{"k": "ns-b/x"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MapStrings = %#v, want %#v", got, want)
	}
	if _, ok := v["ns-a"]; !ok {
		t.Error("MapStrings changed its input")
	}
}
