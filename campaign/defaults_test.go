package campaign

import "testing"

// TestDescribedBool: a boolean's default as CRD descriptions state it
// (CloudNativePG's enablePodAntiAffinity: "unless this field is explicitly set
// to false"); a description that states none gives none.
func TestDescribedBool(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		want, ok bool
	}{
		{"Activates anti-affinity for the pods. The operator will define pods\nanti-affinity unless this field is explicitly set to false", true, true},
		{"Manage the `PodDisruptionBudget` resources within the cluster. When\nconfigured as `true` (default setting), ...", false, false},
		{"Whether to create a PodMonitor. Defaults to false.", false, true},
		{"Enable TLS. Default: true", true, true},
		{"The default value is `true`.", true, true},
		{"Metrics are enabled by default.", true, true},
		{"Whether the exporter runs.", false, false},
	} {
		got, ok := describedBool(tc.desc)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("describedBool(%q) = %v, %v; want %v, %v", tc.desc, got, ok, tc.want, tc.ok)
		}
	}
}
