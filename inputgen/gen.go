package inputgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// GenOptions configure RunGen (the `gauntlet gen` command).
type GenOptions struct {
	// CRDPath is a YAML file with one or more CRDs (required).
	CRDPath string
	// SeedPath is a YAML file whose first object of the CRD's kind is the seed CR (required).
	// Its other objects are mined for values.
	SeedPath string
	// ExamplePaths are more example CR files mined for values.
	ExamplePaths []string
	// OutDir receives plan.json and cases/*.yaml (default "gauntlet-gen").
	OutDir string
	// Seed fixes every random choice.
	Seed int64
	// Version is the CRD version to test (default: the seed's own version, which the CRD must
	// serve; the storage version when the seed's apiVersion names none). An explicit version must
	// be the seed's.
	Version string
	// Kind picks the CRD when the file holds several (default: the seed's kind).
	Kind string
	// Dependencies are target-declared predicates.
	Dependencies []Dependency
	// Values are target-declared candidate values by property path (e.g. "spec.image").
	Values map[string][]any
	// PodLabels select the operand's pods in affinity scenarios.
	PodLabels map[string]string
	// LLM configures LLM-proposed values (off unless configured).
	LLM LLMOptions
	// Lenient drops seed fields the schema does not declare with a warning instead of refusing the
	// seed.
	Lenient bool
	// Workers bounds parallelism (default GOMAXPROCS).
	Workers int
	// CoreValidator, when set, has the API server judge core-typed values (Options.CoreValidator);
	// the caller starts and stops it (cmd/gauntlet uses cluster/apicheck).
	CoreValidator CoreValidator
	// Logger receives progress; nil discards.
	Logger *slog.Logger
}

// RunGen loads a CRD and a seed CR, generates the plan, writes OutDir/plan.json and one YAML file
// per test case under OutDir/cases (the desired states from the seed, in order), and prints the
// coverage summary to stdout.
func RunGen(ctx context.Context, opts GenOptions, stdout io.Writer) error {
	if opts.CRDPath == "" {
		return errors.New("gen: no CRD file given: pass --crd FILE")
	}
	if opts.SeedPath == "" {
		return errors.New("gen: no seed CR given: pass --seed CR.yaml")
	}
	if opts.OutDir == "" {
		opts.OutDir = "gauntlet-gen"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	crds, err := crd.LoadFile(opts.CRDPath)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	seedObjs, err := LoadObjects(opts.SeedPath)
	if err != nil {
		return fmt.Errorf("gen: seed: %w", err)
	}
	var def = crds[0]
	switch {
	case opts.Kind != "":
		def, err = crd.Select(crds, opts.Kind)
	case len(crds) > 1:
		av, _ := seedObjs[0]["apiVersion"].(string)
		k, _ := seedObjs[0]["kind"].(string)
		def, err = crd.SelectByGVK(crds, av, k)
	}
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	seed, others, err := pickSeed(def.Spec.Group, def.Spec.Names.Kind, seedObjs)
	if err != nil {
		// A CRD the generator cannot use is the first thing to fix.
		if _, serr := crd.NewSchema(def, opts.Version); serr != nil {
			return fmt.Errorf("gen: %w", serr)
		}
		return fmt.Errorf("gen: %s: %w", opts.SeedPath, err)
	}
	seedAPIVersion, _ := seed["apiVersion"].(string)
	s, err := crd.NewSchemaForObject(def, opts.Version, seedAPIVersion)
	if err != nil {
		return fmt.Errorf("gen: seed %s: %w", opts.SeedPath, err)
	}
	examples := others
	for _, p := range opts.ExamplePaths {
		objs, err := LoadObjects(p)
		if err != nil {
			return fmt.Errorf("gen: examples: %w", err)
		}
		examples = append(examples, objs...)
	}
	pool := NewPool()
	valuePaths := slices.Sorted(maps.Keys(opts.Values))
	for _, path := range valuePaths {
		vals := opts.Values[path]
		if s.Lookup(path) == nil {
			return fmt.Errorf("gen: value pool: %q is not a property of %s", path, s.Kind)
		}
		for _, v := range vals {
			pool.Add(path, v, SourceTarget)
		}
	}
	llmStats := LLMStats{}
	llmOpts := LLMOptionsFromEnv(opts.LLM)
	if llmOpts.Enabled() {
		for _, ex := range append([]map[string]any{seed}, examples...) {
			pool.Mine(s, ex, SourceExample)
		}
		llmStats, err = FillPoolFromLLM(ctx, s, pool, llmOpts, log)
		if err != nil {
			return fmt.Errorf("gen: LLM values: %w", err)
		}
	}
	g, err := NewGenerator(s, seed, Options{
		Seed:          opts.Seed,
		Examples:      examples,
		Pool:          pool,
		Dependencies:  opts.Dependencies,
		PodLabels:     opts.PodLabels,
		Workers:       opts.Workers,
		CoreValidator: opts.CoreValidator,
		Lenient:       opts.Lenient,
		Logger:        log,
	})
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	plan, err := g.Plan(ctx)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := WritePlanDir(plan, opts.OutDir); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	printSummary(stdout, s, plan, llmOpts, llmStats, opts.OutDir)
	return nil
}

// pickSeed returns the first object of the group's kind and the remaining objects.
func pickSeed(group, kind string, objs []map[string]any) (map[string]any, []map[string]any, error) {
	for i, o := range objs {
		av, _ := o["apiVersion"].(string)
		k, _ := o["kind"].(string)
		if k == kind && strings.HasPrefix(av, group+"/") {
			rest := append(append([]map[string]any{}, objs[:i]...), objs[i+1:]...)
			return o, rest, nil
		}
	}
	return nil, nil, fmt.Errorf("no %s object of group %s in the seed file: %w", kind, group, ErrNoObject)
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// caseFileName returns the file name of the i-th test case: its number, generator and the tail
// of its property path, e.g. 0042-replicas_scale-up-down--spec.replicas.yaml.
func caseFileName(i int, tc *TestCase) string {
	gen := strings.Trim(unsafeFileChars.ReplaceAllString(tc.Generator, "_"), "_")
	path := tc.Property
	if parsed, err := crd.ParsePath(path); err == nil && len(path) > 60 {
		// Keep the trailing segments that fit.
		for i := 1; i < len(parsed); i++ {
			if tail := parsed[i:].String(); len(tail) <= 60 {
				path = strings.TrimPrefix(tail, ".")
				break
			}
		}
	}
	if len(path) > 60 {
		path = path[len(path)-60:]
	}
	path = strings.Trim(unsafeFileChars.ReplaceAllString(path, "_"), "_.")
	return fmt.Sprintf("%04d-%s--%s.yaml", i+1, gen, path)
}

// WritePlanDir writes dir/plan.json and dir/cases/NNNN-<id>.yaml (the desired states of each test
// case from the seed, one YAML document per state). Stale case files from an earlier run are
// removed first.
func WritePlanDir(plan *Plan, dir string) error {
	casesDir := filepath.Join(dir, "cases")
	if err := os.MkdirAll(casesDir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(casesDir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("list old case files: %w", err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("remove stale case file: %w", err)
		}
	}
	for i, tc := range plan.TestCases {
		name := caseFileName(i, tc)
		tc.File = filepath.ToSlash(filepath.Join("cases", name))
		data, err := renderCase(tc, plan.States(tc.ID))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(casesDir, name), data, 0o644); err != nil {
			return fmt.Errorf("write test case: %w", err)
		}
	}
	var buf bytes.Buffer
	if err := plan.WriteJSON(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	return nil
}

// renderCase renders the desired states of a test case as commented YAML documents.
func renderCase(tc *TestCase, states []map[string]any) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# test case %s (%s)\n# %s\n", tc.ID, tc.Label, oneLine(tc.Description))
	if tc.Recreate {
		b.WriteString("# recreate: the API server accepts these states only on a new object\n")
	}
	setup := len(states) > len(tc.Steps)
	for i, st := range states {
		if i > 0 {
			b.WriteString("---\n")
		}
		switch {
		case setup && i == 0:
			b.WriteString("# setup: make the preconditions hold\n")
		default:
			k := i
			if setup {
				k--
			}
			desc := ""
			if k < len(tc.Steps) && tc.Steps[k].Description != "" {
				desc = ": " + oneLine(tc.Steps[k].Description)
			}
			fmt.Fprintf(&b, "# step %d/%d%s\n", k+1, len(tc.Steps), desc)
		}
		y, err := yaml.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("render test case %s: %w", tc.ID, err)
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func printSummary(w io.Writer, s *crd.Schema, plan *Plan, llmOpts LLMOptions, llmStats LLMStats, outDir string) {
	st := plan.Stats
	fmt.Fprintf(w, "gauntlet gen: %s (%s) from CRD %s\n", s.Kind, s.APIVersion(), s.Name)
	fmt.Fprintf(w, "  properties covered   %d/%d (%.1f%%)", st.Covered, st.Properties-st.Pinned, 100*st.Coverage)
	if st.Pinned > 0 {
		fmt.Fprintf(w, "; %d pinned (no valid change exists)", st.Pinned)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  semantic mapping     %d/%d (%.1f%%), %d sub-schemas matched to Kubernetes types\n",
		st.SemanticMapped, st.Properties, 100*st.SemanticShare, len(plan.SemanticRoots))
	fmt.Fprintf(w, "  test cases           %d (%d valid, %d misoperation; %d need re-creation)\n", st.TestCases, st.Valid, st.Misoperation, st.Recreate)
	fmt.Fprintf(w, "  invalid candidates   %d re-drawn, %d test cases dropped\n", st.Redrawn, st.Dropped)
	if st.RuleGuards+st.RuleGuardsUnsolved+st.UncoveredByRule > 0 {
		fmt.Fprintf(w, "  validation rules     %d guards set before the fields they guard (%d unusable); %d properties uncovered by unsolved rules\n",
			st.RuleGuards, st.RuleGuardsUnsolved, st.UncoveredByRule)
	}
	if c := st.Core; c != nil {
		fmt.Fprintf(w, "  API server check     %d core-typed values judged (%d verdicts reused): %d candidates repaired, %d redrawn, %d test cases labelled misoperations\n",
			c.Checked, c.CacheHits, c.Repaired, c.Redrawn, c.Misoperation)
	} else {
		fmt.Fprintf(w, "  API server check     off: core-typed values (containers, affinity, claims, ...) not judged by the API server\n")
	}
	switch {
	case !llmOpts.Enabled():
		fmt.Fprintf(w, "  LLM values           off\n")
	default:
		fmt.Fprintf(w, "  LLM values           %d properties asked (%d from cache, %d requests), %d values, %d failed\n",
			llmStats.Asked, llmStats.FromCache, llmStats.Requests, llmStats.Values, llmStats.Failed)
	}
	for _, sw := range plan.SeedWarnings {
		fmt.Fprintf(w, "  seed warning         %s\n", sw)
	}
	for i, pc := range plan.Properties {
		if !pc.Covered {
			label := "uncovered"
			if pc.Pinned {
				label = "pinned"
			}
			fmt.Fprintf(w, "  %-20s %s: %s\n", label, pc.Path, pc.Reason)
		}
		_ = i
	}
	fmt.Fprintf(w, "  wrote %s and %d CR files in %s\n", filepath.Join(outDir, "plan.json"), len(plan.TestCases), filepath.Join(outDir, "cases"))
}
