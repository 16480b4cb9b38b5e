package campaign

import (
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestGeneratedImage is the third-party sharded operator's night 2: the plan
// enabled the exporter sidecar with inputgen's fallback image busybox:1.36,
// labelled valid — a container that exits at once, ten health groups. An
// image the target does not vouch for is a misoperation; the seed's, the
// target's values and what its image rules map are not.
func TestGeneratedImage(t *testing.T) {
	tg := &targets.Target{Name: "shards",
		Seed:         map[string]any{"spec": map[string]any{"image": "valkey/valkey:8.0", "shards": int64(1)}},
		Values:       map[string][]any{"spec.image": {"valkey/valkey:8.1"}},
		ImageMapping: []imagemap.Rule{{Images: []string{"oliver006/redis_exporter:*"}}},
	}
	k := &knownImages{target: tg}
	prev := model.Object{"spec": map[string]any{"image": "valkey/valkey:8.0", "shards": int64(1)}}
	with := func(path string, v any) model.Object {
		d := model.Object{"spec": map[string]any{"image": "valkey/valkey:8.0", "shards": int64(1)}}
		d["spec"].(map[string]any)[path] = v
		return d
	}
	tests := []struct {
		name    string
		d       model.Object
		changed []string
		want    string
	}{
		{"generated sidecar image", with("exporter", map[string]any{"enabled": true, "image": "busybox:1.36", "imagePullPolicy": "Always"}),
			[]string{"spec.exporter"}, `spec.exporter.image = "busybox:1.36"`},
		{"an image the rules map", with("exporter", map[string]any{"enabled": true, "image": "oliver006/redis_exporter:v1.62.0"}), []string{"spec.exporter"}, ""},
		{"a value of the target", with("image", "valkey/valkey:8.1"), []string{"spec.image"}, ""},
		{"the seed's", with("shards", int64(2)), []string{"spec.shards"}, ""},
		{"a made-up operand image", with("image", "registry.example/valkey:9"), []string{"spec.image"}, `spec.image = "registry.example/valkey:9"`},
		{"an init container list", with("initContainers", []any{map[string]any{"name": "x", "image": "busybox:1.36"}}), []string{"spec.initContainers"},
			`spec.initContainers[0].image = "busybox:1.36"`},
	}
	for _, tt := range tests {
		got := generatedImage(k, prev, tt.d, tt.changed)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s: generatedImage = %q, want %q", tt.name, got, tt.want)
		}
	}
	if generatedImage(nil, prev, with("image", "x:1"), []string{"spec.image"}) != "" {
		t.Error("a replay (no known images) labels nothing")
	}
}
