package jsonv

import (
	"reflect"
	"testing"
)

func TestDiffWithLists(t *testing.T) {
	a := map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "valkey", "image": "v1"}, map[string]any{"name": "exporter", "image": "e"}},
		"args":       []any{"a", "b"},
		"labels":     map[string]any{"app.kubernetes.io/name": "x", "gone": int64(1)},
	}}
	b := map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "exporter", "image": "e"}, map[string]any{"name": "valkey", "image": "v2"}},
		"args":       []any{"a", "b", "c"},
		"labels":     map[string]any{"app.kubernetes.io/name": "y", "new": 1.0},
	}}
	paths := func(o DiffOptions) []string {
		var out []string
		for _, c := range DiffWith(a, b, o) {
			out = append(out, c.Path.String())
		}
		return out
	}
	cases := []struct {
		name string
		o    DiffOptions
		want []string
	}{
		{"keyed, by index", DiffOptions{ListKeys: []string{"name"}}, []string{"spec.args[2]", "spec.containers[0].image", `spec.labels["app.kubernetes.io/name"]`, "spec.labels.gone", "spec.labels.new"}},
		{"by index", DiffOptions{}, []string{"spec.args[2]", "spec.containers[0].image", "spec.containers[0].name", "spec.containers[1].image", "spec.containers[1].name",
			`spec.labels["app.kubernetes.io/name"]`, "spec.labels.gone", "spec.labels.new"}},
		{"same length", DiffOptions{Lists: ListsSameLength}, []string{"spec.args", "spec.containers[0].image", "spec.containers[0].name", "spec.containers[1].image", "spec.containers[1].name",
			`spec.labels["app.kubernetes.io/name"]`, "spec.labels.gone", "spec.labels.new"}},
		{"whole", DiffOptions{Lists: ListsWhole}, []string{"spec.args", "spec.containers", `spec.labels["app.kubernetes.io/name"]`, "spec.labels.gone", "spec.labels.new"}},
	}
	for _, c := range cases {
		if got := paths(c.o); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: paths = %q, want %q", c.name, got, c.want)
		}
	}
	// Sides and presence.
	for _, c := range DiffWith(a, b, DiffOptions{}) {
		switch c.Path.String() {
		case "spec.labels.gone":
			if !c.InA || c.InB || c.A != int64(1) {
				t.Errorf("removal = %+v", c)
			}
		case "spec.labels.new":
			if c.InA || !c.InB || c.B != 1.0 {
				t.Errorf("addition = %+v", c)
			}
		}
	}
	// Numbers compare by value, whatever their Go type.
	if d := DiffWith(map[string]any{"n": int64(3)}, map[string]any{"n": 3.0}, DiffOptions{}); len(d) != 0 {
		t.Errorf("3 and 3.0 differ: %+v", d)
	}
}
