package campaign

import (
	"strings"
	"testing"
)

func TestUsePreloaded(t *testing.T) {
	dep := map[string]any{"kind": "Deployment", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"initContainers": []any{map[string]any{"name": "init", "image": "example.com/op:latest"}},
		"containers": []any{
			map[string]any{"name": "a", "image": "example.com/op:1.0", "imagePullPolicy": "Always"},
			map[string]any{"name": "b", "image": "example.com/op:1.0", "imagePullPolicy": "Never"},
			map[string]any{"name": "c", "image": "example.com/other:1.0", "imagePullPolicy": "Always"},
			map[string]any{"name": "d", "image": "example.com/op:1.0"},
		}}}}}
	got := usePreloaded(dep, map[string]bool{"example.com/op:1.0": true, "example.com/op:latest": true})
	if strings.Join(got, ",") != "example.com/op:1.0,example.com/op:latest" && strings.Join(got, ",") != "example.com/op:latest,example.com/op:1.0" {
		t.Errorf("changed %v, want the Always container and the latest-tagged init container", got)
	}
	spec := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	cs := spec["containers"].([]any)
	want := []string{"IfNotPresent", "Never", "Always", ""}
	for i, c := range cs {
		p, _ := c.(map[string]any)["imagePullPolicy"].(string)
		if p != want[i] {
			t.Errorf("container %d: policy %q, want %q", i, p, want[i])
		}
	}
	if p := spec["initContainers"].([]any)[0].(map[string]any)["imagePullPolicy"]; p != "IfNotPresent" {
		t.Errorf("init container: policy %v, want IfNotPresent (latest pulls Always by default)", p)
	}
	if got := usePreloaded(dep, nil); got != nil {
		t.Errorf("no preloaded images: changed %v", got)
	}
}

func TestPullsAlwaysByDefault(t *testing.T) {
	for img, want := range map[string]bool{
		"example.com/op:1.0": false, "example.com/op:latest": true, "example.com/op": true, "localhost:5000/op": true,
		"valkey/valkey:8.1": false, "example.com/op@sha256:" + strings.Repeat("a", 64): false,
	} {
		if got := pullsAlwaysByDefault(img); got != want {
			t.Errorf("pullsAlwaysByDefault(%q) = %v, want %v", img, got, want)
		}
	}
}
