package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/inputgen"
)

// ErrKustomizeUnsupported is returned for kustomization features the built-in
// renderer does not implement: render the directory with `kustomize build` into
// a file and name that file instead.
var ErrKustomizeUnsupported = errors.New("kustomization uses a feature the built-in renderer does not support (resources, namespace and images are supported): render it with `kustomize build DIR > FILE` and deploy FILE")

// kustomization is the subset of kustomize.config.k8s.io/v1beta1 Kustomization
// the renderer implements; other fields are rejected by strict decoding.
type kustomization struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Bases      []string `json:"bases,omitempty"`
	Namespace  string   `json:"namespace,omitempty"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// Render returns the objects a deploy step applies, in file order: a file, every
// YAML/JSON file of a directory (sorted), or a kustomization directory (resources,
// namespace and images). Namespaced objects without a namespace get step.Namespace
// when set (the campaign decides which kinds are namespaced).
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
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		kf := filepath.Join(p, name)
		if data, err := os.ReadFile(kf); err == nil {
			return renderKustomization(p, kf, data, depth)
		}
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

func renderKustomization(dir, file string, data []byte, depth int) ([]map[string]any, error) {
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", file, err, ErrKustomizeUnsupported)
	}
	var out []map[string]any
	for _, r := range append(append([]string(nil), k.Bases...), k.Resources...) {
		if strings.Contains(r, "://") || strings.HasPrefix(r, "github.com/") {
			return nil, fmt.Errorf("%s: remote resource %q: %w", file, r, ErrKustomizeUnsupported)
		}
		objs, err := renderPath(filepath.Join(dir, r), depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	for _, o := range out {
		if k.Namespace != "" {
			md, _ := o["metadata"].(map[string]any)
			if md == nil {
				md = map[string]any{}
				o["metadata"] = md
			}
			if kind, _ := o["kind"].(string); kind == "Namespace" || kind == "CustomResourceDefinition" || strings.HasPrefix(kind, "Cluster") {
				// cluster-scoped kinds keep their identity (kustomize does the same for these)
			} else {
				md["namespace"] = k.Namespace
			}
		}
		for _, img := range k.Images {
			rewriteImages(o, img.Name, img.NewName, img.NewTag, img.Digest)
		}
	}
	return out, nil
}

// rewriteImages rewrites every container image named name (with any tag) in a
// workload's pod template (or a Pod).
func rewriteImages(obj map[string]any, name, newName, newTag, digest string) {
	var visit func(v any)
	visit = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if (k == "containers" || k == "initContainers") && isList(c) {
					for _, ct := range c.([]any) {
						cm, ok := ct.(map[string]any)
						if !ok {
							continue
						}
						img, _ := cm["image"].(string)
						if img == "" {
							continue
						}
						repo, tag := splitImage(img)
						if repo != name {
							continue
						}
						if newName != "" {
							repo = newName
						}
						switch {
						case digest != "":
							cm["image"] = repo + "@" + digest
						case newTag != "":
							cm["image"] = repo + ":" + newTag
						case tag != "":
							cm["image"] = repo + tag
						default:
							cm["image"] = repo
						}
					}
					continue
				}
				visit(c)
			}
		case []any:
			for _, c := range x {
				visit(c)
			}
		}
	}
	visit(obj)
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// splitImage splits "repo[:tag|@digest]" into repo and the suffix (":tag" or "@digest").
func splitImage(img string) (string, string) {
	if i := strings.Index(img, "@"); i >= 0 {
		return img[:i], img[i:]
	}
	slash := strings.LastIndex(img, "/")
	if i := strings.LastIndex(img, ":"); i > slash {
		return img[:i], img[i:]
	}
	return img, ""
}
