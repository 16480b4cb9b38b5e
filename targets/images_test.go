package targets

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTargetFileImageMapping(t *testing.T) {
	const good = "crds: [crds/widget.yaml]\nkind: Widget\nseed: seed/seed.yaml\ndeploy: [{manifests: deploy/operator.yaml}]\n"
	t.Setenv("GAUNTLET_CACHE_DIR", "/cache")
	t.Setenv("WIDGET_HOME", "/opt/widget")
	body := good + `imageMapping:
  rules:
  - name: widget
    images: ["example/widget-operator:*"]
    entrypoint: [/manager]
    programs:
      /manager: ["${GAUNTLET_CACHE_DIR}/widget/manager", $WIDGET_HOME/manager, bin/manager, widget-manager]
  - images: ["example/metrics:*"]
    simulate: true
`
	tg, err := Load(writeTarget(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.ImageMapping) != 2 {
		t.Fatalf("imageMapping has %d rules, want 2", len(tg.ImageMapping))
	}
	want := []string{"/cache/widget/manager", "/opt/widget/manager", filepath.Join(testdataAbs(t, "file"), "bin", "manager"), "widget-manager"}
	if got := tg.ImageMapping[0].Programs["/manager"]; !reflect.DeepEqual(got, want) {
		t.Errorf("program candidates = %q, want %q (variables expanded, relative paths against the file's folder, bare names kept)", got, want)
	}
	if !tg.ImageMapping[1].Simulate || tg.ImageMapping[0].Name != "widget" {
		t.Errorf("rules decoded as %+v", tg.ImageMapping)
	}

	errs := []struct{ name, body, want string }{
		{"unknown rule field", good + "imageMapping: {rules: [{images: [a], entrypint: [x]}]}\n", `unknown field "entrypint"`},
		{"rules at the top", good + "imageMapping: [{images: [a], cmd: [x]}]\n", "imageMapping"},
		{"invalid rule", good + "imageMapping: {rules: [{cmd: [x]}]}\n", `"images" is empty`},
		{"unset variable", good + "imageMapping: {rules: [{images: [a], programs: {/m: [$NOPE_NOT_SET/m]}}]}\n", "NOPE_NOT_SET"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTarget(t, tt.body)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %q and the file", err, tt.want)
			}
		})
	}
}

func TestImages(t *testing.T) {
	tg, err := Load(filepath.Join("testdata", "file", "widget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tg.Images()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example/widget-operator:dev"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Images() = %q, want %q", got, want)
	}
	seen := map[string]bool{}
	collectImages(map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"initContainers": []any{map[string]any{"image": "init:1"}},
		"containers":     []any{map[string]any{"image": "main:1"}, map[string]any{"name": "no-image"}},
	}}}}}}, func(s string) { seen[s] = true })
	if !reflect.DeepEqual(seen, map[string]bool{"init:1": true, "main:1": true}) {
		t.Errorf("images of a CronJob = %v", seen)
	}
}

func TestTargetFilePathVariables(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("GAUNTLET_CACHE_DIR", cache)
	crd := filepath.Join(testdataAbs(t, "file"), "crds", "widget.yaml")
	body := "crds: [\"${GAUNTLET_CACHE_DIR}/crds/widget.yaml\"]\nkind: Widget\nseed: seed/seed.yaml\ndeploy: [{manifests: deploy/operator.yaml}]\n"
	_, err := Load(writeTarget(t, body))
	if err == nil || !strings.Contains(err.Error(), "build it first") || !strings.Contains(err.Error(), cache) {
		t.Fatalf("a missing build output: error %v, want one saying to build it and naming the expanded path", err)
	}
	t.Setenv("GAUNTLET_CACHE_DIR", filepath.Dir(filepath.Dir(crd)))
	tg, err := Load(writeTarget(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tg.CRDFiles, []string{crd}) {
		t.Errorf("CRD files = %q, want %q", tg.CRDFiles, crd)
	}
}

func TestTargetFileOracleConfig(t *testing.T) {
	const good = "crds: [crds/widget.yaml]\nkind: Widget\nseed: seed/seed.yaml\ndeploy: [{manifests: deploy/operator.yaml}]\n"
	tg, err := Load(writeTarget(t, good+"oracleConfig: {skip: [spec.tls.commonName], failurePhases: [Broken]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tg.OracleConfig.Skip, []string{"spec.tls.commonName"}) || !reflect.DeepEqual(tg.OracleConfig.FailurePhases, []string{"Broken"}) {
		t.Errorf("oracleConfig = %+v", tg.OracleConfig)
	}
	for body, want := range map[string]string{
		good + "oracleConfig: {skipp: [x]}\n":         `unknown field "skipp"`,
		good + "oracleConfig: {logPatterns: ['(']}\n": "log pattern",
	} {
		path := writeTarget(t, body)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("error %v does not name %q and the file", err, want)
		}
	}
}
