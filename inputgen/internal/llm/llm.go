// Package llm asks an OpenAI-compatible chat-completions endpoint for realistic values of CRD
// properties, and caches every answer in a file meant to be committed with the target, so that
// campaigns replay offline with exactly the same values. The API key is never logged or cached.
package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// ErrNotConfigured is returned when a value is not cached and no endpoint is configured.
var ErrNotConfigured = errors.New("LLM endpoint not configured and answer not cached: set a base URL and model, or commit the cache file")

// ErrBadAnswer is returned when the model's answer is not the JSON requested.
var ErrBadAnswer = errors.New("LLM answer is not the requested JSON")

// promptVersion is part of every cache key; bump it when prompts change meaning.
const promptVersion = "gauntlet-values-v1"

// Config configures the client. The zero value is a replay-only client without a cache.
type Config struct {
	// BaseURL is the OpenAI-compatible API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// Model is the chat model name.
	Model string
	// APIKey authenticates requests; it is never logged or written to the cache.
	APIKey string
	// CacheFile holds cached answers (JSON); empty disables caching.
	CacheFile string
	// Timeout bounds one request (default 60s).
	Timeout time.Duration
	// HTTPClient overrides the HTTP client (tests).
	HTTPClient *http.Client
}

// Enabled reports whether requests can be sent (base URL and model set).
func (c Config) Enabled() bool { return c.BaseURL != "" && c.Model != "" }

// Kind is what a request asks for.
type Kind string

const (
	// KindValues asks for a JSON array of values for one property.
	KindValues Kind = "values"
	// KindEntries asks for a JSON object of configuration keys and values.
	KindEntries Kind = "entries"
)

// Request describes a property to the model.
type Request struct {
	Kind        Kind
	Path        string
	Type        string
	Description string
	// Constraints are human-readable schema constraints, e.g. "pattern: ^[a-z]+$".
	Constraints []string
	// Known are values already known (from examples), given as context.
	Known []any
	// Count is how many values to ask for (default 5).
	Count int
}

// Entry is one cached answer.
type Entry struct {
	Path   string `json:"path"`
	Kind   Kind   `json:"kind"`
	Model  string `json:"model,omitempty"`
	Prompt string `json:"prompt"`
	// Values holds a KindValues answer; Entries a KindEntries answer.
	Values  []any          `json:"values,omitempty"`
	Entries map[string]any `json:"entries,omitempty"`
}

type cacheFile struct {
	Version int              `json:"version"`
	Entries map[string]Entry `json:"entries"`
}

// Client asks for values, answering from the cache first.
type Client struct {
	cfg   Config
	log   *slog.Logger
	api   *openai.Client
	mu    sync.Mutex
	cache map[string]Entry
	dirty bool
	// Requests counts requests sent to the endpoint.
	requests int
}

// New loads the cache (if any) and prepares the API client when configured.
func New(cfg Config, log *slog.Logger) (*Client, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	c := &Client{cfg: cfg, log: log, cache: map[string]Entry{}}
	if cfg.CacheFile != "" {
		data, err := os.ReadFile(cfg.CacheFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read LLM cache: %w", err)
		default:
			var f cacheFile
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			dec.UseNumber()
			if err := dec.Decode(&f); err != nil {
				return nil, fmt.Errorf("decode LLM cache %s: %w (delete it to start over)", cfg.CacheFile, err)
			}
			if f.Version != 1 {
				return nil, fmt.Errorf("LLM cache %s has version %d, want 1", cfg.CacheFile, f.Version)
			}
			for k, e := range f.Entries {
				e.Values, _ = jsonv.Normalize(e.Values).([]any)
				for ek, ev := range e.Entries {
					e.Entries[ek] = jsonv.Normalize(ev)
				}
				c.cache[k] = e
			}
		}
	}
	if cfg.Enabled() {
		oc := openai.DefaultConfig(cfg.APIKey)
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
		hc := cfg.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		oc.HTTPClient = hc
		c.api = openai.NewClientWithConfig(oc)
	}
	return c, nil
}

// Requests returns how many requests were sent to the endpoint.
func (c *Client) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Prompt renders the user prompt for a request.
func Prompt(r Request) string {
	n := r.Count
	if n <= 0 {
		n = 5
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Field path: %s\n", r.Path)
	fmt.Fprintf(&b, "Type: %s\n", r.Type)
	if d := strings.TrimSpace(r.Description); d != "" {
		if len(d) > 1500 {
			d = d[:1500] + "..."
		}
		fmt.Fprintf(&b, "Description: %s\n", d)
	}
	if len(r.Constraints) > 0 {
		fmt.Fprintf(&b, "Constraints: %s\n", strings.Join(r.Constraints, "; "))
	}
	if len(r.Known) > 0 {
		known, _ := json.Marshal(r.Known)
		fmt.Fprintf(&b, "Values already used in examples: %s\n", known)
	}
	switch r.Kind {
	case KindEntries:
		fmt.Fprintf(&b, "Propose %d realistic configuration keys this field accepts, with a valid value for each, "+
			"as one JSON object mapping key to value. Answer with the JSON object only.", n)
	default:
		fmt.Fprintf(&b, "Propose %d distinct, realistic values for this field that satisfy the constraints, "+
			"as a JSON array of %s values. Answer with the JSON array only.", n, r.Type)
	}
	return b.String()
}

const systemPrompt = "You propose realistic values for fields of Kubernetes custom resources, " +
	"the kind an operator's users would write. You answer with JSON only, no prose."

// Key returns the cache key of a request answered by model (independent of the
// endpoint). An empty model gives the key older cache files used for every model.
func Key(r Request, model string) string {
	return promptKey(r.Kind, Prompt(r), model)
}

func promptKey(kind Kind, prompt, model string) string {
	s := promptVersion + "\x00" + string(kind) + "\x00" + prompt
	if model != "" {
		s += "\x00" + model
	}
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

// lookup returns the cached answer to r. With a model configured only that
// model's answers count (a key of the model's, or an older model-less key whose
// entry names the model); a replay-only client takes the one model's answer the
// cache holds and refuses to choose between several.
func (c *Client) lookup(r Request) (Entry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.cfg.Model; m != "" {
		if e, ok := c.cache[Key(r, m)]; ok {
			return e, true, nil
		}
		if e, ok := c.cache[Key(r, "")]; ok && e.Model == m {
			return e, true, nil
		}
		return Entry{}, false, nil
	}
	prompt := Prompt(r)
	found := map[string]Entry{}
	for k, e := range c.cache {
		if e.Kind == r.Kind && e.Prompt == prompt && (k == promptKey(r.Kind, prompt, e.Model) || k == promptKey(r.Kind, prompt, "")) {
			found[e.Model] = e
		}
	}
	switch len(found) {
	case 0:
		return Entry{}, false, nil
	case 1:
		for _, e := range found {
			return e, true, nil
		}
	}
	models := slices.Sorted(maps.Keys(found))
	return Entry{}, false, fmt.Errorf("%s: the LLM cache holds answers from models %s: set the model to choose one", r.Path, strings.Join(models, ", "))
}

// Ask returns the answer for r: cached, or from the endpoint (then cached). fromCache tells which.
// Answers are cached per model: switching models asks the new one.
func (c *Client) Ask(ctx context.Context, r Request) (e Entry, fromCache bool, err error) {
	if r.Kind == "" {
		r.Kind = KindValues
	}
	key := Key(r, c.cfg.Model)
	cached, ok, err := c.lookup(r)
	if err != nil {
		return Entry{}, false, err
	}
	if ok {
		return cached, true, nil
	}
	if c.api == nil {
		return Entry{}, false, fmt.Errorf("%s: %w", r.Path, ErrNotConfigured)
	}
	prompt := Prompt(r)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	c.log.Debug("asking LLM for values", "path", r.Path, "kind", r.Kind, "model", c.cfg.Model, "endpoint", c.cfg.BaseURL)
	resp, err := c.api.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: c.cfg.Model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
			{Role: openai.ChatMessageRoleUser, Content: prompt},
		},
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("ask LLM for %s: %w", r.Path, redact(err, c.cfg.APIKey))
	}
	if len(resp.Choices) == 0 {
		return Entry{}, false, fmt.Errorf("ask LLM for %s: no choice in answer: %w", r.Path, ErrBadAnswer)
	}
	content := resp.Choices[0].Message.Content
	e = Entry{Path: r.Path, Kind: r.Kind, Model: c.cfg.Model, Prompt: prompt}
	switch r.Kind {
	case KindEntries:
		m, err := parseObject(content)
		if err != nil {
			return Entry{}, false, fmt.Errorf("ask LLM for %s: %w", r.Path, err)
		}
		e.Entries = m
	default:
		vals, err := parseArray(content)
		if err != nil {
			return Entry{}, false, fmt.Errorf("ask LLM for %s: %w", r.Path, err)
		}
		e.Values = vals
	}
	c.mu.Lock()
	c.cache[key] = e
	c.dirty = true
	c.mu.Unlock()
	return e, false, nil
}

// redact removes the API key from an error's text, should a transport ever echo it.
func redact(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[REDACTED]"))
}

// Save writes the cache file when answers were added (sorted keys, atomic rename).
func (c *Client) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.CacheFile == "" || !c.dirty {
		return nil
	}
	f := cacheFile{Version: 1, Entries: c.cache}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode LLM cache: %w", err)
	}
	dir := filepath.Dir(c.cfg.CacheFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create LLM cache directory: %w", err)
	}
	if err := atomicfile.Write(c.cfg.CacheFile, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write LLM cache: %w", err)
	}
	c.dirty = false
	return nil
}

// Keys returns the cached keys, sorted.
func (c *Client) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Sorted(maps.Keys(c.cache))
	return out
}

// extract returns the outermost JSON text between open and close in s (models sometimes wrap
// answers in code fences or prose).
func extract(s string, open, close byte) (string, bool) {
	i := strings.IndexByte(s, open)
	j := strings.LastIndexByte(s, close)
	if i < 0 || j < i {
		return "", false
	}
	return s[i : j+1], true
}

func parseArray(s string) ([]any, error) {
	js, ok := extract(s, '[', ']')
	if !ok {
		return nil, fmt.Errorf("%w: no JSON array in %q", ErrBadAnswer, truncate(s))
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var out []any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: %v in %q", ErrBadAnswer, err, truncate(s))
	}
	out, _ = jsonv.Normalize(out).([]any)
	return out, nil
}

func parseObject(s string) (map[string]any, error) {
	js, ok := extract(s, '{', '}')
	if !ok {
		return nil, fmt.Errorf("%w: no JSON object in %q", ErrBadAnswer, truncate(s))
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: %v in %q", ErrBadAnswer, err, truncate(s))
	}
	for k, v := range out {
		out[k] = jsonv.Normalize(v)
	}
	return out, nil
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
