package inputgen

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// ErrSeedUnknownField is returned when the seed CR sets fields the CRD's schema does not declare:
// the API server would prune them silently, so the seed would not be the state its author meant.
var ErrSeedUnknownField = errors.New("seed CR sets fields the CRD schema does not declare (the API server would drop them): remove or fix them, or pass --lenient to drop them with a warning")

// UnknownFields lists, in the API server's notation (spec.foo, spec.items[0].bar), the fields of
// obj its schema does not declare: those pruning would remove. obj is not modified.
func (v *LocalValidator) UnknownFields(obj map[string]any) ([]string, error) {
	if v.schema.Root.PreserveUnknownFields {
		return nil, nil
	}
	cp := jsonv.CopyMap(obj)
	paths := structuralpruning.PruneWithOptions(cp, v.schema.Structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	// metadata is not pruned by the schema: the API server decodes it as an ObjectMeta, which
	// drops the fields it does not know.
	if md, ok := obj["metadata"].(map[string]any); ok {
		known := objectMetaFields()
		for k := range md {
			if !known[k] {
				paths = append(paths, "metadata."+k)
			}
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// objectMetaFields are the JSON names of ObjectMeta's fields.
func objectMetaFields() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(metav1.ObjectMeta{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// checkSeedFields applies the unknown-field rule to the seed: an error naming the fields, or
// with lenient a warning per field.
func checkSeedFields(v *LocalValidator, seed map[string]any, lenient bool) (warnings []string, err error) {
	unknown, err := v.UnknownFields(seed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSeedInvalid, err)
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	if !lenient {
		return nil, fmt.Errorf("%s: %w", strings.Join(unknown, ", "), ErrSeedUnknownField)
	}
	for _, f := range unknown {
		warnings = append(warnings, fmt.Sprintf("%s: not declared by the CRD schema; dropped (the API server prunes it)", f))
	}
	return warnings, nil
}

// seedSense lists the seed values the schema allows but that make no sense to the scenarios built
// from them: negative replica counts, ports outside 0–65535, negative storage sizes and
// quantities. They are reported, not refused: the schema is the operator's contract.
func seedSense(s *crd.Schema, base map[string]any) []string {
	var out []string
	var walk func(p *crd.Property, v any, at string)
	walk = func(p *crd.Property, v any, at string) {
		if p == nil {
			return
		}
		if msg := senseOf(p, v); msg != "" {
			out = append(out, at+": "+msg)
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range jsonv.SortedKeys(x) {
				child := p.Field(k)
				if child == nil {
					child = p.Values
				}
				walk(child, x[k], joinField(at, k))
			}
		case []any:
			for i, e := range x {
				walk(p.Items, e, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
	spec := s.Root.Field("spec")
	if sv, ok := base["spec"]; ok && spec != nil {
		walk(spec, sv, "spec")
	}
	return out
}

func joinField(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// senseOf judges one seed value by its property's inferred meaning ("" when it makes sense).
func senseOf(p *crd.Property, v any) string {
	if p.Semantic == nil {
		return ""
	}
	switch p.Semantic.Hint {
	case semantic.HintReplicas:
		if n, ok := jsonv.AsFloat(v); ok && n < 0 {
			return fmt.Sprintf("%v is a negative count (the schema allows it, but scaling scenarios from it test nothing meaningful): give the seed a count of at least 0", v)
		}
	case semantic.HintPort:
		if n, ok := jsonv.AsFloat(v); ok && (n < 0 || n > 65535) {
			return fmt.Sprintf("%v is not a TCP port (0–65535): the operator's Services and probes cannot use it", v)
		}
	case semantic.HintStorageSize, semantic.HintQuantity:
		str, ok := v.(string)
		if !ok {
			if n, isNum := jsonv.AsFloat(v); isNum && n < 0 {
				return fmt.Sprintf("%v is a negative quantity", v)
			}
			return ""
		}
		q, err := resource.ParseQuantity(str)
		if err == nil && q.Sign() < 0 {
			return fmt.Sprintf("%q is a negative quantity", str)
		}
	}
	return ""
}
