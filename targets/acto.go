package targets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/oracles"
)

// actoConfig is Acto's operator config JSON (acto/lib/operator_config.py).
// Fields that configure Acto's own machinery (coverage, Python modules, kind
// versions) are accepted and, when set, reported in Target.Warnings as not
// honoured; unknown fields are errors.
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

// unhonoured names the set fields that configure Acto's own machinery, which
// Gauntlet reads but does not act on.
func (c *actoConfig) unhonoured() []string {
	var out []string
	add := func(field string, set bool, why string) {
		if set {
			out = append(out, fmt.Sprintf("Acto config: %s is not honoured (%s)", field, why))
		}
	}
	raw := func(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }
	add("num_nodes", c.NumNodes != 0, "the cluster's nodes come from the back end")
	add("wait_time", c.WaitTime != 0, "Gauntlet waits for convergence, not a fixed time")
	add("kubernetes_version", c.KubernetesVersion != "", "the back end pins the Kubernetes version")
	add("kubernetes_engine", raw(c.KubernetesEngine), "choose the back end with --backend")
	add("analysis", raw(c.Analysis), "Gauntlet does no source analysis")
	add("custom_fields", raw(c.CustomFields), "a Python module; declare values in a Gauntlet target file")
	add("custom_module", raw(c.CustomModule), "a Python module; declare mappings in a Gauntlet target file")
	add("custom_oracle", raw(c.CustomOracle), "a Python module; register a Go oracle instead")
	add("blackbox_custom_module", raw(c.BlackboxCustom), "a Python module")
	add("k8s_fields", raw(c.K8sFields), "a Python module; Gauntlet recognizes Kubernetes schemas itself")
	add("collect_coverage", raw(c.CollectCoverage), "Gauntlet measures property coverage, not code coverage")
	add("monkey_patch", raw(c.MonkeyPatch), "a Python module")
	add("context", raw(c.Context), "Gauntlet learns its own context")
	add("deploy.init", raw(c.Deploy.Init), "list the init manifests as deploy steps")
	add(fmt.Sprintf("deploy.method %q", c.Deploy.Method), c.Deploy.Method != "" && !strings.EqualFold(c.Deploy.Method, "YAML"), "deploy.file is applied as YAML manifests")
	return out
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
// become acto: masks in IgnoreFields (oracles.MaskActoPrefix: the regex searched
// in each field's DeepDiff path, as Acto does); focus_fields become the property
// restriction. Set fields Gauntlet does not honour are listed in Target.Warnings.
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
			if s.Apply.OperatorContainerName != nil {
				t.Warnings = append(t.Warnings, fmt.Sprintf("Acto config %s: deploy step %d: operator_container_name %q is not honoured (the operator's logs come from every container of its pod)", path, i+1, *s.Apply.OperatorContainerName))
			}
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
		t.IgnoreFields = append(t.IgnoreFields, oracles.MaskActoPrefix+f)
	}
	t.Warnings = append(t.Warnings, c.unhonoured()...)
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
