// Package crd reads CustomResourceDefinitions and turns the OpenAPI v3 schema of one version into a
// property tree: every property with its path, type and constraints, in the form input generation,
// semantic inference and coverage accounting work on.
package crd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrNoCRD is returned when a file holds no apiextensions.k8s.io/v1 CustomResourceDefinition.
var ErrNoCRD = errors.New("no apiextensions.k8s.io/v1 CustomResourceDefinition found: pass a file that holds at least one CRD")

// ErrUnsupportedCRDVersion is returned for CRDs in an API version other than apiextensions.k8s.io/v1.
var ErrUnsupportedCRDVersion = errors.New("CustomResourceDefinition must be apiextensions.k8s.io/v1 (v1beta1 was removed in Kubernetes 1.22): convert it first")

// maxDocumentBytes bounds a single YAML document; the largest real CRDs are well under 2 MiB.
const maxDocumentBytes = 16 << 20

// LoadFile reads every CustomResourceDefinition in a (possibly multi-document) YAML or JSON file.
func LoadFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CRD file: %w", err)
	}
	crds, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crds, nil
}

// Parse decodes every CustomResourceDefinition in data, which may hold several YAML documents
// separated by "---" or a JSON object. Documents of other kinds are skipped; CRD documents are
// decoded strictly (unknown or duplicate fields are errors). It returns ErrNoCRD when no document is
// a CRD.
func Parse(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := SplitDocuments(data)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for i, doc := range docs {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: not valid YAML: %w", i+1, err)
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		if tm.APIVersion != "apiextensions.k8s.io/v1" {
			return nil, fmt.Errorf("document %d: apiVersion %q: %w", i+1, tm.APIVersion, ErrUnsupportedCRDVersion)
		}
		c, err := decodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, ErrNoCRD
	}
	return out, nil
}

// SplitDocuments splits a multi-document YAML stream into its non-empty documents.
func SplitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReaderSize(bytes.NewReader(data), 64<<10))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("split YAML documents: %w", err)
		}
		if len(doc) > maxDocumentBytes {
			return nil, fmt.Errorf("YAML document of %d bytes exceeds the %d byte limit", len(doc), maxDocumentBytes)
		}
		if isBlankDocument(doc) {
			continue
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

func isBlankDocument(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		return false
	}
	return true
}

// decodeStrict converts YAML to JSON (rejecting duplicate keys) and decodes it into the v1 type,
// rejecting unknown fields and case-insensitive matches.
func decodeStrict(doc []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("decode CRD: %w", err)
	}
	var c apiextensionsv1.CustomResourceDefinition
	strictErrs, err := sigsjson.UnmarshalStrict(js, &c)
	if err != nil {
		return nil, fmt.Errorf("decode CRD: %w", err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("decode CRD %q strictly: %s (fix or remove these fields)", c.Name, strings.Join(msgs, "; "))
	}
	return &c, nil
}
