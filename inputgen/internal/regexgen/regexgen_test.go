package regexgen

import (
	"errors"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

func TestSampleMatches(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		opts    Options
	}{
		{"quantity", `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`, Options{}},
		{"dns label", `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, Options{MaxLen: 63}},
		{"dns subdomain", `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`, Options{MaxLen: 253}},
		{"qualified name", `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`, Options{}},
		{"prometheus duration", `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`, Options{}},
		{"bandwidth", `^[0-9]+([KMG]i?)?B/s$`, Options{}},
		{"cassandra version", `(6\.8\.\d+)|(3\.11\.\d+)|(4\.0\.\d+)`, Options{}},
		{"word", `^\w+$`, Options{}},
		{"path", `^\/[a-z0-9]+$`, Options{}},
		{"bounded repeat", `^[a-z0-9]{1,11}$`, Options{}},
		{"unanchored", `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, Options{}},
		{"case folding", `(?i)^abc[x-z]$`, Options{}},
		{"negated class", `^[^/:]+$`, Options{}},
		{"any char", `^a.b$`, Options{}},
		{"min length", `^[a-z]+$`, Options{MinLen: 12}},
		{"exact length", `^[a-z]+$`, Options{MinLen: 5, MaxLen: 5}},
		{"unicode class", `^\p{Greek}+$`, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			distinct := map[string]bool{}
			for i := 0; i < 50; i++ {
				v, err := s.Sample(r, tt.opts)
				if err != nil {
					t.Fatalf("draw %d: %v", i, err)
				}
				if !s.Match(v) {
					t.Fatalf("%q does not match %s", v, tt.pattern)
				}
				n := utf8.RuneCountInString(v)
				if n < tt.opts.MinLen || (tt.opts.MaxLen > 0 && n > tt.opts.MaxLen) {
					t.Fatalf("%q has length %d outside [%d,%d]", v, n, tt.opts.MinLen, tt.opts.MaxLen)
				}
				distinct[v] = true
			}
			if len(distinct) < 2 && tt.name != "case folding" {
				t.Errorf("50 draws gave %d distinct values", len(distinct))
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	s, err := New(`^[a-z]{3}-[0-9]{2,4}$`)
	if err != nil {
		t.Fatal(err)
	}
	draw := func() []string {
		r := rand.New(rand.NewPCG(7, 7))
		var out []string
		for i := 0; i < 10; i++ {
			v, err := s.Sample(r, Options{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	a, b := draw(), draw()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs: %q vs %q", i, a[i], b[i])
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := New(`^(unclosed$`); err == nil {
		t.Error("invalid pattern accepted")
	}
	s, err := New(`^[a-z]{10}$`)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	if _, err := s.Sample(r, Options{MaxLen: 5, Attempts: 8}); !errors.Is(err, ErrNoMatch) {
		t.Errorf("impossible bounds: err = %v, want ErrNoMatch", err)
	}
	empty, err := New(`[^\x00-\x{10FFFF}]`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Sample(r, Options{Attempts: 4}); !errors.Is(err, ErrNoMatch) {
		t.Errorf("empty class: err = %v, want ErrNoMatch", err)
	}
}
