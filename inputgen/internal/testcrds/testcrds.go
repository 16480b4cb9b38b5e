// Package testcrds gives tests their CRDs: small made-up ones built from a schema (CRD), and
// the real-world ones in the workspace's shared folder (../shared/crds relative to the repository
// root), which are never copied into the repository.
package testcrds

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrAbsent is returned when the shared CRD folder does not exist (a checkout outside the workspace).
var ErrAbsent = errors.New("shared CRD folder ../shared/crds not found next to the repository: real-CRD tests need the Gauntlet workspace")

// Operator is one folder of the shared CRDs: its CRD files and example CRs.
type Operator struct {
	// Name is the folder name, e.g. "strimzi-kafka".
	Name string
	// CRDs are the CRD files, sorted.
	CRDs []string
	// Examples are the example CR files, sorted.
	Examples []string
}

// Dir returns the absolute path of the shared CRD folder, found from the current directory by walking
// up to the repository root (the directory holding go.mod) and then to ../shared/crds.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, "..", "shared", "crds")
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				return filepath.Clean(dir), nil
			}
			return "", ErrAbsent
		}
		if filepath.Dir(d) == d {
			return "", ErrAbsent
		}
	}
}

// Operators lists every operator folder with its CRDs and examples.
func Operators() ([]Operator, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read shared CRD folder: %w", err)
	}
	var out []Operator
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		op := Operator{Name: e.Name()}
		op.CRDs, err = yamlFiles(filepath.Join(dir, e.Name(), "crds"))
		if err != nil {
			return nil, err
		}
		op.Examples, err = yamlFiles(filepath.Join(dir, e.Name(), "examples"))
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func yamlFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// CRD returns the YAML of a namespaced test CRD of group test.gauntlet.dev: kind, plural the
// lower-cased kind plus "s", and one served and stored version v1 whose openAPIV3Schema is schema
// (YAML at any common indentation; leading and trailing blank lines are dropped). An empty schema
// leaves the version without one.
func CRD(kind, schema string) string {
	plural := strings.ToLower(kind) + "s"
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s.test.gauntlet.dev}
spec:
  group: test.gauntlet.dev
  names: {kind: %s, plural: %s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
`, plural, kind, plural)
	lines := strings.Split(strings.Trim(schema, "\n"), "\n")
	if strings.TrimSpace(schema) == "" {
		return b.String()
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); common < 0 || n < common {
			common = n
		}
	}
	b.WriteString("    schema:\n      openAPIV3Schema:\n")
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString("        " + l[common:])
		}
		b.WriteString("\n")
	}
	return b.String()
}
