package oracles

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// The OAT-layer fixtures were recorded from real servers by
// hack/oatrecord (go run ./hack/oatrecord): a step (its window,
// faults and desired state), the system monitor's readings during the step
// (the last one taken at snapshot time) and, for scenarios with a workload, its
// history.

// loadFixture decodes testdata/<dir>/<name>.json strictly into v.
func loadFixture(t testing.TB, dir, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, name+".json"))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s/%s: %v", dir, name, err)
	}
}

// recorded builds the transition of a recorded scenario: t.Curr is s0 (for
// the pods' object keys) with the last reading as its System sample, the
// others are t.Samples; the history is attached when the scenario has one.
func recorded(t testing.TB, name string) *model.Transition {
	t.Helper()
	var st model.Step
	loadFixture(t, "steps", name, &st)
	var samples []model.SystemSample
	loadFixture(t, "samples", name, &samples)
	if len(samples) == 0 {
		t.Fatalf("fixture %s has no readings", name)
	}
	curr := loadSnapshot(t, "s0")
	last := samples[len(samples)-1]
	curr.Taken = last.Taken
	curr.System = &last
	tr := &model.Transition{Step: &st, Desired: st.Desired, PrevDesired: st.Desired, Curr: curr, Samples: samples[:len(samples)-1]}
	if _, err := os.Stat(filepath.Join("testdata", "histories", name+".json")); err == nil {
		var h model.History
		loadFixture(t, "histories", name, &h)
		tr.History = &h
	}
	return tr
}

// member returns the member pod of s.
func member(t testing.TB, s *model.SystemSample, pod string) *model.Member {
	t.Helper()
	for i := range s.Members {
		if s.Members[i].Pod == pod {
			return &s.Members[i]
		}
	}
	t.Fatalf("no member %s in the reading taken %s", pod, s.Taken)
	return nil
}

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// fixtureCase is a table case judged on a recorded scenario (recorded): edit
// changes the transition first (its desired states are copies), the oracle is
// built from cfg, want is asserted and the findings are pinned in a golden file.
type fixtureCase struct {
	name    string
	fixture string
	cfg     Config
	edit    func(t *testing.T, tr *model.Transition)
	want    expectation
}

// runFixtureCases runs each case as a subtest with the oracle newOracle builds,
// pinning its findings in testdata/golden/<dir>/<name>.json; each of also
// checks every case's findings further.
func runFixtureCases(t *testing.T, dir string, newOracle func(Config) Oracle, cases []fixtureCase, also ...func(t *testing.T, fs []model.Finding)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := recorded(t, c.fixture)
			tr.Desired, tr.PrevDesired = jsonv.CopyMap(tr.Desired), jsonv.CopyMap(tr.PrevDesired)
			if c.edit != nil {
				c.edit(t, tr)
			}
			fs := run(newOracle(c.cfg), tr)
			c.want.check(t, fs)
			for _, check := range also {
				check(t, fs)
			}
			checkGolden(t, dir, c.name, fs)
		})
	}
}
