package oracles

import "testing"

// Flags an operator prefixes with the component they configure (the
// Prometheus operator's Alertmanager arguments) stand for the property named
// by their whole name without dots or by their last dotted part.
func TestFlagValueDotted(t *testing.T) {
	args := []string{"--web.external-url=http://am.example", "--cluster.peer-timeout", "15s", "--data.retention=120h", "--log.level=debug"}
	for key, want := range map[string]string{
		"externalUrl":        "http://am.example",
		"clusterPeerTimeout": "15s",
		"retention":          "120h",
		"logLevel":           "debug",
	} {
		if got, ok := flagValue(args, key); !ok || got != want {
			t.Errorf("flagValue(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if got, ok := flagValue(args, "peer"); ok {
		t.Errorf("flagValue(peer) = %q: a part of a dotted name that is not its last matched", got)
	}
}
