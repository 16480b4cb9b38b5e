package jsonv

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf8"
)

// awkwardKeys are map keys that stress the quoting rule: dots, brackets,
// slashes, quotes of both kinds, backslashes, pattern characters, pointer
// escapes, unicode, control characters and the empty key.
var awkwardKeys = []string{
	"replicas", "app.kubernetes.io/name", "a[0]", "[*]", "{*}", "*", "**", "a*b", "a?", `say "hi"`, "it's",
	`back\slash`, "~0~1", "/", "", " ", "ünïcödé", "日本", "emoji😀", "tab\tnew\nline", "a=b", "]", "[", "'", `"`,
	"name=valkey", "0", "007", "-1", "$", "$.x", ".", "..", "@type", "x:y", "\x00", "\u2028",
}

// randomPath builds a concrete path of keys from awkwardKeys and list indices.
func randomPath(r *rand.Rand) Path {
	p := make(Path, r.IntN(6))
	for i := range p {
		if r.IntN(4) == 0 {
			p[i] = Segment{Kind: SegIndex, Index: r.IntN(12)}
		} else {
			p[i] = Segment{Kind: SegKey, Key: awkwardKeys[r.IntN(len(awkwardKeys))]}
		}
	}
	return p
}

// TestPathRoundTrip: format → parse gives the same concrete path, and format
// → parse → format the same text; the pointer form round-trips too.
func TestPathRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 5000 {
		p := randomPath(r)
		s := p.String()
		q, err := ParsePath(s)
		if err != nil {
			t.Fatalf("ParsePath(%q) (formatted from %#v): %v", s, p, err)
		}
		if len(p) == 0 && len(q) == 0 {
			continue
		}
		if !reflect.DeepEqual(q, p) {
			t.Fatalf("ParsePath(%q) = %#v, want %#v", s, q, p)
		}
		if s2 := q.String(); s2 != s {
			t.Fatalf("format → parse → format: %q became %q", s, s2)
		}
		toks, ok := p.Tokens()
		if !ok {
			t.Fatalf("%q has no pointer tokens", s)
		}
		ptr := Pointer(toks)
		split, err := SplitPointer(ptr)
		if err != nil || len(split) != len(toks) {
			t.Fatalf("SplitPointer(%q) = %q, %v", ptr, split, err)
		}
		for i, tok := range toks {
			if k, isKey := tok.(string); isKey && split[i] != k {
				t.Fatalf("pointer %q token %d = %q, want %q", ptr, i, split[i], k)
			}
		}
	}
}

// TestPatternRoundTrip: patterns keep their meaning through format → parse.
func TestPatternRoundTrip(t *testing.T) {
	for _, s := range []string{"spec.tolerations[*].key", "spec.config{*}", "**.lastTransitionTime", "status.*Time", "a.**",
		`metadata.labels["a.b"].**`, "spec.containers[name=valkey].image", "x[k=v=w]"} {
		p, err := ParsePath(s)
		if err != nil {
			t.Fatalf("ParsePath(%q): %v", s, err)
		}
		q, err := ParsePath(p.String())
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Errorf("%q → %q → %#v, %v; want %#v", s, p.String(), q, err, p)
		}
	}
}

func TestParsePathForms(t *testing.T) {
	cases := []struct {
		in   string
		want Path
	}{
		{`data['a.b']`, KeyPath("data", "a.b")},
		{`x['a]b']`, KeyPath("x", "a]b")},
		{"/spec/a~1b/0", KeyPath("spec", "a/b", "0")},
		{"/", KeyPath("")},
		{"c[name=valkey]", Path{{Kind: SegKey, Key: "c"}, {Kind: SegSelect, Key: "name", Value: "valkey"}}},
		{"c[+1]", Path{{Kind: SegKey, Key: "c"}, {Kind: SegIndex, Index: 1}}},
	}
	for _, c := range cases {
		got, err := ParsePath(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParsePath(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"spec..replicas", "spec.", ".spec", "a[x]", "a[app.kubernetes.io/name]", `a["x"`, `a["x"x]`, "a[-1]", "a[1", "a[]", "a{x}", "a['x", "[=v]", "a[[b]]"} {
		if p, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) = %#v, want an error", bad, p)
		}
	}
}

func TestGetAndExpandWithSelector(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "exporter", "image": "e"},
		map[string]any{"name": "valkey", "image": "v", "ports": []any{int64(6379)}},
	}}}
	if v, ok := GetPath(doc, MustPath("spec.containers[name=valkey].image")); !ok || v != "v" {
		t.Errorf("selector get = %v, %v", v, ok)
	}
	if v, ok := GetPath(doc, MustPath("/spec/containers/1/ports/0")); !ok || v != int64(6379) {
		t.Errorf("pointer get = %v, %v", v, ok)
	}
	if _, ok := GetPath(doc, MustPath("spec.containers[name=sidecar]")); ok {
		t.Error("a selector that matches nothing found a value")
	}
	got := Expand(doc, MustPath("spec.containers[name=valkey].*"))
	var s []string
	for _, p := range got {
		s = append(s, p.String())
	}
	want := []string{"spec.containers[1].image", "spec.containers[1].name", "spec.containers[1].ports"}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Expand = %q, want %q", s, want)
	}
	if !Match(MustPath("spec.**.image"), MustPath("spec.containers[1].image"), false) || Match(MustPath("spec.*.image"), MustPath("spec.containers[1].image"), false) {
		t.Error("Match of ** and * is wrong")
	}
}

// FuzzPathRoundTrip: any key, at any place of a path, survives format →
// parse → format, and so does any path the parser accepts.
func FuzzPathRoundTrip(f *testing.F) {
	for _, k := range awkwardKeys {
		f.Add(k, "spec.x[0]")
	}
	f.Add("a", `metadata.labels["app.kubernetes.io/name"]`)
	f.Add("a", "**.a*b[*]{*}")
	f.Add("a", "/x/~0/~1")
	f.Add("a", "c[name=v]")
	f.Fuzz(func(t *testing.T, key, text string) {
		if utf8.ValidString(key) {
			for _, p := range []Path{KeyPath(key), KeyPath("spec", key, key), {{Kind: SegIndex, Index: 3}, {Kind: SegKey, Key: key}}} {
				s := p.String()
				q, err := ParsePath(s)
				if err != nil {
					t.Fatalf("ParsePath(%q) (key %q): %v", s, key, err)
				}
				if !reflect.DeepEqual(q, p) {
					t.Fatalf("ParsePath(%q) = %#v, want %#v", s, q, p)
				}
			}
		}
		// Whatever parses formats to text that parses to the same path.
		p, err := ParsePath(text)
		if err != nil || len(p) == 0 {
			return
		}
		s := p.String()
		q, err := ParsePath(s)
		if err != nil {
			t.Fatalf("ParsePath(%q) parsed, its format %q does not: %v", text, s, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("ParsePath(%q) = %#v; its format %q parses to %#v", text, p, s, q)
		}
	})
}
