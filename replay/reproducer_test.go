package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestReadReproducerOldFormat: a reproducer.json written before the
// reproducer type was shared with the Go tests (a fault step with its plan
// and recorded faults, no CRD, name or timing) reads as it is; a field the
// type does not know is an error naming it.
func TestReadReproducerOldFormat(t *testing.T) {
	dir := t.TempDir()
	old := `{"group": 2, "signature": "split-brain-d32d21af07eb", "oracle": "split-brain", "summary": "two primaries",
		"fromStep": "w0/s3", "seed": {"metadata": {"name": "cache"}, "spec": {"replicas": 3}},
		"steps": [{"kind": "fault", "desired": {"metadata": {"name": "cache"}, "spec": {"replicas": 3}},
			"fault": {"kind": "pod-failure", "role": "primary", "pick": 0, "hold": 12000000000},
			"faults": [{"kind": "pod-failure", "targets": ["primary g0-w1/cache-0"], "injected": "2026-11-27T10:00:00Z"}]}],
		"confirmed": true, "tried": 1, "target": "builtin:valkey"}`
	if err := os.WriteFile(filepath.Join(dir, ReproducerFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadReproducer(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Group != 2 || r.Oracle != "split-brain" || !r.Confirmed || len(r.Steps) != 1 || r.Steps[0].Kind != model.StepFault ||
		r.Steps[0].Fault == nil || r.Steps[0].Fault.Hold != 12*time.Second || r.Steps[0].Fault.Role != "primary" || len(r.Steps[0].Faults) != 1 {
		t.Fatalf("ReadReproducer = %+v", r)
	}
	if got := r.FaultKinds(); len(got) != 1 || got[0] != FaultPodFailure {
		t.Errorf("FaultKinds = %v", got)
	}
	r.CRD, r.Namespace = CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"}, "ns"
	if err := r.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	bad := strings.Replace(old, `"tried": 1`, `"tried": 1, "retries": 3`, 1)
	if err := os.WriteFile(filepath.Join(dir, ReproducerFile), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReproducer(dir); err == nil || !strings.Contains(err.Error(), `unknown field "retries"`) {
		t.Errorf("an unknown field: %v", err)
	}
	if _, err := ReadReproducer(t.TempDir()); err == nil || !strings.Contains(err.Error(), "alarms/N") {
		t.Errorf("a folder without a reproducer: %v", err)
	}
}
