// Package findings reads the finding bundles kept under findings/<operator>/<slug>/:
// one per bug Gauntlet found in a third-party operator, with what a
// maintainer needs to act on it (README.md), the custom resources in the
// order they are declared, a kubectl-only reproduce.sh, and the `gauntlet
// reproduce` input (gauntlet/reproducer.json) derived from the same
// manifests. Replay (replay.go) runs every bundle on the embedded cluster and
// says which still reproduce.
package findings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
)

// Files every bundle holds besides its manifests.
const (
	MetaFile     = "finding.yaml"
	ReadmeFile   = "README.md"
	ScriptFile   = "reproduce.sh"
	ReproduceDir = "gauntlet" // gauntlet/reproducer.json, for `gauntlet reproduce`
)

// Upstream statuses of a finding.
const (
	UpstreamNew   = "new"   // not reported upstream as far as the triage found
	UpstreamKnown = "known" // reported upstream (Ref names where, when the repository records it)
)

// UpstreamStatuses are the statuses a bundle may declare.
var UpstreamStatuses = []string{UpstreamNew, UpstreamKnown}

// Meta is a bundle's finding.yaml.
type Meta struct {
	// Operator and Version name the operator the bug is in ("cert-manager", "v1.21.2").
	Operator string `json:"operator"`
	Version  string `json:"version"`
	// Title is the bug in one line.
	Title string `json:"title"`
	// FoundBy names the oracle (or harness check) whose alarm found it.
	FoundBy  string   `json:"foundBy"`
	Upstream Upstream `json:"upstream"`
	// Target is the target file the embedded replay deploys, relative to the
	// repository root.
	Target string `json:"target"`
	// Fixtures are objects reproduce.sh creates in its namespace first (the
	// target's fixtures, which the embedded replay creates itself).
	Fixtures []string `json:"fixtures,omitempty"`
	// Controls are manifests reproduce.sh declares to show what works (not
	// part of the sequence).
	Controls []string `json:"controls,omitempty"`
	// Steps are the custom resource's desired states in order; the first is
	// the seed (D0).
	Steps []Step `json:"steps"`
	// ConvergeTimeout bounds each step's convergence in the embedded replay
	// ("3m"; the replay default when empty).
	ConvergeTimeout string `json:"convergeTimeout,omitempty"`
	// Expect is the alarm the embedded replay must raise again.
	Expect Expect `json:"expect"`
}

// Upstream is a finding's status in the operator's own tracker.
type Upstream struct {
	Status string `json:"status"`
	// Ref is the upstream issue or pull request, only where one is recorded.
	Ref string `json:"ref,omitempty"`
}

// Step is one desired state: a manifest file and how it is declared.
type Step struct {
	File string `json:"file"`
	// Kind is apply (the default), rollback (back to an earlier state) or
	// recreate (delete the resource and create it anew).
	Kind model.StepKind `json:"kind,omitempty"`
}

// Expect is the alarm that says the bug is there.
type Expect struct {
	Oracle    string `json:"oracle"`
	Signature string `json:"signature"`
	// Summary is the alarm as the last replay that reproduced it worded it.
	Summary string `json:"summary"`
	// Contains, when set, must appear in the alarm's summary or evidence
	// (the signature alone names the field or refusal, not its value).
	Contains string `json:"contains,omitempty"`
}

// Bundle is one loaded, checked bundle.
type Bundle struct {
	// Dir is the bundle's folder; Name is "<operator>/<slug>".
	Dir  string
	Name string
	Meta Meta
	// Reproducer is gauntlet/reproducer.json as stored.
	Reproducer *replay.Reproducer
}

// Load reads and checks the bundle in dir: finding.yaml decoded strictly,
// every file it names present, the manifests single objects of the seed's
// kind, reproduce.sh executable, and gauntlet/reproducer.json decoded
// strictly and equal to the reproducer the manifests make (Derive).
func Load(dir string) (*Bundle, error) {
	dir = filepath.Clean(dir)
	b := &Bundle{Dir: dir, Name: bundleName(dir)}
	raw, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	if err := yaml.UnmarshalStrict(raw, &b.Meta); err != nil {
		return nil, fmt.Errorf("bundle %s: decode %s: %w", b.Name, MetaFile, err)
	}
	if err := b.Meta.check(); err != nil {
		return nil, fmt.Errorf("bundle %s: %s: %w", b.Name, MetaFile, err)
	}
	for _, f := range []string{ReadmeFile, ScriptFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("bundle %s: %s is required: %w", b.Name, f, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, ScriptFile)); st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("bundle %s: %s is not executable (chmod +x it)", b.Name, ScriptFile)
	}
	for _, f := range append(slices.Clone(b.Meta.Fixtures), b.Meta.Controls...) {
		if _, err := readObjects(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
		}
	}
	want, err := b.Derive()
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	if b.Reproducer, err = replay.ReadReproducer(filepath.Join(dir, ReproduceDir)); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	if err := b.Reproducer.Validate(); err != nil {
		return nil, fmt.Errorf("bundle %s: %s/%s: %w", b.Name, ReproduceDir, replay.ReproducerFile, err)
	}
	got, _ := json.Marshal(b.Reproducer)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		return nil, fmt.Errorf("bundle %s: %s/%s does not match finding.yaml and the manifests: regenerate it with `gauntlet findings --write %s`",
			b.Name, ReproduceDir, replay.ReproducerFile, dir)
	}
	return b, nil
}

func (m Meta) check() error {
	var missing []string
	for _, f := range []struct{ name, val string }{{"operator", m.Operator}, {"version", m.Version}, {"title", m.Title},
		{"foundBy", m.FoundBy}, {"target", m.Target}, {"expect.oracle", m.Expect.Oracle}, {"expect.signature", m.Expect.Signature},
		{"expect.summary", m.Expect.Summary}} {
		if strings.TrimSpace(f.val) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	if !slices.Contains(UpstreamStatuses, m.Upstream.Status) {
		return fmt.Errorf("upstream.status %q is not one of %s", m.Upstream.Status, strings.Join(UpstreamStatuses, ", "))
	}
	if m.Upstream.Status == UpstreamNew && m.Upstream.Ref != "" {
		return fmt.Errorf("upstream.ref %q on a new finding: a finding with an upstream report is known", m.Upstream.Ref)
	}
	if len(m.Steps) < 2 {
		return errors.New("steps: the seed and at least one desired state after it are required")
	}
	for i, s := range m.Steps {
		switch {
		case s.File == "":
			return fmt.Errorf("steps[%d]: file is required", i)
		case i == 0 && s.Kind != "":
			return fmt.Errorf("steps[0] is the seed: it takes no kind (%q)", s.Kind)
		case !slices.Contains([]model.StepKind{"", model.StepApply, model.StepRollback, model.StepRecreate}, s.Kind):
			return fmt.Errorf("steps[%d]: kind %q is not apply, rollback or recreate", i, s.Kind)
		}
	}
	if !strings.HasPrefix(m.Expect.Signature, m.Expect.Oracle+"-") {
		return fmt.Errorf("expect.signature %q is not one of oracle %s's (%s-…)", m.Expect.Signature, m.Expect.Oracle, m.Expect.Oracle)
	}
	return nil
}

// Derive is the `gauntlet reproduce` input the bundle's manifests make: the
// first step as the seed, the others in order, the alarm of Expect, and the
// bundle's target.
func (b *Bundle) Derive() (*replay.Reproducer, error) {
	m := b.Meta
	var objs []model.Object
	for _, s := range m.Steps {
		o, err := readObjects(filepath.Join(b.Dir, s.File))
		if err != nil {
			return nil, fmt.Errorf("step %w", err)
		}
		if len(o) != 1 {
			return nil, fmt.Errorf("step %s holds %d objects: a step is one custom resource", s.File, len(o))
		}
		objs = append(objs, o[0])
	}
	api, _ := objs[0]["apiVersion"].(string)
	kind, _ := objs[0]["kind"].(string)
	if api == "" || kind == "" {
		return nil, fmt.Errorf("step %s: apiVersion and kind are required", m.Steps[0].File)
	}
	crd := replay.CRDRef{Version: api, Kind: kind}
	if g, v, ok := strings.Cut(api, "/"); ok {
		crd.Group, crd.Version = g, v
	}
	rep := &replay.Reproducer{
		Signature: m.Expect.Signature, Oracle: m.Expect.Oracle, Summary: m.Expect.Summary,
		Check:     m.Title,
		FromStep:  "finding " + b.Name,
		Seed:      objs[0],
		Confirmed: true,
		Note:      "a finding bundle (" + b.Name + "): derived from its manifests by `gauntlet findings --write`; `make findings` replays it",
		Target:    m.Target,
		CRD:       crd,
		Name:      strings.ReplaceAll(b.Name, "/", "-"),
		Namespace: "finding",
	}
	if m.ConvergeTimeout != "" {
		d, err := time.ParseDuration(m.ConvergeTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("convergeTimeout %q is not a positive duration (\"3m\")", m.ConvergeTimeout)
		}
		rep.ConvergeTimeout = d
	}
	for i, o := range objs[1:] {
		s := m.Steps[i+1]
		if ak, _ := o["kind"].(string); ak != kind || o["apiVersion"] != api {
			return nil, fmt.Errorf("step %s is a %v %v, the seed a %s %s: every step declares the same resource", s.File, o["apiVersion"], o["kind"], api, kind)
		}
		k := s.Kind
		if k == "" {
			k = model.StepApply
		}
		rep.Steps = append(rep.Steps, replay.Step{Kind: k, Desired: o, Recreate: k == model.StepRecreate})
	}
	return rep, nil
}

// readObjects decodes a YAML file of one or more documents into objects.
func readObjects(path string) ([]model.Object, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []model.Object
	for i, doc := range splitDocs(raw) {
		var o model.Object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", filepath.Base(path), i+1, err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no object", filepath.Base(path))
	}
	return out, nil
}

// splitDocs splits a YAML stream at its "---" lines.
func splitDocs(raw []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) {
			docs, cur = append(docs, cur), nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// Discover loads every bundle under root (root/<operator>/<slug>/finding.yaml),
// sorted by name. A folder two levels down without finding.yaml is an error:
// a bundle missing its description would otherwise go unreplayed.
func Discover(root string) ([]*Bundle, error) {
	ops, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("findings folder: %w", err)
	}
	var out []*Bundle
	var errs []error
	for _, op := range ops {
		if !op.IsDir() {
			continue
		}
		slugs, err := os.ReadDir(filepath.Join(root, op.Name()))
		if err != nil {
			return nil, err
		}
		for _, s := range slugs {
			if !s.IsDir() {
				continue
			}
			dir := filepath.Join(root, op.Name(), s.Name())
			if _, err := os.Stat(filepath.Join(dir, MetaFile)); errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("%s: no %s (every folder findings/<operator>/<slug> is a bundle)", dir, MetaFile))
				continue
			}
			b, err := Load(dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// WriteReproducer writes the reproducer the bundle's manifests make to
// dir/gauntlet/reproducer.json (for a new or changed bundle).
func WriteReproducer(dir string) error {
	dir = filepath.Clean(dir)
	b := &Bundle{Dir: dir, Name: bundleName(dir)}
	raw, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		return fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	if err := yaml.UnmarshalStrict(raw, &b.Meta); err != nil {
		return fmt.Errorf("bundle %s: decode %s: %w", b.Name, MetaFile, err)
	}
	if err := b.Meta.check(); err != nil {
		return fmt.Errorf("bundle %s: %s: %w", b.Name, MetaFile, err)
	}
	rep, err := b.Derive()
	if err != nil {
		return fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, ReproduceDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReproduceDir, replay.ReproducerFile), append(js, '\n'), 0o644)
}

// bundleName is "<operator>/<slug>" of a bundle folder.
func bundleName(dir string) string {
	return filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
}
