package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const testKey = "sk-test-secret-0123456789"

// fakeServer speaks the chat-completions API: it records requests and answers with content.
type fakeServer struct {
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
	content  func(prompt string) string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	prompt := ""
	if msgs, ok := req["messages"].([]any); ok && len(msgs) > 0 {
		last, _ := msgs[len(msgs)-1].(map[string]any)
		prompt, _ = last["content"].(string)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":      "chatcmpl-1",
		"object":  "chat.completion",
		"created": 1,
		"model":   req["model"],
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": f.content(prompt)},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

func TestAskAndReplay(t *testing.T) {
	fs := &fakeServer{content: func(p string) string {
		if strings.Contains(p, "JSON object") {
			return "Sure:\n```json\n{\"maxmemory-policy\": \"allkeys-lru\", \"hz\": 50}\n```"
		}
		return `["3.6.0", "3.7.1", 42]`
	}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cache := filepath.Join(t.TempDir(), "llm-cache.json")
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "test-model", APIKey: testKey, CacheFile: cache}, log)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Kind: KindValues, Path: "spec.kafka.version", Type: "string", Description: "The Kafka version.",
		Constraints: []string{"matches the regular expression ^[0-9.]+$"}, Known: []any{"3.5.0"}, Count: 3}
	e, cached, err := c.Ask(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if cached || len(e.Values) != 3 || e.Values[0] != "3.6.0" || e.Values[2] != int64(42) {
		t.Errorf("answer = %+v (cached %v)", e, cached)
	}
	cfg := Request{Kind: KindEntries, Path: "spec.config", Type: "object", Description: "valkey.conf keys"}
	e2, _, err := c.Ask(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e2.Entries["maxmemory-policy"] != "allkeys-lru" || e2.Entries["hz"] != int64(50) {
		t.Errorf("entries = %v", e2.Entries)
	}
	// The request carries the model, a system prompt and a user prompt naming path, type,
	// description and constraints; the key travels only in the Authorization header.
	if len(fs.requests) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(fs.requests))
	}
	if fs.requests[0]["model"] != "test-model" || fs.auth[0] != "Bearer "+testKey {
		t.Errorf("request model %v, auth %q", fs.requests[0]["model"], fs.auth[0])
	}
	body, _ := json.Marshal(fs.requests[0])
	for _, want := range []string{"spec.kafka.version", "The Kafka version.", "^[0-9.]+$", "3.5.0", "JSON array"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("prompt lacks %q: %s", want, body)
		}
	}
	// Asking again is answered from memory.
	if _, cached, err := c.Ask(context.Background(), req); err != nil || !cached {
		t.Errorf("second ask: cached=%v err=%v", cached, err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), testKey) || strings.Contains(logs.String(), testKey) {
		t.Error("API key leaked into the cache file or the logs")
	}
	// A client with no endpoint replays the committed cache offline.
	off, err := New(Config{CacheFile: cache}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e3, cached, err := off.Ask(context.Background(), req)
	if err != nil || !cached || len(e3.Values) != 3 || e3.Values[2] != int64(42) {
		t.Errorf("replay: %+v cached=%v err=%v", e3, cached, err)
	}
	if _, _, err := off.Ask(context.Background(), Request{Path: "spec.other", Type: "string"}); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("uncached offline ask: err = %v, want ErrNotConfigured", err)
	}
	if off.Requests() != 0 {
		t.Errorf("offline client sent %d requests", off.Requests())
	}
	if len(fs.requests) != 2 {
		t.Errorf("server saw %d requests after replay, want 2", len(fs.requests))
	}
}

func TestBadAnswers(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"prose", "I cannot help with that."},
		{"broken JSON", `["a", "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeServer{content: func(string) string { return tt.content }})
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: testKey}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Ask(context.Background(), Request{Path: "spec.x", Type: "string"})
			if !errors.Is(err, ErrBadAnswer) {
				t.Errorf("err = %v, want ErrBadAnswer", err)
			}
		})
	}
}

func TestServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"invalid key ` + testKey + `","type":"auth"}}`))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Ask(context.Background(), Request{Path: "spec.x", Type: "string"})
	if err == nil {
		t.Fatal("no error for HTTP 401")
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error text leaks the key: %v", err)
	}
}

func TestKeyStable(t *testing.T) {
	r := Request{Kind: KindValues, Path: "spec.a", Type: "string", Count: 5}
	if Key(r, "m") != Key(r, "m") {
		t.Error("key not stable")
	}
	r2 := r
	r2.Description = "different"
	if Key(r, "m") == Key(r2, "m") {
		t.Error("different prompts share a key")
	}
	if Key(r, "m") == Key(r, "other") || Key(r, "m") == Key(r, "") {
		t.Error("different models share a key")
	}
}

// TestCachePerModel: switching models asks the new model instead of replaying
// the old one's answers; an older model-less cache key still serves the model
// that wrote it; a replay-only client refuses to choose between two models.
func TestCachePerModel(t *testing.T) {
	fs := &fakeServer{}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	cache := filepath.Join(t.TempDir(), "llm-cache.json")
	req := Request{Kind: KindValues, Path: "spec.version", Type: "string", Count: 2}
	ask := func(model, answer string) (Entry, bool) {
		t.Helper()
		fs.content = func(string) string { return answer }
		c, err := New(Config{BaseURL: srv.URL + "/v1", Model: model, APIKey: testKey, CacheFile: cache}, nil)
		if err != nil {
			t.Fatal(err)
		}
		e, cached, err := c.Ask(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		return e, cached
	}
	if e, cached := ask("model-a", `["a1", "a2"]`); cached || e.Values[0] != "a1" {
		t.Fatalf("model-a: %+v cached=%v", e, cached)
	}
	if e, cached := ask("model-b", `["b1", "b2"]`); cached || e.Values[0] != "b1" {
		t.Errorf("model-b got %+v (cached=%v), want its own answer, not model-a's", e, cached)
	}
	if e, cached := ask("model-a", `["unused"]`); !cached || e.Values[0] != "a1" {
		t.Errorf("model-a again: %+v cached=%v, want its cached answer", e, cached)
	}
	if len(fs.requests) != 2 {
		t.Errorf("server saw %d requests, want 2 (one per model)", len(fs.requests))
	}
	off, err := New(Config{CacheFile: cache}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := off.Ask(context.Background(), req); err == nil || !strings.Contains(err.Error(), "model-a, model-b") {
		t.Errorf("replay with two models' answers: err = %v, want one naming both", err)
	}

	// A cache written before keys named the model.
	legacy := filepath.Join(t.TempDir(), "legacy.json")
	e := Entry{Path: req.Path, Kind: KindValues, Model: "model-a", Prompt: Prompt(req), Values: []any{"old"}}
	data, _ := json.Marshal(cacheFile{Version: 1, Entries: map[string]Entry{Key(req, ""): e}})
	if err := os.WriteFile(legacy, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		model      string
		wantCached bool
	}{{"model-a", true}, {"", true}, {"model-b", false}} {
		c, err := New(Config{BaseURL: srv.URL + "/v1", Model: tt.model, APIKey: testKey, CacheFile: legacy}, nil)
		if tt.model == "" {
			c, err = New(Config{CacheFile: legacy}, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		fs.content = func(string) string { return `["new"]` }
		got, cached, err := c.Ask(context.Background(), req)
		if err != nil || cached != tt.wantCached {
			t.Errorf("legacy cache, model %q: %+v cached=%v err=%v, want cached=%v", tt.model, got, cached, err, tt.wantCached)
		}
	}
}

func TestCorruptCache(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(`{"version": 1, "entries": {"k": {"bogus": 1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{CacheFile: p}, nil); err == nil {
		t.Error("corrupt cache accepted")
	}
}
