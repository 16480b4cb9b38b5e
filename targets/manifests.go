package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/inputgen"
)

// ErrKustomizeUnsupported is returned for a kustomization that names a remote
// resource (Gauntlet renders offline): render it with `kustomize build` into a
// file and name that file instead.
var ErrKustomizeUnsupported = errors.New("kustomization names a remote resource, which the built-in renderer does not fetch: render it with `kustomize build DIR > FILE` and deploy FILE")

// Render returns the objects a deploy step applies, in file order: a file, every
// YAML/JSON file of a directory (sorted), or a kustomization directory built by
// kustomize itself (sigs.k8s.io/kustomize/api/krusty, in resource order, files
// outside the kustomization's folder allowed, no plugins, no remote resources).
// Namespaced objects without a namespace get step.Namespace when set (the
// campaign decides which kinds are namespaced).
func Render(step DeployStep) ([]map[string]any, error) {
	objs, err := renderPath(step.Manifests, 0)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", step.Manifests, err)
	}
	return objs, nil
}

func renderPath(p string, depth int) ([]map[string]any, error) {
	if depth > 20 {
		return nil, fmt.Errorf("kustomization resources nest deeper than 20 levels at %s (a cycle?)", p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		objs, err := inputgen.LoadObjects(p)
		if errors.Is(err, inputgen.ErrNoObject) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return objs, nil
	}
	if kf := kustomizationFile(p); kf != "" {
		return renderKustomization(p, kf)
	}
	files, err := yamlFiles(p)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, f := range files {
		objs, err := renderPath(f, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// kustomizationFile is the kustomization file of directory dir, or "".
func kustomizationFile(dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		kf := filepath.Join(dir, name)
		if st, err := os.Stat(kf); err == nil && !st.IsDir() {
			return kf
		}
	}
	return ""
}

// renderKustomization builds the kustomization in dir with kustomize.
func renderKustomization(dir, file string) ([]map[string]any, error) {
	if err := refuseRemote(dir, file, 0); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []map[string]any
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// refuseRemote walks the kustomization in dir (file) and those its resources,
// bases and components name, and refuses a remote one: kustomize would try to
// clone it.
func refuseRemote(dir, file string, depth int) error {
	if depth > 20 {
		return fmt.Errorf("kustomization resources nest deeper than 20 levels at %s (a cycle?)", dir)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, r := range slices.Concat(k.Bases, k.Resources, k.Components) {
		if strings.Contains(r, "://") || strings.HasPrefix(r, "github.com/") || strings.HasPrefix(r, "git@") {
			return fmt.Errorf("%s: remote resource %q: %w", file, r, ErrKustomizeUnsupported)
		}
		sub := filepath.Join(dir, r)
		if kf := kustomizationFile(sub); kf != "" {
			if err := refuseRemote(sub, kf, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
