package inputgen

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

func TestLocalValidator(t *testing.T) {
	celSchema, celSeed, _ := loadCase(t, "cel")
	colSchema, colSeed, _ := loadCase(t, "collections")
	celV, err := NewLocalValidator(celSchema)
	if err != nil {
		t.Fatal(err)
	}
	colV, err := NewLocalValidator(colSchema)
	if err != nil {
		t.Fatal(err)
	}
	with := func(base map[string]any, changes ...Change) map[string]any {
		out := jsonv.CopyMap(base)
		if err := ApplyChanges(out, changes); err != nil {
			t.Fatal(err)
		}
		return out
	}
	set := func(ptr string, v any) Change { return Change{Op: OpSet, Path: ptr, Value: v} }
	rm := func(ptr string) Change { return Change{Op: OpRemove, Path: ptr} }
	tests := []struct {
		name   string
		v      *LocalValidator
		obj    map[string]any
		old    map[string]any // nil: create
		errHas []string       // empty: valid
	}{
		{name: "seed", v: celV, obj: celSeed},
		{name: "unknown field is pruned", v: celV, obj: with(celSeed, set("/spec/bogus", "x"))},
		{name: "maximum", v: celV, obj: with(celSeed, set("/spec/maxSize", int64(11))),
			errHas: []string{"spec.maxSize", "less than or equal to 10"}},
		{name: "wrong type", v: celV, obj: with(celSeed, set("/spec/maxSize", "five")),
			errHas: []string{"spec.maxSize", "integer"}},
		{name: "required", v: celV, obj: with(celSeed, rm("/spec/minSize")),
			errHas: []string{"spec.minSize", "Required"}},
		{name: "CEL rule", v: celV, obj: with(celSeed, set("/spec/minSize", int64(6))),
			errHas: []string{"minSize must not exceed maxSize"}},
		{name: "CEL rule on a field", v: celV, obj: with(celSeed, set("/spec/name", "_x")),
			errHas: []string{"spec.name", "cannot start with '_'"}},
		{name: "CEL rule with has()", v: celV, obj: with(celSeed, set("/spec/workload", "Deployment")),
			errHas: []string{"persistence requires workload StatefulSet"}},
		{name: "create without persistence", v: celV, obj: with(celSeed, set("/spec/workload", "Deployment"), rm("/spec/persistence"))},
		{name: "transition rule on update", v: celV, obj: with(celSeed, set("/spec/workload", "Deployment"), rm("/spec/persistence")), old: celSeed,
			errHas: []string{"workload is immutable"}},
		{name: "update within rules", v: celV, obj: with(celSeed, set("/spec/maxSize", int64(9))), old: celSeed},
		{name: "ratcheting keeps an unchanged invalid value", v: celV,
			obj: with(celSeed, set("/spec/name", "_legacy"), set("/spec/maxSize", int64(9))),
			old: with(celSeed, set("/spec/name", "_legacy"))},
		{name: "wrong kind", v: celV, obj: with(celSeed, set("/kind", "Other")), errHas: []string{"kind", "must be Queue"}},
		{name: "wrong apiVersion", v: celV, obj: with(celSeed, set("/apiVersion", "test.gauntlet.dev/v2")), errHas: []string{"apiVersion"}},
		{name: "no name", v: celV, obj: with(celSeed, rm("/metadata/name")), errHas: []string{"metadata.name", "Required"}},
		{name: "list-type map duplicate", v: colV, obj: with(colSeed, set("/spec/ports/-", map[string]any{"name": "http", "port": int64(81)})),
			errHas: []string{"spec.ports[1]", "Duplicate value"}},
		{name: "list-type set duplicate", v: colV, obj: with(colSeed, set("/spec/tags/-", "red")),
			errHas: []string{"spec.tags[1]", "Duplicate value"}},
		{name: "embedded resource without kind", v: colV, obj: with(colSeed, set("/spec/template", map[string]any{"apiVersion": "v1"})),
			errHas: []string{"spec.template.kind", "Required"}},
		{name: "embedded resource", v: colV, obj: with(colSeed, set("/spec/template", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}))},
		{name: "enum", v: colV, obj: with(colSeed, set("/spec/tags/0", "pink")), errHas: []string{"spec.tags[0]", "Unsupported value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.old == nil {
				err = tt.v.ValidateCreate(context.Background(), tt.obj)
			} else {
				err = tt.v.ValidateUpdate(context.Background(), tt.obj, tt.old)
			}
			if len(tt.errHas) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var ie *InvalidError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ie) || len(ie.Errs) == 0 {
				t.Errorf("err = %v, want an InvalidError", err)
			}
			for _, want := range tt.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q: %v", want, err)
				}
			}
		})
	}
}

func TestNormalizeAndPrune(t *testing.T) {
	s, seed, _ := loadCase(t, "primitives")
	v, err := NewLocalValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	obj := jsonv.CopyMap(seed)
	obj["status"] = map[string]any{"phase": "Ready"}
	_ = jsonv.Set(obj, "/spec/unknown", "x")
	n, err := v.Normalize(obj)
	if err != nil {
		t.Fatal(err)
	}
	if mode, _ := jsonv.Get(n, "/spec/mode"); mode != "safe" {
		t.Errorf("default not applied: mode = %v", mode)
	}
	if _, ok := jsonv.Get(n, "/spec/unknown"); ok {
		t.Error("unknown field not pruned")
	}
	if _, ok := n["status"]; ok {
		t.Error("status kept although the status subresource is enabled")
	}
	if ns, _ := jsonv.Get(n, "/metadata/namespace"); ns != "default" {
		t.Errorf("namespace = %v, want default", ns)
	}
	p, err := v.Prune(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := jsonv.Get(p, "/spec/mode"); ok {
		t.Error("Prune applied a default")
	}
	if _, ok := jsonv.Get(p, "/metadata/namespace"); ok {
		t.Error("Prune invented a namespace")
	}
	if _, ok := jsonv.Get(obj, "/spec/unknown"); !ok {
		t.Error("Normalize modified its input")
	}
}
