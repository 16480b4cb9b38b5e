package images

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is the format of a mapping file (YAML or JSON):
//
//	rules:
//	- name: my-app
//	  images: ["registry.example.com/my-app:*"]
//	  entrypoint: ["/app/server"]
//	  programs:
//	    /app/server: [/home/me/src/my-app/bin/server]
//	- images: ["quay.io/prometheus/*"]
//	  simulate: true
//
// Unknown fields are an error.
type File struct {
	// Rules are tried in order, before the shipped defaults.
	Rules []Rule `json:"rules"`
}

// Parse decodes a mapping file's contents strictly; name is used in messages.
func Parse(data []byte, name string) ([]Rule, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		hint := ""
		if strings.Contains(err.Error(), "unknown field") {
			hint = " (a file has \"rules\"; a rule has name, images, entrypoint, cmd, prependProgram, programs, env, workingDir, user, install, simulate)"
		}
		return nil, fmt.Errorf("images: mapping file %s: %w%s", name, err, hint)
	}
	for i := range f.Rules {
		if err := f.Rules[i].validate(i + 1); err != nil {
			return nil, fmt.Errorf("images: mapping file %s: %w", name, err)
		}
	}
	return f.Rules, nil
}

// Load reads the mapping file at path and returns its rules followed by the
// shipped defaults (DefaultRules). An empty path gives the defaults alone.
func Load(path string, opts Options) (*Mapping, error) {
	if path == "" {
		return Default(opts), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("images: read mapping file: %w", err)
	}
	rules, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return New(append(rules, DefaultRules(opts)...), opts)
}
