// Package targets describes an operator under test: its CRD, seed and example
// custom resources, how to deploy it, how to find its pods, which fields vary by
// nature, declared predicates, value pools and custom oracles. A target comes
// from a strict YAML target file, from Acto's operator config JSON, or is built
// in (the bundled Valkey operator). Targets describe; they never run anything.
package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/monitors"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// ErrInvalidTarget is returned when a target misses something a campaign needs
// (a CRD, a kind, a seed CR): every target must say what to test and from where.
var ErrInvalidTarget = errors.New("invalid target: a target needs CRD files, the kind under test and a seed CR")

// Target is an operator under test.
type Target struct {
	// Name identifies the target in results ("valkey", or the target file's name).
	Name string `json:"name"`
	// Source is where the target was loaded from ("builtin:valkey", a file path).
	Source string `json:"source"`
	// CRDFiles hold the CRDs (absolute paths); the one serving Kind is tested.
	CRDFiles []string `json:"crdFiles"`
	// Kind and Version select the CRD version under test (Version empty: the seed's own served
	// version, else the storage version).
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	// Seed is the seed CR D0 (metadata.name set; namespace is the campaign's).
	Seed map[string]any `json:"seed"`
	// Examples are example CRs mined for values.
	Examples []map[string]any `json:"-"`
	// Deploy lists the steps that install the operator, in order.
	Deploy []DeployStep `json:"deploy"`
	// Operator says how the operator runs and how to find it.
	Operator Operator `json:"operator"`
	// IgnoreFields are masks (oracles.Mask's forms) for fields whose values vary by nature
	// (added to learned masks).
	IgnoreFields []string `json:"ignoreFields,omitempty"`
	// Warnings name what the target's source declares and Gauntlet does not honour
	// (an Acto config's Python modules, node count, …); the campaign logs each.
	Warnings []string `json:"warnings,omitempty"`
	// Dependencies are declared predicates for sub-trees of the CR.
	Dependencies []inputgen.Dependency `json:"dependencies,omitempty"`
	// Values are candidate values by property path (e.g. "spec.image").
	Values map[string][]any `json:"values,omitempty"`
	// PodLabels select the operand's pods in affinity scenarios.
	PodLabels map[string]string `json:"podLabels,omitempty"`
	// Properties, when set, restrict the plan to test cases targeting these property paths
	// (or paths below them).
	Properties []string `json:"properties,omitempty"`
	// DifferentialMasks are masks the differential oracle alone applies: state the operator
	// keeps by design depending on history (volumes retained after a scale-down).
	DifferentialMasks []string `json:"differentialMasks,omitempty"`
	// Fixtures are manifests (files or directories) created in every test namespace before
	// the seed: the objects the CR refers to, such as a password Secret.
	Fixtures []string `json:"fixtures,omitempty"`
	// ImageMapping are image-mapping rules for the embedded cluster (how the operator's
	// and its operands' images run), tried after a --image-mapping file's and before the
	// shipped defaults. Program paths are absolute (a target file's are expanded).
	ImageMapping []imagemap.Rule `json:"imageMapping,omitempty"`
	// References are CR paths whose value names an object in the test namespace, in
	// addition to those References infers from field names (secretName, passwordSecret.name, …).
	// A desired state naming an object that does not exist is run as a misoperation.
	References []Reference `json:"references,omitempty"`
	// SystemMonitor reads the managed system's internal state (roles, replication,
	// effective config) at every snapshot and while transitions run; nil: none.
	SystemMonitor monitors.SystemMonitor `json:"-"`
	// Workload runs through every transition recording each request (availability and
	// durability); nil: none.
	Workload monitors.Workload `json:"-"`
	// Oracles are custom Go oracles registered in code.
	Oracles []oracles.Oracle `json:"-"`
	// OracleConfig tunes the standard oracles for this operator (consistency skips and
	// mappings, map-valued properties, failure conditions, extra masks). The operator
	// selector defaults to Operator.Labels.
	OracleConfig oracles.Config `json:"oracleConfig,omitempty"`
}

// DeployStep installs part of the operator.
type DeployStep struct {
	// Manifests is a YAML/JSON file, a directory of them, or a kustomization directory
	// (absolute path). A rendered Helm chart is a directory of manifests.
	Manifests string `json:"manifests"`
	// Namespace is given to namespaced objects that have none.
	Namespace string `json:"namespace,omitempty"`
	// Operator marks the step that deploys the operator itself.
	Operator bool `json:"operator,omitempty"`
	// Wait lists conditions that must hold before the next step.
	Wait []WaitCondition `json:"wait,omitempty"`
	// Sleep is an unconditional pause after the step (Acto's "wait" steps).
	Sleep time.Duration `json:"sleep,omitempty"`
}

// WaitCondition waits for one object to be ready.
type WaitCondition struct {
	// APIVersion and Kind of the object (e.g. apps/v1 Deployment).
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Condition is a status condition type that must be True; empty means "ready" as the
	// campaign judges workloads (Deployments available, StatefulSets rolled out, CRDs established).
	Condition string `json:"condition,omitempty"`
	// Timeout bounds the wait (default 3m).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Operator says how the operator runs.
type Operator struct {
	// Image is the operator's image, informative for the embedded cluster's image mapping.
	Image string `json:"image,omitempty"`
	// Command runs the operator out of cluster instead of from the deploy steps' Deployment;
	// it gets KUBECONFIG in its environment. Relative paths are resolved against the target file.
	Command []string `json:"command,omitempty"`
	// Namespace and Labels select the operator's pods (for logs and restarts).
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Schema loads the CRD version under test.
func (t *Target) Schema() (*crd.Schema, error) {
	if len(t.CRDFiles) == 0 || t.Kind == "" {
		return nil, fmt.Errorf("target %s: %w", t.Name, ErrInvalidTarget)
	}
	var all = []string{}
	for _, f := range t.CRDFiles {
		all = append(all, f)
	}
	for _, f := range all {
		crds, err := crd.LoadFile(f)
		if errors.Is(err, crd.ErrNoCRD) {
			continue // a deploy file without CRDs (Acto targets take CRDs from every deploy file)
		}
		if err != nil {
			return nil, fmt.Errorf("target %s: CRD file %s: %w", t.Name, f, err)
		}
		def, err := crd.Select(crds, t.Kind)
		if errors.Is(err, crd.ErrKindNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("target %s: %s: %w", t.Name, f, err)
		}
		// The seed's own served version unless the target names one.
		av, _ := t.Seed["apiVersion"].(string)
		s, err := crd.NewSchemaForObject(def, t.Version, av)
		if err != nil {
			return nil, fmt.Errorf("target %s: %s: %w", t.Name, f, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("target %s: no CRD file serves kind %s: %w", t.Name, t.Kind, crd.ErrKindNotFound)
}

// Validate checks that the target has what a campaign needs.
func (t *Target) Validate() error {
	var missing []string
	if len(t.CRDFiles) == 0 {
		missing = append(missing, "CRD files")
	}
	if t.Kind == "" {
		missing = append(missing, "kind")
	}
	if t.Seed == nil {
		missing = append(missing, "seed CR")
	}
	if len(t.Deploy) == 0 && len(t.Operator.Command) == 0 {
		missing = append(missing, "deploy steps or an operator command")
	}
	if len(missing) > 0 {
		return fmt.Errorf("target %s misses %s: %w", t.Name, strings.Join(missing, ", "), ErrInvalidTarget)
	}
	if name, _ := nestedString(t.Seed, "metadata", "name"); name == "" {
		return fmt.Errorf("target %s: the seed CR has no metadata.name: %w", t.Name, ErrInvalidTarget)
	}
	for _, f := range t.CRDFiles {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("target %s: CRD file: %w", t.Name, err)
		}
	}
	for _, f := range t.Fixtures {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("target %s: fixture: %w", t.Name, err)
		}
	}
	for i, d := range t.Deploy {
		if _, err := os.Stat(d.Manifests); err != nil {
			return fmt.Errorf("target %s: deploy step %d: %w", t.Name, i+1, err)
		}
	}
	if err := oracles.ValidateMasks(t.IgnoreFields); err != nil {
		return fmt.Errorf("target %s: ignored fields: %w", t.Name, err)
	}
	if err := oracles.ValidateMasks(t.DifferentialMasks); err != nil {
		return fmt.Errorf("target %s: differential masks: %w", t.Name, err)
	}
	return nil
}

// AddOracle registers a custom oracle (a Go function judging each transition).
func (t *Target) AddOracle(name string, fn oracles.Func) {
	fn.OracleName = name
	t.Oracles = append(t.Oracles, fn)
}

// WantsProperty reports whether a test case targeting property path p is in the
// target's property restriction (always true without one).
func (t *Target) WantsProperty(p string) bool {
	if len(t.Properties) == 0 {
		return true
	}
	for _, want := range t.Properties {
		if p == want || strings.HasPrefix(p, want+".") || strings.HasPrefix(p, want+"[") || strings.HasPrefix(p, want+"{") {
			return true
		}
	}
	return false
}

// Load reads a target file: Acto's operator config when the file is JSON with a
// "deploy" and "crd_name" (or "seed_custom_resource"), Gauntlet's YAML target format otherwise.
func Load(path string) (*Target, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read target file: %w", err)
	}
	if strings.HasSuffix(path, ".json") && isActoConfig(data) {
		return parseActo(path, data)
	}
	return parseFile(path, data)
}

func abs(base, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

func nestedString(obj map[string]any, path ...string) (string, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok
}

// FindRepoRoot walks up from dir to the folder whose go.mod declares the
// Gauntlet module (where the built-in targets' files live).
func FindRepoRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/gauntlet-dev/gauntlet\n") {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no Gauntlet repository above %s: run from the repository or pass --repo", dir)
		}
		d = filepath.Dir(d)
	}
}

// Resolve returns the built-in target name, "builtin:name", or loads a target file.
func Resolve(spec, repoRoot string) (*Target, error) {
	name := strings.TrimPrefix(spec, "builtin:")
	for _, b := range BuiltinNames {
		if name == b {
			return Builtin(repoRoot, name)
		}
	}
	return Load(spec)
}
