package oracles

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestActoMask(t *testing.T) {
	pod := func() model.Object {
		return model.Object{"kind": "StatefulSet", "metadata": map[string]any{"name": "cache",
			"labels": map[string]any{"app": "x", "hash": "h"}},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "a", "image": "i1"}, map[string]any{"name": "b", "image": "i2"}}}}}}
	}
	tests := []struct {
		name, mask string
		whole      bool
	}{
		{name: "field anywhere", mask: `acto:\['labels'\]\['hash'\]`},
		{name: "kind and name", mask: `acto:^root\['stateful_set'\]\['cache'\]\['spec'\]\['replicas'\]`},
		{name: "list index", mask: `acto:\['containers'\]\[1\]\['image'\]`},
		{name: "whole object", mask: `acto:^root\['stateful_set'\]\['cach`, whole: true},
		{name: "other kind", mask: `acto:^root\['pod'\]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateMasks([]string{tt.mask}); err != nil {
				t.Fatal(err)
			}
			got := Mask(pod(), []string{tt.mask})
			if tt.whole {
				if got != nil {
					t.Errorf("object kept: %v", got)
				}
				return
			}
			want := pod()
			switch tt.name {
			case "field anywhere":
				delete(want["metadata"].(map[string]any)["labels"].(map[string]any), "hash")
			case "kind and name":
				delete(want["spec"].(map[string]any), "replicas")
			case "list index":
				c := want["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
				delete(c[1].(map[string]any), "image")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("masked\n%v\nwant\n%v", got, want)
			}
		})
	}
	if err := ValidateMasks([]string{`acto:(?<=x)y`}); !errors.Is(err, ErrBadMask) {
		t.Errorf("lookbehind: err = %v, want ErrBadMask", err)
	}
}
