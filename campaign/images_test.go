package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestRefuseUnmappedOperatorImage: a target whose operator image no rule maps is
// refused by Run and Reproduce before any cluster starts, with an error naming
// the image and the fix; a rule in the target's imageMapping or in a
// --image-mapping file lets it through.
func TestRefuseUnmappedOperatorImage(t *testing.T) {
	tg, err := targets.Load(filepath.Join("..", "targets", "testdata", "file", "widget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stateRoot := t.TempDir()
	prov := local.Provider{Options: local.Options{StateRoot: stateRoot}}
	cfg := Config{Target: tg, Provider: prov, OutDir: filepath.Join(t.TempDir(), "out"), Workers: 1, MaxSteps: 1}

	_, runErr := Run(context.Background(), cfg)
	_, repErr := Reproduce(context.Background(), cfg, &Reproducer{Steps: []ReproStep{{}}})
	for name, err := range map[string]error{"Run": runErr, "Reproduce": repErr} {
		if !errors.Is(err, ErrUnmappedImage) {
			t.Fatalf("%s error = %v, want ErrUnmappedImage", name, err)
		}
		for _, w := range []string{"example/widget-operator:dev", "imageMapping", "--image-mapping", `"example/widget-operator:*"`} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s error %q does not mention %q", name, err, w)
			}
		}
	}
	if ents, _ := os.ReadDir(stateRoot); len(ents) > 0 {
		t.Errorf("the state root holds %d entries: a cluster was started before the refusal", len(ents))
	}

	rule := imagemap.Rule{Images: []string{"example/widget-operator:*"}, Entrypoint: []string{"/manager"}, Programs: map[string][]string{"/manager": {"/bin/true"}}}
	withRule := *tg
	withRule.ImageMapping = []imagemap.Rule{rule}
	p, err := prepareImages(prov, &withRule)
	if err != nil {
		t.Fatalf("a target mapping its image is refused: %v", err)
	}
	if got := p.(local.Provider).Options.MappingRules; len(got) != 1 || got[0].Images[0] != rule.Images[0] {
		t.Errorf("the provider did not get the target's rules: %+v", got)
	}

	file := filepath.Join(t.TempDir(), "images.yaml")
	if err := os.WriteFile(file, []byte("rules:\n- images: [\"example/widget-operator:*\"]\n  simulate: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareImages(local.Provider{Options: local.Options{MappingFile: file}}, tg); err != nil {
		t.Errorf("an --image-mapping file mapping the image is refused: %v", err)
	}

	// A provider without an image mapping (kind pulls from registries) is left alone.
	var other cluster.Provider = noMapping{}
	if p, err := prepareImages(other, tg); err != nil || p != other {
		t.Errorf("prepareImages(kind-like provider) = %v, %v", p, err)
	}
}

type noMapping struct{}

func (noMapping) Create(context.Context, string) (cluster.Cluster, error) {
	return nil, errors.New("not used")
}

func TestPrepareImagesKind(t *testing.T) {
	tg := &targets.Target{Name: "widget", Operator: targets.Operator{Image: "example/widget-operator:v1"},
		Seed:   map[string]any{"spec": map[string]any{"image": "example/widget-operand:1", "size": 3}},
		Values: map[string][]any{"spec.image": {"example/widget-operand:2", "example/unmapped:1"}},
		ImageMapping: []imagemap.Rule{{Images: []string{"example/widget-operator:*"}, Entrypoint: []string{"/manager"}, Programs: map[string][]string{"/manager": {"/bin/true"}}},
			{Images: []string{"example/widget-operand:*"}, Entrypoint: []string{"/bin/true"}}}}
	p, err := prepareImages(kind.Provider{}, tg)
	if err != nil {
		t.Fatal(err)
	}
	o := p.(kind.Provider).Options
	var refs []string
	for _, m := range o.Mapped {
		refs = append(refs, m.Refs[0])
	}
	sort.Strings(refs)
	if strings.Join(refs, ",") != "example/widget-operand:1,example/widget-operand:2,example/widget-operator:v1" || len(o.Unmapped) != 0 {
		t.Errorf("kind provider: mapped %v, unmapped %v; want the operator image and the operand images its values name", refs, o.Unmapped)
	}
}
