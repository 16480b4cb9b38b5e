package inputgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
)

func testdataPath(name string) string { return filepath.Join("testdata", "gen", name) }

// clearLLMEnv keeps the developer's environment out of the tests.
func clearLLMEnv(t *testing.T) {
	for _, k := range []string{EnvLLMBaseURL, EnvLLMModel, EnvLLMAPIKey, EnvLLMCache, "OPENAI_API_KEY"} {
		t.Setenv(k, "")
	}
}

func TestRunGen(t *testing.T) {
	clearLLMEnv(t)
	out := t.TempDir()
	stale := filepath.Join(out, "cases", "9999-stale.yaml")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	err := RunGen(context.Background(), GenOptions{
		CRDPath:      testdataPath("scenarios.crd.yaml"),
		SeedPath:     testdataPath("scenarios.seed.yaml"),
		ExamplePaths: []string{testdataPath("scenarios.examples.yaml")},
		OutDir:       out,
		Seed:         3,
	}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Database (test.gauntlet.dev/v1)", "properties covered", "(100.0%)", "semantic mapping", "misoperation", "re-drawn", "LLM values           off"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale case file not removed")
	}
	plan, err := ReadPlanFile(filepath.Join(out, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "cases", "*.yaml"))
	if len(files) != len(plan.TestCases) || len(files) == 0 {
		t.Fatalf("%d case files for %d test cases", len(files), len(plan.TestCases))
	}
	crds, err := crd.LoadFile(testdataPath("scenarios.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := crd.NewSchema(crds[0], "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewLocalValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range plan.TestCases {
		objs, err := LoadObjects(filepath.Join(out, tc.File))
		if err != nil {
			t.Fatalf("%s: %v", tc.File, err)
		}
		states := plan.States(tc.ID)
		if len(objs) != len(states) {
			t.Fatalf("%s: %d documents, want %d states", tc.File, len(objs), len(states))
		}
		prev := plan.Base
		for i, o := range objs {
			if !bytes.Equal(mustJSON(t, o), mustJSON(t, states[i])) {
				t.Errorf("%s: document %d differs from the plan's state", tc.File, i+1)
			}
			if err := v.ValidateUpdate(context.Background(), o, prev); err != nil && !tc.Recreate {
				t.Errorf("%s: document %d rejected: %v", tc.File, i+1, err)
			}
			prev = o
		}
	}
	// Every property lists its test cases.
	for _, pc := range plan.Properties {
		if pc.Covered && pc.CoveredBy == 0 {
			t.Errorf("%s covered by no test case", pc.Path)
		}
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunGenBadInput(t *testing.T) {
	clearLLMEnv(t)
	crdFile, seedFile := testdataPath("cel.crd.yaml"), testdataPath("cel.seed.yaml")
	notStructural := writeTemp(t, "ns.yaml", testcrds.CRD("Thing", `
        type: object
        properties:
          spec:
            properties:
              size: {type: integer}
`))
	tests := []struct {
		name    string
		opts    GenOptions
		err     error
		mention []string
	}{
		{"no CRD flag", GenOptions{SeedPath: seedFile}, nil, []string{"--crd"}},
		{"no seed flag", GenOptions{CRDPath: crdFile}, nil, []string{"--seed"}},
		{"missing CRD file", GenOptions{CRDPath: "testdata/none.yaml", SeedPath: seedFile}, os.ErrNotExist, nil},
		{"file without CRD", GenOptions{CRDPath: seedFile, SeedPath: seedFile}, crd.ErrNoCRD, []string{"no apiextensions.k8s.io/v1 CustomResourceDefinition"}},
		{"CRD without structural schema", GenOptions{CRDPath: notStructural, SeedPath: seedFile}, crd.ErrNotStructural,
			[]string{"properties[spec].type", "Required value"}},
		{"seed violates the schema", GenOptions{CRDPath: crdFile, SeedPath: writeTemp(t, "s.yaml",
			"apiVersion: test.gauntlet.dev/v1\nkind: Queue\nmetadata: {name: q}\nspec: {minSize: 2, maxSize: 11}\n")},
			ErrSeedInvalid, []string{"spec.maxSize", "should be less than or equal to 10"}},
		{"seed violates a CEL rule", GenOptions{CRDPath: crdFile, SeedPath: writeTemp(t, "s.yaml",
			"apiVersion: test.gauntlet.dev/v1\nkind: Queue\nmetadata: {name: q}\nspec: {minSize: 7, maxSize: 3}\n")},
			ErrSeedInvalid, []string{"spec", "minSize must not exceed maxSize"}},
		{"seed misses a required field", GenOptions{CRDPath: crdFile, SeedPath: writeTemp(t, "s.yaml",
			"apiVersion: test.gauntlet.dev/v1\nkind: Queue\nmetadata: {name: q}\nspec: {minSize: 1}\n")},
			ErrSeedInvalid, []string{"spec.maxSize", "Required value"}},
		{"seed without name", GenOptions{CRDPath: crdFile, SeedPath: writeTemp(t, "s.yaml",
			"apiVersion: test.gauntlet.dev/v1\nkind: Queue\nspec: {minSize: 1, maxSize: 2}\n")},
			ErrSeedInvalid, []string{"metadata.name"}},
		{"seed of another kind", GenOptions{CRDPath: crdFile, SeedPath: testdataPath("deps.seed.yaml")}, ErrNoObject, []string{"Queue"}},
		{"seed not YAML", GenOptions{CRDPath: crdFile, SeedPath: writeTemp(t, "s.yaml", "spec: [\n")}, nil, []string{"document 1"}},
		{"unknown version", GenOptions{CRDPath: crdFile, SeedPath: seedFile, Version: "v9"}, crd.ErrVersionNotFound, []string{"v9"}},
		{"unknown kind", GenOptions{CRDPath: crdFile, SeedPath: seedFile, Kind: "Nope"}, crd.ErrKindNotFound, []string{"Nope"}},
		{"unknown value path", GenOptions{CRDPath: crdFile, SeedPath: seedFile, Values: map[string][]any{"spec.nope": {1}}}, nil, []string{"spec.nope"}},
		{"bad dependency", GenOptions{CRDPath: crdFile, SeedPath: seedFile, Dependencies: []Dependency{{Subtree: "spec.nope", When: []Predicate{{Path: "/spec/x", Op: PredExists}}}}}, nil, []string{"spec.nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.OutDir = t.TempDir()
			err := RunGen(context.Background(), tt.opts, &bytes.Buffer{})
			if err == nil {
				t.Fatal("no error")
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not mention %q: %v", m, err)
				}
			}
		})
	}
}

// TestRunGenLLM runs gen against a local server speaking the chat-completions API, then replays
// the committed cache offline and gets the same plan without a request.
func TestRunGenLLM(t *testing.T) {
	clearLLMEnv(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer sk-local" {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": `["llm-value-one", "llm-value-two"]`}}},
		})
	}))
	defer srv.Close()
	cache := filepath.Join(t.TempDir(), "target", "llm-cache.json")
	run := func(o LLMOptions) (string, []byte) {
		t.Helper()
		out := t.TempDir()
		var stdout bytes.Buffer
		err := RunGen(context.Background(), GenOptions{
			CRDPath: testdataPath("deps.crd.yaml"), SeedPath: testdataPath("deps.seed.yaml"),
			OutDir: out, Seed: 5, LLM: o,
		}, &stdout)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := os.ReadFile(filepath.Join(out, "plan.json"))
		if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), plan
	}
	summary, plan1 := run(LLMOptions{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "sk-local", CacheFile: cache})
	sent := requests.Load()
	if sent == 0 {
		t.Fatal("no request reached the server")
	}
	if !strings.Contains(summary, "properties asked") || !bytes.Contains(plan1, []byte("llm-value-")) {
		t.Errorf("LLM values not used:\n%s", summary)
	}
	data, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("sk-local")) || strings.Contains(summary, "sk-local") {
		t.Error("the API key leaked")
	}
	_, plan2 := run(LLMOptions{CacheFile: cache})
	if requests.Load() != sent {
		t.Errorf("offline replay sent %d requests", requests.Load()-sent)
	}
	if !bytes.Equal(plan1, plan2) {
		t.Error("offline replay produced a different plan")
	}
}
