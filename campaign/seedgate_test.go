package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// brokenOperandSnapshot is the recorded seed of the sharded third-party
// operator whose operand could not start: the image mapping ran a wrapper
// under the host's /tmp that called a program the pod could not see (exit 127,
// crash loop), beside a ready pod.
func brokenOperandSnapshot() *model.Snapshot {
	return &model.Snapshot{Objects: map[string]model.Object{
		"/v1/Pod/ns/shard-0-0": {"kind": "Pod", "metadata": map[string]any{"name": "shard-0-0"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "valkey", "image": "valkey/valkey:8.0"}}},
			"status": map[string]any{"containerStatuses": []any{map[string]any{
				"name": "valkey", "ready": false, "restartCount": float64(4),
				"state":     map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}},
				"lastState": map[string]any{"terminated": map[string]any{"reason": "Error", "exitCode": float64(127)}},
			}}}},
		"/v1/Pod/ns/ok-0": {"kind": "Pod", "metadata": map[string]any{"name": "ok-0"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "x"}}},
			"status": map[string]any{"containerStatuses": []any{map[string]any{
				"name": "app", "ready": true, "restartCount": float64(0),
				"state": map[string]any{"running": map[string]any{}},
			}}}},
	}}
}

func brokenOperandLogs(pod, container string, previous bool) string {
	if pod == "shard-0-0" && container == "valkey" && previous {
		return "starting\n/tmp/valkey-wrap.sh: line 3: /tmp/gl/valkey-server: No such file or directory\n"
	}
	if pod == "ok-0" {
		return "fine\n"
	}
	return ""
}

func TestSeedGateOperandCannotStart(t *testing.T) {
	rec := &StepRecord{Step: model.Step{Worker: 0, Index: 0, Kind: model.StepSeed}, Findings: []model.Finding{
		{Oracle: oracles.NameHealth, Severity: model.SeverityError, Summary: "container valkey of pod shard-0-0 restarted 4 times"},
		{Oracle: oracles.NameHealth, Severity: model.SeverityError, Summary: "StatefulSet shard-0 not ready"},
	}}
	err := seedGate(rec, brokenOperandSnapshot(), brokenOperandLogs)
	var se *SeedError
	if !errors.As(err, &se) || !errors.Is(err, ErrSeedUnhealthy) {
		t.Fatalf("seedGate = %v, want a SeedError", err)
	}
	for _, want := range []string{"w0/s0", "shard-0-0", "127", "/tmp/gl/valkey-server", "own /tmp", "image rules"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error must name %q: %v", want, err)
		}
	}
}

func TestSeedGate(t *testing.T) {
	seed := model.Step{Kind: model.StepSeed}
	tests := []struct {
		name string
		rec  *StepRecord
		want string // "" when the gate passes
	}{
		{"healthy", &StepRecord{Step: seed}, ""},
		{"a consistency finding is an alarm, not a broken seed",
			&StepRecord{Step: seed, Findings: []model.Finding{{Oracle: "consistency", Severity: model.SeverityError, Summary: "x"}}}, ""},
		{"a health warning passes",
			&StepRecord{Step: seed, Findings: []model.Finding{{Oracle: oracles.NameHealth, Severity: model.SeverityWarning, Summary: "w"}}}, ""},
		{"an operator panic is an alarm, not a broken seed",
			&StepRecord{Step: seed, Findings: []model.Finding{{Oracle: oracles.NameHealth, Severity: model.SeverityError, Summary: "the operator panicked: x"}}}, ""},
		{"a container that restarted and recovered",
			&StepRecord{Step: seed, Findings: []model.Finding{{Oracle: oracles.NameHealth, Severity: model.SeverityError, Summary: "container valkey of pod v-0 restarted once"}}}, ""},
		{"a crash loop", &StepRecord{Step: seed, Findings: []model.Finding{{Oracle: oracles.NameHealth, Severity: model.SeverityError,
			Summary: "container valkey of pod v-0 is crash-looping (CrashLoopBackOff)"}}}, "crash-looping"},
		{"not a seed step", &StepRecord{Step: model.Step{Kind: model.StepApply, TimedOut: true}}, ""},
		{"timed out", &StepRecord{Step: model.Step{Kind: model.StepSeed, TimedOut: true}, NotReady: []string{"StatefulSet v: 0/3 ready"}}, "did not converge (not ready: StatefulSet v: 0/3 ready)"},
		{"refused", &StepRecord{Step: seed, Findings: []model.Finding{{Oracle: "apply", Severity: model.SeverityWarning,
			Summary: "the API server rejected the desired state", Evidence: []model.Evidence{{Detail: "spec.replicas: Invalid value"}}}}},
			"the API server refused the seed: spec.replicas: Invalid value"},
		{"unhealthy", &StepRecord{Step: seed, Findings: []model.Finding{{Oracle: oracles.NameHealth, Severity: model.SeverityError,
			Summary: "the ValkeyCluster reports condition Ready=False"}}}, "converged unhealthy: the ValkeyCluster reports condition Ready=False"},
	}
	for _, tt := range tests {
		err := seedGate(tt.rec, &model.Snapshot{}, nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: seedGate = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "fix: ")):
			t.Errorf("%s: seedGate = %v, want an error saying %q and the fix", tt.name, err, tt.want)
		}
	}
}

func TestMissingProgram(t *testing.T) {
	for log, want := range map[string]string{
		"sh: 1: valkey-server: not found":                                 "valkey-server",
		"bash: redis-server: command not found":                           "redis-server",
		`exec: "exporter": executable file not found in $PATH`:            "exporter",
		"/tmp/w.sh: line 2: /tmp/bin/x: No such file or directory":        "/tmp/bin/x",
		"everything is fine\nready to accept connections":                 "",
		"starting\nexec /tmp/redis_exporter: no such file or directory\n": "/tmp/redis_exporter",
	} {
		if got := missingProgram(log); got != want {
			t.Errorf("missingProgram(%q) = %q, want %q", log, got, want)
		}
	}
}

func TestWriteContainerLogs(t *testing.T) {
	dir := t.TempDir()
	if err := writeContainerLogs(dir, brokenOperandSnapshot(), brokenOperandLogs); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	// the crash-looping container's previous log is kept (its current one is
	// empty); the ready, never restarted container's is not.
	if !slices.Equal(names, []string{"shard-0-0.valkey.previous.log"}) {
		t.Fatalf("logs = %v", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "logs", "shard-0-0.valkey.previous.log"))
	if !strings.Contains(string(b), "No such file or directory") {
		t.Errorf("previous log = %q", b)
	}
}
