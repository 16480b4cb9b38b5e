package targets

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// testdataAbs returns the absolute path of a file under testdata.
func testdataAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(filepath.Join("testdata", p))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeTarget writes a target file into a copy-free folder next to the file
// fixtures (so relative paths resolve against testdata/file) and returns its path.
func writeTarget(t *testing.T, body string) string {
	t.Helper()
	f, err := os.CreateTemp(testdataAbs(t, "file"), "tmp-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

func names(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		n, _ := nestedString(o, "metadata", "name")
		k, _ := o["kind"].(string)
		out = append(out, k+"/"+n)
	}
	return out
}

func TestLoadTargetFile(t *testing.T) {
	dir := testdataAbs(t, "file")
	tg, err := Load(filepath.Join("testdata", "file", "widget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", tg.Name, "widget"},
		{"crd files (relative to the file)", tg.CRDFiles, []string{filepath.Join(dir, "crds", "widget.yaml")}},
		{"kind", tg.Kind, "Widget"},
		{"version", tg.Version, "v1"},
		{"seed", names([]map[string]any{tg.Seed}), []string{"Widget/small"}},
		{"examples (only the kind under test)", names(tg.Examples), []string{"Widget/second", "Widget/big"}},
		{"deploy manifests (relative)", tg.Deploy[0].Manifests, filepath.Join(dir, "deploy", "operator.yaml")},
		{"deploy namespace", tg.Deploy[0].Namespace, "widget-system"},
		{"deploy operator", tg.Deploy[0].Operator, true},
		{"deploy sleep", tg.Deploy[0].Sleep, 2 * time.Second},
		{"wait", tg.Deploy[0].Wait, []WaitCondition{
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "widget-system", Name: "widget-operator", Timeout: 90 * time.Second},
			{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.dev", Condition: "Established"},
		}},
		{"operator command (relative path resolved)", tg.Operator.Command, []string{filepath.Join(dir, "bin", "widget-operator"), "--leader-elect=false"}},
		{"operator labels", tg.Operator.Labels, map[string]string{"app": "widget-operator"}},
		{"operator image", tg.Operator.Image, "example/widget-operator:dev"},
		{"ignore fields", tg.IgnoreFields, []string{"metadata.annotations.example.dev/hash"}},
		{"values", tg.Values, map[string][]any{"spec.image": {"example/widget:1.0", "example/widget:2.0"}}},
		{"pod labels", tg.PodLabels, map[string]string{"app": "widget"}},
		{"properties", tg.Properties, []string{"spec.replicas"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	s, err := tg.Schema()
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	if s == nil {
		t.Fatal("schema is nil")
	}
	if !tg.WantsProperty("spec.replicas") || tg.WantsProperty("spec.image") {
		t.Errorf("WantsProperty does not follow properties %v", tg.Properties)
	}
}

func TestLoadTargetFileErrors(t *testing.T) {
	const good = "crds: [crds/widget.yaml]\nkind: Widget\nseed: seed/seed.yaml\ndeploy: [{manifests: deploy/operator.yaml}]\n"
	tests := []struct {
		name    string
		body    string
		wantErr error    // errors.Is target, when set
		want    []string // substrings of the message ("FILE" stands for the target file's path)
	}{
		{"unknown top-level field", good + "replicaz: 3\n", nil, []string{"FILE", `unknown field "replicaz"`}},
		{"unknown nested field", "crds: [crds/widget.yaml]\nkind: Widget\nseed: seed/seed.yaml\ndeploy: [{manifests: deploy/operator.yaml, namespaces: x}]\n",
			nil, []string{"FILE", `unknown field "namespaces"`}},
		{"unknown operator field", good + "operator: {img: x}\n", nil, []string{"FILE", `unknown field "img"`}},
		{"missing CRD file", strings.Replace(good, "crds/widget.yaml", "crds/nope.yaml", 1), nil,
			[]string{"FILE", "CRD file", filepath.Join("file", "crds", "nope.yaml"), "no such file"}},
		{"no CRD", strings.Replace(good, "crds: [crds/widget.yaml]\n", "", 1), ErrInvalidTarget, []string{"FILE", "CRD files"}},
		{"seed without the kind", strings.Replace(good, "seed/seed.yaml", "samples/other.yaml", 1), ErrInvalidTarget,
			[]string{"FILE", "holds no Widget object", filepath.Join("samples", "other.yaml")}},
		{"seed of another kind than declared", strings.Replace(good, "kind: Widget", "kind: Gadget", 1), ErrInvalidTarget,
			[]string{"FILE", "holds no Gadget object"}},
		{"no seed", strings.Replace(good, "seed: seed/seed.yaml\n", "", 1), ErrInvalidTarget, []string{"FILE", "no seed"}},
		{"missing seed file", strings.Replace(good, "seed/seed.yaml", "seed/nope.yaml", 1), nil, []string{"FILE", "nope.yaml"}},
		{"missing deploy manifests", strings.Replace(good, "deploy/operator.yaml", "deploy/nope.yaml", 1), nil,
			[]string{"FILE", "deploy step 1", "nope.yaml"}},
		{"no deploy and no command", strings.Replace(good, "deploy: [{manifests: deploy/operator.yaml}]\n", "", 1), ErrInvalidTarget,
			[]string{"FILE", "deploy steps or an operator command"}},
		{"empty manifests", strings.Replace(good, "{manifests: deploy/operator.yaml}", "{namespace: x}", 1), nil,
			[]string{"FILE", "deploy[0].manifests is empty"}},
		{"wait without name", strings.Replace(good, "{manifests: deploy/operator.yaml}", "{manifests: deploy/operator.yaml, wait: [{apiVersion: apps/v1, kind: Deployment}]}", 1), nil,
			[]string{"FILE", "deploy[0].wait[0] needs apiVersion, kind and name"}},
		{"wait without apiVersion", strings.Replace(good, "{manifests: deploy/operator.yaml}", "{manifests: deploy/operator.yaml, wait: [{kind: Deployment, name: x}]}", 1), nil,
			[]string{"FILE", "deploy[0].wait[0] needs apiVersion"}},
		{"wait with a bad timeout", strings.Replace(good, "{manifests: deploy/operator.yaml}", "{manifests: deploy/operator.yaml, wait: [{apiVersion: v1, kind: Pod, name: x, timeout: soon}]}", 1), nil,
			[]string{"FILE", "deploy[0].wait[0].timeout", "soon"}},
		{"wait with an unknown field", strings.Replace(good, "{manifests: deploy/operator.yaml}", "{manifests: deploy/operator.yaml, wait: [{apiVersion: v1, kind: Pod, name: x, for: ready}]}", 1), nil,
			[]string{"FILE", `unknown field "for"`}},
		{"bad sleep", strings.Replace(good, "{manifests: deploy/operator.yaml}", "{manifests: deploy/operator.yaml, sleep: 10}", 1), nil,
			[]string{"FILE", "deploy[0].sleep"}},
		{"not YAML", "crds: [\n", nil, []string{"FILE"}},
		{"reference without what it names", good + "references: [{path: spec.x}]\n", nil, []string{"FILE", "references[0]", "exactly one of kind"}},
		{"reference naming two things", good + "references: [{path: spec.x, kind: Secret, named: plugin}]\n", nil, []string{"FILE", "references[0]", "exactly one of kind"}},
		{"available names of nothing", good + "references: [{path: spec.x, kind: Secret, available: [a]}]\n", nil, []string{"FILE", "references[0]", "without saying what they name"}},
		{"reference without a path", good + "references: [{kind: Secret}]\n", nil, []string{"FILE", "references[0] needs a path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTarget(t, tt.body)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v is not %v", err, tt.wantErr)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "FILE", path)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadActoConfig(t *testing.T) {
	root := testdataAbs(t, "acto")
	data := filepath.Join(root, "data", "widget-operator")
	tests := []struct {
		name       string
		config     string
		wantName   string
		wantDeploy []DeployStep
		wantCRDs   []string
		wantIgnore []string
		wantProps  []string
		wantEx     []string
	}{
		{
			name: "steps with wait, examples, focus fields", config: "data/widget-operator/config.json", wantName: "widget-operator",
			wantDeploy: []DeployStep{
				{Manifests: filepath.Join(data, "cert-manager.yaml"), Sleep: 10 * time.Second},
				{Manifests: filepath.Join(data, "operator.yaml"), Operator: true},
			},
			wantCRDs:   []string{filepath.Join(data, "cert-manager.yaml"), filepath.Join(data, "operator.yaml")},
			wantIgnore: []string{`acto:\['metadata'\]\['annotations'\]\['example\.dev\/hash'\]`, `acto:\['status'\]\['lastReconcile'\]`},
			wantProps:  []string{"spec.replicas"},
			wantEx:     []string{"Widget/five"},
		},
		{
			name: "legacy single-file deploy", config: "data/legacy-operator/config.json", wantName: "legacy-operator",
			wantDeploy: []DeployStep{{Manifests: filepath.Join(data, "operator.yaml"), Operator: true}},
			wantCRDs:   []string{filepath.Join(data, "operator.yaml")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := Load(filepath.Join(root, tt.config))
			if err != nil {
				t.Fatal(err)
			}
			if tg.Name != tt.wantName || tg.Kind != "Widget" {
				t.Errorf("name %q kind %q, want %q Widget", tg.Name, tg.Kind, tt.wantName)
			}
			if got := names([]map[string]any{tg.Seed}); !reflect.DeepEqual(got, []string{"Widget/test-cluster"}) {
				t.Errorf("seed = %v", got)
			}
			if !reflect.DeepEqual(tg.Deploy, tt.wantDeploy) {
				t.Errorf("deploy = %+v, want %+v", tg.Deploy, tt.wantDeploy)
			}
			if !reflect.DeepEqual(tg.CRDFiles, tt.wantCRDs) {
				t.Errorf("CRD files = %v, want %v", tg.CRDFiles, tt.wantCRDs)
			}
			if !reflect.DeepEqual(tg.IgnoreFields, tt.wantIgnore) {
				t.Errorf("ignore fields = %v, want %v", tg.IgnoreFields, tt.wantIgnore)
			}
			if !reflect.DeepEqual(tg.Properties, tt.wantProps) {
				t.Errorf("properties = %v, want %v", tg.Properties, tt.wantProps)
			}
			if got := names(tg.Examples); !reflect.DeepEqual(got, tt.wantEx) {
				t.Errorf("examples = %v, want %v", got, tt.wantEx)
			}
			// The CRD is found among the deploy files (a Namespace-only file is skipped).
			if _, err := tg.Schema(); err != nil {
				t.Errorf("schema: %v", err)
			}
		})
	}
}

func TestLoadActoConfigErrors(t *testing.T) {
	const base = `"crd_name": "widgets.example.dev", "seed_custom_resource": "data/widget-operator/cr.yaml"`
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unknown field", `{"deploy": {"steps": [{"apply": {"file": "data/widget-operator/operator.yaml", "operator": true}}]}, ` + base + `, "crd_nmae": "x"}`,
			[]string{"FILE", `unknown field "crd_nmae"`}},
		{"unknown step field", `{"deploy": {"steps": [{"apply": {"file": "data/widget-operator/operator.yaml", "operater": true}}]}, ` + base + `}`,
			[]string{"FILE", `unknown field "operater"`}},
		{"wait first", `{"deploy": {"steps": [{"wait": {"duration": 5}}, {"apply": {"file": "data/widget-operator/operator.yaml"}}]}, ` + base + `}`,
			[]string{"FILE", "deploy step 1 waits before anything is applied"}},
		{"empty step", `{"deploy": {"steps": [{}]}, ` + base + `}`, []string{"FILE", "deploy step 1 is neither apply nor wait"}},
		{"missing deploy file", `{"deploy": {"steps": [{"apply": {"file": "data/widget-operator/nope.yaml"}}]}, ` + base + `}`,
			[]string{"FILE", "data/widget-operator/nope.yaml not found relative to the config's folder or any ancestor"}},
		{"missing seed", `{"deploy": {"steps": [{"apply": {"file": "data/widget-operator/operator.yaml"}}]}, "crd_name": "x", "seed_custom_resource": "data/nope.yaml"}`,
			[]string{"FILE", "data/nope.yaml not found"}},
	}
	dir := filepath.Join(testdataAbs(t, "acto"), "data", "widget-operator")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.CreateTemp(dir, "tmp-*.json")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(f.Name()) })
			if _, err := f.WriteString(tt.body); err != nil {
				t.Fatal(err)
			}
			f.Close()
			_, err = Load(f.Name())
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "FILE", f.Name())
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// containerImages returns the images of a workload's init containers and containers, in order.
func containerImages(obj map[string]any) []string {
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	var out []string
	for _, k := range []string{"initContainers", "containers"} {
		cs, _ := pod[k].([]any)
		for _, c := range cs {
			img, _ := c.(map[string]any)["image"].(string)
			out = append(out, img)
		}
	}
	return out
}

func TestRender(t *testing.T) {
	type obj struct{ kind, name, namespace string }
	tests := []struct {
		name       string
		manifests  string
		want       []obj
		wantImages []string
		wantErr    error
		wantMsg    []string
	}{
		{
			name: "kustomization: resources and images", manifests: "kustomize/base",
			want: []obj{{"CustomResourceDefinition", "widgets.example.dev", ""}, {"ServiceAccount", "widget-operator", ""},
				{"ClusterRole", "widget-operator", ""}, {"Deployment", "widget-operator", ""}},
			wantImages: []string{"busybox:1.36", "example/widget-operator:v2", "registry.local:5000/kube-rbac-proxy:v0.15"},
		},
		{
			name: "overlay: namespace, newName, digest, nested base", manifests: "kustomize/overlay",
			want: []obj{{"Namespace", "widget-system", ""}, {"CustomResourceDefinition", "widgets.example.dev", ""},
				{"ServiceAccount", "widget-operator", "widget-system"}, {"ClusterRole", "widget-operator", ""},
				{"Deployment", "widget-operator", "widget-system"}},
			wantImages: []string{"busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
				"example/widget-operator:v2", "mirror.local/kube-rbac-proxy:v0.15"},
		},
		{
			name: "plain directory: YAML files sorted, others ignored", manifests: "kustomize/plain",
			want:       []obj{{"Deployment", "widget-operator", "widget-system"}, {"ServiceAccount", "widget-operator", ""}, {"ClusterRole", "widget-operator", ""}},
			wantImages: []string{"example/widget-operator:dev"},
		},
		{
			name: "single file", manifests: "file/deploy/operator.yaml",
			want: []obj{{"Deployment", "widget-operator", "widget-system"}},
		},
		{
			// Rendered by kustomize itself: any feature, here a strategic-merge patch over a base.
			name: "patches over a base", manifests: "kustomize/patches",
			want: []obj{{"CustomResourceDefinition", "widgets.example.dev", ""}, {"ServiceAccount", "widget-operator", ""},
				{"ClusterRole", "widget-operator", ""}, {"Deployment", "widget-operator", ""}},
			// (the strategic merge puts the patched container first, as `kustomize build` does)
			wantImages: []string{"busybox:1.36", "registry.local:5000/kube-rbac-proxy:v0.16", "example/widget-operator:v2"},
		},
		{name: "remote resource", manifests: "kustomize/remote", wantErr: ErrKustomizeUnsupported,
			wantMsg: []string{"remote resource", "https://github.com/example/widget-operator", "kustomize build"}},
		{name: "broken patch", manifests: "kustomize/badpatch", wantMsg: []string{"kustomize build", "badpatch", "nope.yaml"}},
		{name: "missing path", manifests: "kustomize/nope", wantErr: os.ErrNotExist, wantMsg: []string{"nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(DeployStep{Manifests: testdataAbs(t, tt.manifests)})
			if tt.wantErr != nil || tt.wantMsg != nil {
				if err == nil {
					t.Fatalf("Render succeeded with %d objects, want an error", len(objs))
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v is not %v", err, tt.wantErr)
				}
				for _, w := range tt.wantMsg {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []obj
			var images []string
			for _, o := range objs {
				k, _ := o["kind"].(string)
				n, _ := nestedString(o, "metadata", "name")
				ns, _ := nestedString(o, "metadata", "namespace")
				got = append(got, obj{k, n, ns})
				if k == "Deployment" {
					images = containerImages(o)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("objects = %v, want %v", got, tt.want)
			}
			if tt.wantImages != nil && !reflect.DeepEqual(images, tt.wantImages) {
				t.Errorf("images = %v, want %v", images, tt.wantImages)
			}
		})
	}
}

func TestValkeyBuiltin(t *testing.T) {
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := Resolve("builtin:valkey", root)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Name != "valkey" || tg.Kind != "ValkeyCluster" || tg.Version != "v1alpha1" {
		t.Errorf("target %s kind %s version %s", tg.Name, tg.Kind, tg.Version)
	}
	if n, _ := nestedString(tg.Seed, "metadata", "name"); n != "cache" {
		t.Errorf("seed is %q, want the sample cache", n)
	}
	tuned := false
	for _, e := range tg.Examples {
		if n, _ := nestedString(e, "metadata", "name"); n == "tuned" {
			tuned = true
		}
		if k, _ := e["kind"].(string); k != "ValkeyCluster" {
			t.Errorf("example of kind %s", k)
		}
	}
	if !tuned {
		t.Errorf("examples %v miss operator/config/samples/valkeycluster-tuned.yaml", names(tg.Examples))
	}
	s, err := tg.Schema()
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	if s == nil {
		t.Fatal("nil schema")
	}
	if _, err := Builtin(root, "nope"); err == nil || !strings.Contains(err.Error(), "valkey") {
		t.Errorf("unknown built-in: %v", err)
	}
	if _, err := Valkey(t.TempDir()); err == nil {
		t.Error("Valkey loaded from a folder without the repository")
	}
	// The deploy manifests render, and every wait condition names a rendered object.
	if len(tg.Deploy) != 1 || !tg.Deploy[0].Operator {
		t.Fatalf("deploy = %+v", tg.Deploy)
	}
	objs, err := Render(tg.Deploy[0])
	if err != nil {
		t.Fatalf("render %s: %v", tg.Deploy[0].Manifests, err)
	}
	rendered := map[string]map[string]any{}
	for _, o := range objs {
		k, _ := o["kind"].(string)
		n, _ := nestedString(o, "metadata", "name")
		ns, _ := nestedString(o, "metadata", "namespace")
		rendered[k+"/"+ns+"/"+n] = o
	}
	for _, w := range tg.Deploy[0].Wait {
		if rendered[w.Kind+"/"+w.Namespace+"/"+w.Name] == nil {
			t.Errorf("wait condition %s %s/%s names no rendered object (rendered %d objects)", w.Kind, w.Namespace, w.Name, len(objs))
		}
	}
	for _, want := range []string{"CustomResourceDefinition//valkeyclusters.valkey.gauntlet.dev", "CustomResourceDefinition//valkeybackups.valkey.gauntlet.dev",
		"Namespace//valkey-operator-system", "ServiceAccount/valkey-operator-system/valkey-operator"} {
		if rendered[want] == nil {
			t.Errorf("rendered manifests miss %s", want)
		}
	}
	dep := rendered["Deployment/valkey-operator-system/valkey-operator"]
	if imgs := containerImages(dep); !reflect.DeepEqual(imgs, []string{tg.Operator.Image}) {
		t.Errorf("operator Deployment images %v, want [%s]", imgs, tg.Operator.Image)
	}
	labels, _ := dep["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	for k, v := range tg.Operator.Labels {
		if labels[k] != v {
			t.Errorf("operator pods lack label %s=%s (they have %v): the operator selector finds nothing", k, v, labels)
		}
	}
	// The seed CR is a valid instance for the CRD kind.
	if _, err := crd.LoadFile(tg.CRDFiles[0]); err != nil {
		t.Errorf("CRD: %v", err)
	}
}
