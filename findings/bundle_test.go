package findings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/model"
)

// TestBundles loads every bundle of the repository: finding.yaml decoded
// strictly, its statuses from the allowed sets, every file it names present,
// reproduce.sh executable, the reproducer equal to what the manifests make,
// and no YAML file in a bundle that nothing names.
func TestBundles(t *testing.T) {
	bs, err := Discover(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) < 7 {
		t.Fatalf("%d bundles; want at least the seven findings", len(bs))
	}
	for _, b := range bs {
		named := append(append([]string{MetaFile}, b.Meta.Fixtures...), b.Meta.Controls...)
		for _, s := range b.Meta.Steps {
			named = append(named, s.File)
		}
		yamls, _ := filepath.Glob(filepath.Join(b.Dir, "*.yaml"))
		for _, y := range yamls {
			if !slices.Contains(named, filepath.Base(y)) {
				t.Errorf("%s: %s is named by no step, fixture or control of %s", b.Name, filepath.Base(y), MetaFile)
			}
		}
		readme, err := os.ReadFile(filepath.Join(b.Dir, ReadmeFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{b.Meta.Version, "## Reproduce", "## Expected", "## Upstream", "## Draft report"} {
			if !strings.Contains(string(readme), want) {
				t.Errorf("%s: README.md lacks %q", b.Name, want)
			}
		}
		if b.Meta.Upstream.Ref != "" && !strings.Contains(string(readme), strings.Fields(b.Meta.Upstream.Ref)[0]) {
			t.Errorf("%s: README.md does not name the upstream reference %s", b.Name, b.Meta.Upstream.Ref)
		}
	}
}

// bundle writes a minimal valid bundle into a temporary folder and returns it.
func bundle(t *testing.T, meta string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "op", "slug")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		MetaFile:       meta,
		ReadmeFile:     "# x\n",
		ScriptFile:     "#!/bin/sh\nexit 2\n",
		"01-seed.yaml": "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\nspec: {size: 1}\n",
		"02-next.yaml": "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\nspec: {size: 2}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const validMeta = `operator: op
version: v1
title: a thing
foundBy: consistency
upstream: {status: new}
target: targets/x.yaml
steps:
- file: 01-seed.yaml
- file: 02-next.yaml
expect: {oracle: consistency, signature: consistency-0123456789ab, summary: spec.size changed}
`

func TestLoadValid(t *testing.T) {
	dir := bundle(t, validMeta)
	if err := WriteReproducer(dir); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "op/slug" || len(b.Reproducer.Steps) != 1 || b.Reproducer.Steps[0].Kind != model.StepApply || b.Reproducer.CRD.Group != "example.com" {
		t.Errorf("loaded %s with reproducer %+v", b.Name, b.Reproducer)
	}
}

// TestLoadRejects: each defect of a bundle is an error naming it.
func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		edit       func(dir string)
		want       string
	}{
		{name: "unknown field", meta: validMeta + "severity: high\n", want: `unknown field "severity"`},
		{name: "upstream status", meta: strings.Replace(validMeta, "status: new", "status: fixed", 1), want: `upstream.status "fixed" is not one of new, known`},
		{name: "ref on new", meta: strings.Replace(validMeta, "status: new", "status: new, ref: x#1", 1), want: "a finding with an upstream report is known"},
		{name: "step kind", meta: strings.Replace(validMeta, "- file: 02-next.yaml", "- {file: 02-next.yaml, kind: fault}", 1), want: `kind "fault" is not apply, rollback or recreate`},
		{name: "signature of another oracle", meta: strings.Replace(validMeta, "signature: consistency-", "signature: health-", 1), want: "is not one of oracle consistency's"},
		{name: "one step", meta: strings.Replace(validMeta, "- file: 02-next.yaml\n", "", 1), want: "at least one desired state after it"},
		{name: "missing README", meta: validMeta, edit: func(dir string) { _ = os.Remove(filepath.Join(dir, ReadmeFile)) }, want: "README.md is required"},
		{name: "script not executable", meta: validMeta, edit: func(dir string) { _ = os.Chmod(filepath.Join(dir, ScriptFile), 0o644) }, want: "is not executable"},
		{name: "missing manifest", meta: validMeta, edit: func(dir string) { _ = os.Remove(filepath.Join(dir, "02-next.yaml")) }, want: "02-next.yaml"},
		{name: "stale reproducer", meta: validMeta, edit: func(dir string) {
			_ = os.WriteFile(filepath.Join(dir, "02-next.yaml"), []byte("apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\nspec: {size: 3}\n"), 0o644)
		}, want: "gauntlet findings --write"},
		{name: "other kind", meta: validMeta, edit: func(dir string) {
			_ = os.WriteFile(filepath.Join(dir, "02-next.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644)
		}, want: "every step declares the same resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := bundle(t, validMeta)
			if err := WriteReproducer(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, MetaFile), []byte(tc.meta), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(dir)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDiscoverFolderWithoutMeta: a bundle folder without finding.yaml is an
// error, not skipped.
func TestDiscoverFolderWithoutMeta(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "op", "half-done"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(root); err == nil || !strings.Contains(err.Error(), "no finding.yaml") {
		t.Errorf("Discover: %v; want the folder without finding.yaml named", err)
	}
}

func TestJudge(t *testing.T) {
	want := Expect{Oracle: "consistency", Signature: "consistency-aaa", Summary: "x", Contains: "PKCS1"}
	step := func(fs ...model.Finding) *campaign.StepRecord { return &campaign.StepRecord{Findings: fs} }
	hit := model.Finding{Oracle: "consistency", Signature: "consistency-aaa", Summary: `encoding still holds "PKCS1"`}
	for _, tc := range []struct {
		name  string
		steps []*campaign.StepRecord
		want  Status
	}{
		{"fires after the seed", []*campaign.StepRecord{step(), step(hit)}, Reproduces},
		{"fires on the seed only", []*campaign.StepRecord{step(hit), step()}, NoLongerReproduces},
		{"another alarm", []*campaign.StepRecord{step(), step(model.Finding{Signature: "health-b", Summary: "x"})}, NoLongerReproduces},
		{"signature without the expected text", []*campaign.StepRecord{step(), step(model.Finding{Signature: "consistency-aaa", Summary: `holds "PKCS8"`})}, NoLongerReproduces},
		{"seed unconverged", []*campaign.StepRecord{{Step: model.Step{TimedOut: true}}, step(hit)}, CouldNotRun},
		{"seed refused", []*campaign.StepRecord{step(model.Finding{Oracle: "apply", Signature: "apply-x"}), step(hit)}, CouldNotRun},
		{"no step after the seed", []*campaign.StepRecord{step()}, CouldNotRun},
	} {
		if got, detail := Judge(want, tc.steps); got != tc.want {
			t.Errorf("%s: %s (%s); want %s", tc.name, got, detail, tc.want)
		}
	}
}
