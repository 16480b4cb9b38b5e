package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// fileSpec is the YAML target file format. Paths are relative to the file.
//
//	name: my-operator
//	crds: [config/crd/bases/foo.yaml]  # paths may use ${VAR} (GAUNTLET_CACHE_DIR: the cache folder)
//	kind: Foo
//	version: v1            # default: the storage version
//	seed: samples/foo.yaml # the first object of the kind is the seed
//	examples: [samples/]   # files or directories mined for values
//	deploy:
//	- manifests: config/default   # file, directory or kustomization directory
//	  namespace: foo-system
//	  operator: true
//	  wait: [{apiVersion: apps/v1, kind: Deployment, namespace: foo-system, name: foo}]
//	operator: {image: example/foo:dev, namespace: foo-system, labels: {app: foo}}
//	ignoreFields: [metadata.annotations.foo/hash]
//	dependencies: [...]    # inputgen.Dependency
//	values: {spec.image: [example/foo:1, example/foo:2]}
//	properties: [spec.replicas]
//	differentialMasks: [PersistentVolumeClaim/data-*] # state kept by design depending on history
//	fixtures: [samples/secret.yaml] # created in every test namespace before the seed
//	references: [{path: spec.backup.claim, kind: PersistentVolumeClaim}, {path: spec.secretName, creates: true},
//	             {path: "spec.plugins[].name", named: plugin, available: [barman]}] # naming another: a misoperation
//	oracleConfig: {skip: [spec.tls.commonName]} # oracles.Config: tunes the standard oracles
//	imageMapping:          # how images run on the embedded cluster (an image-mapping file's content)
//	  rules:
//	  - images: ["example/foo:*"]
//	    entrypoint: [/manager]
//	    programs: {/manager: ["${GAUNTLET_CACHE_DIR}/foo/manager", ../bin/manager]}
type fileSpec struct {
	Name         string                `json:"name"`
	CRDs         []string              `json:"crds"`
	Kind         string                `json:"kind"`
	Version      string                `json:"version,omitempty"`
	Seed         string                `json:"seed"`
	Examples     []string              `json:"examples,omitempty"`
	Deploy       []fileDeployStep      `json:"deploy,omitempty"`
	Operator     fileOperator          `json:"operator,omitempty"`
	IgnoreFields []string              `json:"ignoreFields,omitempty"`
	Dependencies []inputgen.Dependency `json:"dependencies,omitempty"`
	Values       map[string][]any      `json:"values,omitempty"`
	PodLabels    map[string]string     `json:"podLabels,omitempty"`
	Properties   []string              `json:"properties,omitempty"`
	Fixtures     []string              `json:"fixtures,omitempty"`
	DiffMasks    []string              `json:"differentialMasks,omitempty"`
	References   []Reference           `json:"references,omitempty"`
	ImageMapping *imagemap.File        `json:"imageMapping,omitempty"`
	OracleConfig *oracles.Config       `json:"oracleConfig,omitempty"`
}

type fileDeployStep struct {
	Manifests string     `json:"manifests"`
	Namespace string     `json:"namespace,omitempty"`
	Operator  bool       `json:"operator,omitempty"`
	Wait      []fileWait `json:"wait,omitempty"`
	Sleep     string     `json:"sleep,omitempty"`
}

type fileWait struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Condition  string `json:"condition,omitempty"`
	Timeout    string `json:"timeout,omitempty"`
}

type fileOperator struct {
	Image     string            `json:"image,omitempty"`
	Command   []string          `json:"command,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// expandPaths replaces ${VAR} and $VAR in the file's paths (CRDs, seed,
// examples, deploy manifests, fixtures, the operator command's program) by the
// environment variable's value, GAUNTLET_CACHE_DIR defaulting to Gauntlet's
// cache folder, so that a target can name what `make` built there (the
// cert-manager example's CRDs). A path that names a variable and does not exist
// is an error saying it is a build output to build first.
func (spec *fileSpec) expandPaths(dir string) error {
	one := func(field string, p *string) error {
		if !strings.Contains(*p, "$") {
			return nil
		}
		v, err := imagemap.ExpandEnv(*p)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if _, err := os.Stat(abs(dir, v)); err != nil {
			return fmt.Errorf("%s %s (%s) does not exist: it names a build output, build it first (the cert-manager example: `make certmanager`): %w", field, *p, v, err)
		}
		*p = v
		return nil
	}
	var err error
	for i := range spec.CRDs {
		err = errors.Join(err, one("crds", &spec.CRDs[i]))
	}
	err = errors.Join(err, one("seed", &spec.Seed))
	for i := range spec.Examples {
		err = errors.Join(err, one("examples", &spec.Examples[i]))
	}
	for i := range spec.Deploy {
		err = errors.Join(err, one("deploy manifests", &spec.Deploy[i].Manifests))
	}
	for i := range spec.Fixtures {
		err = errors.Join(err, one("fixtures", &spec.Fixtures[i]))
	}
	if len(spec.Operator.Command) > 0 {
		err = errors.Join(err, one("operator command", &spec.Operator.Command[0]))
	}
	return err
}

// parseFile decodes a YAML target file strictly (an unknown field is an error
// naming the field and the file) and resolves paths against its folder.
func parseFile(path string, data []byte) (*Target, error) {
	var spec fileSpec
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		return nil, fmt.Errorf("target file %s: %w (see `go doc targets.fileSpec` for the format)", path, err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	if err := spec.expandPaths(dir); err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	t := &Target{
		Name:              spec.Name,
		Source:            path,
		Kind:              spec.Kind,
		Version:           spec.Version,
		IgnoreFields:      spec.IgnoreFields,
		Dependencies:      spec.Dependencies,
		Values:            spec.Values,
		PodLabels:         spec.PodLabels,
		Properties:        spec.Properties,
		Fixtures:          absAll(dir, spec.Fixtures),
		DifferentialMasks: spec.DiffMasks,
		References:        spec.References,
		Operator: Operator{
			Image:     spec.Operator.Image,
			Namespace: spec.Operator.Namespace,
			Labels:    spec.Operator.Labels,
		},
	}
	if t.Name == "" {
		t.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	for i, r := range spec.References {
		if why := r.check(); why != "" {
			return nil, fmt.Errorf("target file %s: references[%d] %s", path, i, why)
		}
	}
	if spec.OracleConfig != nil {
		if err := spec.OracleConfig.Validate(); err != nil {
			return nil, fmt.Errorf("target file %s: oracleConfig: %w", path, err)
		}
		t.OracleConfig = *spec.OracleConfig
	}
	if spec.ImageMapping != nil {
		rules, err := imagemap.Expand(spec.ImageMapping.Rules, dir)
		if err != nil {
			return nil, fmt.Errorf("target file %s: imageMapping: %w", path, err)
		}
		if err := imagemap.Validate(rules, "imageMapping"); err != nil {
			return nil, fmt.Errorf("target file %s: %w", path, err)
		}
		t.ImageMapping = rules
	}
	for _, c := range spec.CRDs {
		t.CRDFiles = append(t.CRDFiles, abs(dir, c))
	}
	if len(spec.Operator.Command) > 0 {
		t.Operator.Command = append([]string(nil), spec.Operator.Command...)
		if strings.ContainsRune(t.Operator.Command[0], '/') {
			t.Operator.Command[0] = abs(dir, t.Operator.Command[0])
		}
	}
	for i, d := range spec.Deploy {
		step := DeployStep{Manifests: abs(dir, d.Manifests), Namespace: d.Namespace, Operator: d.Operator}
		if d.Manifests == "" {
			return nil, fmt.Errorf("target file %s: deploy[%d].manifests is empty: name a file or directory", path, i)
		}
		if d.Sleep != "" {
			if step.Sleep, err = time.ParseDuration(d.Sleep); err != nil {
				return nil, fmt.Errorf("target file %s: deploy[%d].sleep: %w", path, i, err)
			}
		}
		for j, w := range d.Wait {
			wc := WaitCondition{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Condition: w.Condition}
			if w.Kind == "" || w.Name == "" || w.APIVersion == "" {
				return nil, fmt.Errorf("target file %s: deploy[%d].wait[%d] needs apiVersion, kind and name", path, i, j)
			}
			if w.Timeout != "" {
				if wc.Timeout, err = time.ParseDuration(w.Timeout); err != nil {
					return nil, fmt.Errorf("target file %s: deploy[%d].wait[%d].timeout: %w", path, i, j, err)
				}
			}
			step.Wait = append(step.Wait, wc)
		}
		t.Deploy = append(t.Deploy, step)
	}
	if spec.Seed == "" {
		return nil, fmt.Errorf("target file %s: no seed: name the seed CR file: %w", path, ErrInvalidTarget)
	}
	if err := t.loadSeedAndExamples(abs(dir, spec.Seed), absAll(dir, spec.Examples)); err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	return t, nil
}

func absAll(dir string, ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, abs(dir, p))
	}
	return out
}

// loadSeedAndExamples picks the seed (the first object of the kind, or the first
// object when Kind is unset, which then sets Kind) and mines examples from files
// and directories.
func (t *Target) loadSeedAndExamples(seedPath string, examples []string) error {
	objs, err := inputgen.LoadObjects(seedPath)
	if err != nil {
		return fmt.Errorf("seed %s: %w", seedPath, err)
	}
	for i, o := range objs {
		k, _ := o["kind"].(string)
		if t.Kind == "" || k == t.Kind {
			t.Seed = o
			if t.Kind == "" {
				t.Kind = k
			}
			for _, e := range objs[i+1:] {
				// Other objects of the kind are examples; objects of other kinds (a Secret the
				// seed needs) are not CRs to mine.
				if ek, _ := e["kind"].(string); ek == t.Kind {
					t.Examples = append(t.Examples, e)
				}
			}
			break
		}
	}
	if t.Seed == nil {
		return fmt.Errorf("seed %s holds no %s object: %w", seedPath, t.Kind, ErrInvalidTarget)
	}
	for _, e := range examples {
		files, err := yamlFiles(e)
		if err != nil {
			return fmt.Errorf("examples: %w", err)
		}
		for _, f := range files {
			objs, err := inputgen.LoadObjects(f)
			if err != nil {
				return fmt.Errorf("example %s: %w", f, err)
			}
			for _, o := range objs {
				if k, _ := o["kind"].(string); k == t.Kind {
					t.Examples = append(t.Examples, o)
				}
			}
		}
	}
	return nil
}

// yamlFiles lists p itself when it is a file, or the YAML/JSON files of directory p (sorted, not recursive).
func yamlFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json")) {
			continue
		}
		if n == "kustomization.yaml" || n == "kustomization.yml" || n == "Kustomization" {
			continue
		}
		out = append(out, filepath.Join(p, n))
	}
	sort.Strings(out)
	return out, nil
}
