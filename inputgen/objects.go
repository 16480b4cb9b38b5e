package inputgen

import (
	"errors"
	"fmt"
	"os"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// ErrNoObject is returned when a CR file holds no object.
var ErrNoObject = errors.New("file holds no custom resource: give a YAML or JSON file with at least one object")

// ParseObjects decodes every object in a (possibly multi-document) YAML or JSON stream. Documents
// are decoded strictly (duplicate keys are errors); integral numbers become int64 as in
// unstructured Kubernetes objects.
func ParseObjects(data []byte) ([]map[string]any, error) {
	docs, err := crd.SplitDocuments(data)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for i, doc := range docs {
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj == nil {
			continue
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, ErrNoObject
	}
	return out, nil
}

// LoadObjects reads every object in a YAML or JSON file.
func LoadObjects(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CR file: %w", err)
	}
	objs, err := ParseObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}
