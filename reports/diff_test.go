package reports

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// lcsLen is the length of a longest common subsequence, by the textbook table.
func lcsLen(a, b []string) int {
	l := make([][]int, len(a)+1)
	for i := range l {
		l[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	return l[0][0]
}

// TestDiffLinesMinimal: over random line lists (few distinct lines, so many
// ways to align them), the diff rebuilds both sides and keeps a longest common
// subsequence of lines as unchanged.
func TestDiffLinesMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "b", "c", "  \"key\": 1,", "ünï", "x\ty"}
	gen := func() []string {
		l := make([]string, r.IntN(12))
		for i := range l {
			l[i] = words[r.IntN(len(words))]
		}
		return l
	}
	for range 2000 {
		a, b := gen(), gen()
		d := diffLines(a, b)
		var ga, gb []string
		same := 0
		for _, l := range d {
			switch l.Op {
			case DiffSame:
				ga, gb = append(ga, l.Text), append(gb, l.Text)
				same++
			case DiffExpected:
				ga = append(ga, l.Text)
			case DiffActual:
				gb = append(gb, l.Text)
			}
		}
		if len(ga) != len(a) || len(gb) != len(b) || (len(a) > 0 && !reflect.DeepEqual(ga, a)) || (len(b) > 0 && !reflect.DeepEqual(gb, b)) {
			t.Fatalf("diff of %q and %q = %v does not rebuild the sides", a, b, d)
		}
		if want := lcsLen(a, b); same != want {
			t.Fatalf("diff of %q and %q keeps %d lines, a longest common subsequence has %d: %v", a, b, same, want, d)
		}
	}
}

func TestDiffValuesText(t *testing.T) {
	got := DiffValues("port 6379\nmaxmemory 1gb\nappendonly yes", "port 6379\nmaxmemory 2gb\nappendonly yes")
	want := []DiffLine{{DiffSame, "port 6379"}, {DiffExpected, "maxmemory 1gb"}, {DiffActual, "maxmemory 2gb"}, {DiffSame, "appendonly yes"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DiffValues = %v, want %v", got, want)
	}
	if got := DiffValues(nil, "a\nb"); !reflect.DeepEqual(got, []DiffLine{{DiffActual, "a"}, {DiffActual, "b"}}) {
		t.Errorf("DiffValues(nil, text) = %v", got)
	}
}

// TestDiffLinesLarge: two large, mostly different texts are diffed line by
// line (the hand-written table it replaces gave up past a million cells and
// printed both sides whole). No time is asserted; the diff must be exact.
func TestDiffLinesLarge(t *testing.T) {
	var a, b []string
	for i := range 3000 {
		a = append(a, strings.Repeat("x", i%7)+string(rune('a'+i%26)))
		b = append(b, strings.Repeat("x", i%5)+string(rune('a'+i%26)))
	}
	start := time.Now()
	d := diffLines(a, b)
	same := 0
	for _, l := range d {
		if l.Op == DiffSame {
			same++
		}
	}
	if want := lcsLen(a, b); same != want {
		t.Errorf("large diff keeps %d lines, want %d", same, want)
	}
	t.Logf("3000×3000 lines diffed in %v", time.Since(start))
}
