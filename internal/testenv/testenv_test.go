package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, require string
		want        bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"false", "", false},
		{"", "1", true},
		{"false", "true", true},
		{"garbage", "", false},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("GAUNTLET_REQUIRE_E2E", tc.require)
		if got := Required(); got != tc.want {
			t.Errorf("CI=%q GAUNTLET_REQUIRE_E2E=%q: Required() = %v, want %v", tc.ci, tc.require, got, tc.want)
		}
	}
}

// TestUnavailableChild is run by TestUnavailable in a child process.
func TestUnavailableChild(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "" {
		Skip(t, Helper, "entry point of TestUnavailable's child process")
	}
	Unavailable(t, "the thing is missing")
}

// TestUnavailable runs Unavailable in a child test binary with and without CI
// set and checks it fails in CI and skips elsewhere.
func TestUnavailable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		wantOut  string
	}{
		{"true", true, "environment problem"},
		{"false", false, "SKIP: TestUnavailableChild"},
	} {
		cmd := exec.Command(self, "-test.run", "^TestUnavailableChild$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci, "GAUNTLET_REQUIRE_E2E=")
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%s: failed = %v, want %v\n%s", tc.ci, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.wantOut) || !strings.Contains(string(out), "the thing is missing") {
			t.Errorf("CI=%s: output lacks %q and the reason:\n%s", tc.ci, tc.wantOut, out)
		}
	}
}
