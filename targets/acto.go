package targets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// actoConfig is Acto's operator config JSON (acto/lib/operator_config.py).
// Fields that configure Acto's own machinery (coverage, Python modules, kind
// versions) are accepted and reported as ignored; unknown fields are errors.
type actoConfig struct {
	Deploy             actoDeploy      `json:"deploy"`
	CRDName            string          `json:"crd_name"`
	CRDVersion         string          `json:"crd_version,omitempty"`
	SeedCustomResource string          `json:"seed_custom_resource"`
	ExampleDir         string          `json:"example_dir,omitempty"`
	DiffIgnoreFields   []string        `json:"diff_ignore_fields,omitempty"`
	FocusFields        [][]string      `json:"focus_fields,omitempty"`
	NumNodes           int             `json:"num_nodes,omitempty"`
	WaitTime           int             `json:"wait_time,omitempty"`
	KubernetesVersion  string          `json:"kubernetes_version,omitempty"`
	KubernetesEngine   json.RawMessage `json:"kubernetes_engine,omitempty"`
	Analysis           json.RawMessage `json:"analysis,omitempty"`
	CustomFields       json.RawMessage `json:"custom_fields,omitempty"`
	CustomModule       json.RawMessage `json:"custom_module,omitempty"`
	CustomOracle       json.RawMessage `json:"custom_oracle,omitempty"`
	BlackboxCustom     json.RawMessage `json:"blackbox_custom_module,omitempty"`
	K8sFields          json.RawMessage `json:"k8s_fields,omitempty"`
	CollectCoverage    json.RawMessage `json:"collect_coverage,omitempty"`
	MonkeyPatch        json.RawMessage `json:"monkey_patch,omitempty"`
	Context            json.RawMessage `json:"context,omitempty"`
}

type actoDeploy struct {
	Steps []actoStep `json:"steps,omitempty"`
	// Older configs: one file.
	Method string          `json:"method,omitempty"`
	File   string          `json:"file,omitempty"`
	Init   json.RawMessage `json:"init,omitempty"`
}

type actoStep struct {
	Apply *struct {
		File                  string  `json:"file"`
		Operator              bool    `json:"operator,omitempty"`
		OperatorContainerName *string `json:"operator_container_name,omitempty"`
		Namespace             *string `json:"namespace,omitempty"`
	} `json:"apply,omitempty"`
	Wait *struct {
		Duration float64 `json:"duration"`
	} `json:"wait,omitempty"`
}

func isActoConfig(data []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	_, d := probe["deploy"]
	_, c := probe["crd_name"]
	_, s := probe["seed_custom_resource"]
	return d && (c || s)
}

// parseActo loads Acto's operator config. Paths in Acto configs are relative to
// Acto's repository root; they are resolved against the config's folder and then
// each of its ancestors. diff_ignore_fields (Acto's regexes over DeepDiff paths)
// are kept verbatim in IgnoreFields with an "acto:" prefix; focus_fields become
// the property restriction.
func parseActo(path string, data []byte) (*Target, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c actoConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("Acto config %s: %w", path, err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	resolve := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		if filepath.IsAbs(p) {
			return p, nil
		}
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, p)); err == nil {
				return filepath.Join(d, p), nil
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		return "", fmt.Errorf("Acto config %s: %s not found relative to the config's folder or any ancestor (Acto paths are relative to Acto's repository root)", path, p)
	}
	name := filepath.Base(dir)
	t := &Target{Name: name, Source: path, Version: c.CRDVersion}
	if c.Deploy.File != "" {
		c.Deploy.Steps = append(c.Deploy.Steps, actoStep{Apply: &struct {
			File                  string  `json:"file"`
			Operator              bool    `json:"operator,omitempty"`
			OperatorContainerName *string `json:"operator_container_name,omitempty"`
			Namespace             *string `json:"namespace,omitempty"`
		}{File: c.Deploy.File, Operator: true}})
	}
	for i, s := range c.Deploy.Steps {
		switch {
		case s.Apply != nil:
			f, err := resolve(s.Apply.File)
			if err != nil {
				return nil, err
			}
			step := DeployStep{Manifests: f, Operator: s.Apply.Operator}
			if s.Apply.Namespace != nil {
				step.Namespace = *s.Apply.Namespace
			}
			t.Deploy = append(t.Deploy, step)
			// Acto takes the CRD from the deploy files.
			t.CRDFiles = append(t.CRDFiles, f)
		case s.Wait != nil:
			if len(t.Deploy) == 0 {
				return nil, fmt.Errorf("Acto config %s: deploy step %d waits before anything is applied", path, i+1)
			}
			t.Deploy[len(t.Deploy)-1].Sleep += time.Duration(s.Wait.Duration * float64(time.Second))
		default:
			return nil, fmt.Errorf("Acto config %s: deploy step %d is neither apply nor wait", path, i+1)
		}
	}
	for _, f := range c.DiffIgnoreFields {
		t.IgnoreFields = append(t.IgnoreFields, "acto:"+f)
	}
	for _, ff := range c.FocusFields {
		p := ""
		for i, seg := range ff {
			if i > 0 {
				p += "."
			}
			p += seg
		}
		t.Properties = append(t.Properties, p)
	}
	seed, err := resolve(c.SeedCustomResource)
	if err != nil {
		return nil, err
	}
	var examples []string
	if c.ExampleDir != "" {
		ex, err := resolve(c.ExampleDir)
		if err != nil {
			return nil, err
		}
		examples = append(examples, ex)
	}
	if err := t.loadSeedAndExamples(seed, examples); err != nil {
		return nil, fmt.Errorf("Acto config %s: %w", path, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("Acto config %s: %w", path, err)
	}
	return t, nil
}
