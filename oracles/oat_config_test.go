package oracles

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestOATConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		msg  string // "" when valid
	}{
		{"zero", Config{}, ""},
		{"thresholds", Config{MinAvailability: 0.95, MinAvailabilityUnderFault: 0.5}, ""},
		{"never alarm", Config{MinAvailability: -1}, ""},
		{"availability above 1", Config{MinAvailability: 80}, "min availability 80"},
		{"availability NaN", Config{MinAvailability: math.NaN()}, "min availability NaN"},
		{"under fault negative", Config{MinAvailabilityUnderFault: -0.5}, "min availability under fault -0.5"},
		{"under fault above 1", Config{MinAvailabilityUnderFault: 1.5}, "min availability under fault 1.5"},
		{"config path", Config{SystemConfigPath: "spec.valkey[\"config\"]"}, ""},
		{"bad config path", Config{SystemConfigPath: "spec.[config"}, "system config path"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", c.name, err)
		case c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)):
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", c.name, err, c.msg)
		}
	}
}

// Targets decode the oracle configuration strictly from YAML (sigs.k8s.io/yaml)
// or JSON: the new settings must decode, and misspelt ones fail.
func TestOATConfigDecode(t *testing.T) {
	doc := `
systemConfigPath: spec.settings
roleLabel: example.com/role
rolePrimaryValue: leader
disableServiceSplitBrain: true
minAvailability: 0.9
minAvailabilityUnderFault: 0.25
disableReadVisibility: true
`
	var c Config
	if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := Config{SystemConfigPath: "spec.settings", RoleLabel: "example.com/role", RolePrimaryValue: "leader", DisableServiceSplitBrain: true,
		MinAvailability: 0.9, MinAvailabilityUnderFault: 0.25, DisableReadVisibility: true}
	b1, _ := json.Marshal(c)
	b2, _ := json.Marshal(want)
	if !bytes.Equal(b1, b2) {
		t.Errorf("decoded %s, want %s", b1, b2)
	}
	if err := yaml.UnmarshalStrict([]byte("minAvailabilty: 0.9\n"), &c); err == nil {
		t.Errorf("a misspelt setting decoded without error")
	}
	// The zero value encodes to nothing: defaults stay defaults.
	if b, _ := json.Marshal(Config{}); string(b) != "{}" {
		t.Errorf("zero Config encodes to %s, want {}", b)
	}
}

func TestOATOraclesNoData(t *testing.T) {
	// Without monitor readings or a history the OAT-layer oracles say nothing,
	// whatever the state.
	tr := recorded(t, "lost-acked-write")
	tr.Samples, tr.Curr.System, tr.History = nil, nil, nil
	cfg := Config{MinAvailability: 0.99, MinAvailabilityUnderFault: 0.99}
	for _, o := range []Oracle{NewSystemState(cfg), NewSplitBrain(cfg), NewAvailability(cfg), NewDurability(cfg)} {
		if fs := run(o, tr); len(fs) != 0 {
			t.Errorf("%s: %d findings without data", o.Name(), len(fs))
		}
		if fs := run(o, nil); len(fs) != 0 {
			t.Errorf("%s: %d findings on a nil transition", o.Name(), len(fs))
		}
	}
}

// The recordings of a correct operator raise nothing, with every OAT-layer
// oracle at its defaults and with the availability alarm under fault on.
func TestOATCleanRecordings(t *testing.T) {
	cfg := Config{MinAvailabilityUnderFault: 0.5}
	os := []Oracle{NewSystemState(cfg), NewSplitBrain(cfg), NewAvailability(cfg), NewDurability(cfg)}
	for _, name := range []string{"rolling-restart", "clean-failover", "converged", "config-sizes"} {
		for _, f := range Run(context.Background(), os, recorded(t, name)) {
			t.Errorf("%s: unexpected finding: %s: %s", name, f.Oracle, f.Summary)
		}
	}
}
