package oracles

import "testing"

// TestReflectsJoinedList: a list property is reflected by a string holding its
// items comma-separated, in any order (cert-manager's alt-names annotation for
// spec.dnsNames) — and only by one holding exactly those items.
func TestReflectsJoinedList(t *testing.T) {
	d := []any{"a.example", "b.example"}
	tests := []struct {
		v    any
		want bool
	}{
		{"a.example,b.example", true},
		{"b.example, a.example", true},
		{"a.example", false},
		{"a.example,b.example,c.example", false},
		{"", false},
		{[]any{"a.example", "b.example"}, true},
	}
	for _, tt := range tests {
		if got := Reflects(d, "dnsNames", tt.v); got != tt.want {
			t.Errorf("Reflects(%v, %#v) = %v, want %v", d, tt.v, got, tt.want)
		}
	}
	if !Reflects([]any{"only.example"}, "dnsNames", "only.example") {
		t.Error("a one-item list is not reflected by its item")
	}
	if Reflects([]any{map[string]any{"a": "b"}}, "x", "map[a:b]") {
		t.Error("a list of objects is reflected by a string")
	}
}

// TestWordSuffix: a field name's suffix counts for name affinity only from a
// word of it (CloudNativePG seed 1: a PVC's spec.resources was named as
// overruling projectedVolumeTemplate.sources).
func TestWordSuffix(t *testing.T) {
	for _, tc := range []struct {
		long, short string
		want        bool
	}{
		{"tlsSecretName", "secretname", true},
		{"tlsSecretName", "name", true},
		{"secret_name", "name", true},
		{"log-level", "level", true},
		{"resources", "sources", false},
		{"sources", "sources", true},
		{"TLSName", "name", true},
		{"hostname", "name", false},
		{"imageName", "image", false},
	} {
		if got := wordSuffix(tc.long, tc.short); got != tc.want {
			t.Errorf("wordSuffix(%q, %q) = %v, want %v", tc.long, tc.short, got, tc.want)
		}
	}
}
