package oracles

import "testing"

// TestReflectsFlagNameVariant: a property is reflected by a command-line flag
// whose name is the field's in another spelling (CloudNativePG turns
// spec.logLevel into the instance manager's --log-level=warning), and only by
// one holding the same value under that name.
func TestReflectsFlagNameVariant(t *testing.T) {
	cmd := func(args ...string) []any {
		l := []any{"/controller/manager", "instance", "run", "--status-port-tls"}
		for _, a := range args {
			l = append(l, a)
		}
		return l
	}
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"kebab flag", cmd("--log-level=warning"), true},
		{"snake flag, separate value", cmd("--log_level", "warning"), true},
		{"same spelling", cmd("--logLevel=warning"), true},
		{"other value", cmd("--log-level=info"), false},
		{"other flag", cmd("--level=warning"), false},
		{"last occurrence wins", cmd("--log-level=warning", "--log-level=info"), false},
		{"command line string", "manager instance run --log-level=warning", true},
		{"config line", "log_level = warning\n", true},
		{"no flag", cmd(), false},
	}
	for _, tt := range tests {
		if got := Reflects("warning", "logLevel", tt.v); got != tt.want {
			t.Errorf("%s: Reflects(warning, logLevel, %#v) = %v, want %v", tt.name, tt.v, got, tt.want)
		}
	}
}
