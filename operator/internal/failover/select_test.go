package failover

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// reference is Sentinel's order written as successive filters, independently of Better.
func reference(cs []Candidate) (Candidate, bool) {
	var pool []Candidate
	for _, c := range cs {
		if c.Priority > 0 {
			pool = append(pool, c)
		}
	}
	if len(pool) == 0 {
		return Candidate{}, false
	}
	keep := func(pred func(Candidate) bool) {
		var next []Candidate
		for _, c := range pool {
			if pred(c) {
				next = append(next, c)
			}
		}
		pool = next
	}
	minPrio := pool[0].Priority
	for _, c := range pool {
		minPrio = min(minPrio, c.Priority)
	}
	keep(func(c Candidate) bool { return c.Priority == minPrio })
	maxOff := pool[0].Offset
	for _, c := range pool {
		maxOff = max(maxOff, c.Offset)
	}
	keep(func(c Candidate) bool { return c.Offset == maxOff })
	minRun := strings.ToLower(pool[0].RunID)
	for _, c := range pool {
		if r := strings.ToLower(c.RunID); r < minRun {
			minRun = r
		}
	}
	keep(func(c Candidate) bool { return strings.ToLower(c.RunID) == minRun })
	best := pool[0]
	for _, c := range pool {
		if c.Name < best.Name {
			best = c
		}
	}
	return best, true
}

func randomCandidates(r *rand.Rand) []Candidate {
	n := 1 + r.Intn(8)
	prios := []int{0, 1, 10, 100, 100, 100}
	runIDs := []string{"aa01", "AA01", "0f3c", "ff00", "1b2e", "1B2F"}
	out := make([]Candidate, n)
	for i := range out {
		out[i] = Candidate{
			Name:     fmt.Sprintf("pod-%d", i),
			Priority: prios[r.Intn(len(prios))],
			Offset:   int64(r.Intn(4)) * 1000, // few values: ties are common
			RunID:    runIDs[r.Intn(len(runIDs))],
		}
	}
	return out
}

// TestSelectProperties checks, over seeded random candidate sets, that the
// choice is invariant under permutation, follows Sentinel's order (against an
// independent reference), never picks replica-priority 0, and that no eligible
// candidate is better than the choice.
func TestSelectProperties(t *testing.T) {
	const seed = 20260315
	r := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 5000; iter++ {
		cs := randomCandidates(r)
		want, wantOK := reference(cs)
		got, ok := Select(cs)
		if ok != wantOK || got != want {
			t.Fatalf("seed %d iter %d: Select(%+v) = %+v,%v; reference %+v,%v", seed, iter, cs, got, ok, want, wantOK)
		}
		if ok && got.Priority <= 0 {
			t.Fatalf("seed %d iter %d: chose a replica-priority 0 candidate %+v", seed, iter, got)
		}
		for _, c := range cs {
			if c.Priority > 0 && c != got && Better(c, got) {
				t.Fatalf("seed %d iter %d: %+v is better than the choice %+v", seed, iter, c, got)
			}
		}
		for p := 0; p < 10; p++ {
			perm := append([]Candidate(nil), cs...)
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			if g, ok2 := Select(perm); g != got || ok2 != ok {
				t.Fatalf("seed %d iter %d: permutation changed the choice: %+v vs %+v", seed, iter, g, got)
			}
			ranked := Rank(perm)
			if ok && (len(ranked) == 0 || ranked[0] != got) {
				t.Fatalf("seed %d iter %d: Rank's first %+v differs from Select %+v", seed, iter, ranked, got)
			}
			for i := 1; i < len(ranked); i++ {
				if Better(ranked[i], ranked[i-1]) {
					t.Fatalf("seed %d iter %d: Rank not sorted: %+v", seed, iter, ranked)
				}
			}
		}
	}
}

func TestSelectOrder(t *testing.T) {
	tests := []struct {
		name string
		cs   []Candidate
		want string
		ok   bool
	}{
		{"none", nil, "", false},
		{"only priority 0", []Candidate{{Name: "a", Priority: 0, Offset: 9}}, "", false},
		{"lower priority wins over offset", []Candidate{{Name: "a", Priority: 100, Offset: 900}, {Name: "b", Priority: 10, Offset: 1}}, "b", true},
		{"higher offset wins", []Candidate{{Name: "a", Priority: 100, Offset: 5, RunID: "0"}, {Name: "b", Priority: 100, Offset: 6, RunID: "f"}}, "b", true},
		{"smaller run id wins", []Candidate{{Name: "a", Priority: 100, Offset: 5, RunID: "bb"}, {Name: "b", Priority: 100, Offset: 5, RunID: "AB"}}, "b", true},
		{"priority 0 excluded despite best offset", []Candidate{{Name: "a", Priority: 0, Offset: 99}, {Name: "b", Priority: 100, Offset: 1}}, "b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Select(tt.cs)
			if ok != tt.ok || (ok && got.Name != tt.want) {
				t.Fatalf("Select = %q,%v; want %q,%v", got.Name, ok, tt.want, tt.ok)
			}
		})
	}
}
