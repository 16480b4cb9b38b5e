package inputgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/llm"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
)

// Environment variables that configure LLM values.
const (
	EnvLLMBaseURL = "GAUNTLET_LLM_BASE_URL"
	EnvLLMModel   = "GAUNTLET_LLM_MODEL"
	EnvLLMAPIKey  = "GAUNTLET_LLM_API_KEY"
	EnvLLMCache   = "GAUNTLET_LLM_CACHE"
)

// LLMOptions configure values proposed by a language model through any OpenAI-compatible
// chat-completions endpoint. LLM values are off unless BaseURL and Model are set; a CacheFile
// alone replays earlier answers offline (commit it with the target).
type LLMOptions struct {
	BaseURL string `json:"baseURL,omitempty"`
	Model   string `json:"model,omitempty"`
	// APIKey is never serialised or logged.
	APIKey    string `json:"-"`
	CacheFile string `json:"cacheFile,omitempty"`
	// MaxQueries bounds the number of properties asked about (default 40).
	MaxQueries int `json:"maxQueries,omitempty"`
	// Timeout bounds one request (default 60s).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Enabled reports whether the options can produce values (endpoint or cache).
func (o LLMOptions) Enabled() bool { return (o.BaseURL != "" && o.Model != "") || o.CacheFile != "" }

// LLMOptionsFromEnv fills unset fields from GAUNTLET_LLM_BASE_URL, GAUNTLET_LLM_MODEL,
// GAUNTLET_LLM_API_KEY (or OPENAI_API_KEY) and GAUNTLET_LLM_CACHE.
func LLMOptionsFromEnv(o LLMOptions) LLMOptions {
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv(EnvLLMBaseURL)
	}
	if o.Model == "" {
		o.Model = os.Getenv(EnvLLMModel)
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv(EnvLLMAPIKey)
		if o.APIKey == "" {
			o.APIKey = os.Getenv("OPENAI_API_KEY")
		}
	}
	if o.CacheFile == "" {
		o.CacheFile = os.Getenv(EnvLLMCache)
	}
	return o
}

// LLMStats reports what an LLM pass did.
type LLMStats struct {
	Asked     int `json:"asked"`
	FromCache int `json:"fromCache"`
	Requests  int `json:"requests"`
	Values    int `json:"values"`
	Failed    int `json:"failed"`
}

// FillPoolFromLLM asks the model for values of the properties the pool knows too little about
// (image and version properties with fewer than two values, free-text strings without constraints,
// configuration maps without keys) and adds the answers to the pool. Answers come from the cache
// when present; new ones are saved to it. Properties are visited in schema order and at most
// MaxQueries are asked, so runs are reproducible.
func FillPoolFromLLM(ctx context.Context, s *crd.Schema, pool *Pool, o LLMOptions, log *slog.Logger) (LLMStats, error) {
	var st LLMStats
	if !o.Enabled() {
		return st, nil
	}
	if o.MaxQueries <= 0 {
		o.MaxQueries = 40
	}
	annotate(s)
	client, err := llm.New(llm.Config{BaseURL: o.BaseURL, Model: o.Model, APIKey: o.APIKey, CacheFile: o.CacheFile, Timeout: o.Timeout}, log)
	if err != nil {
		return st, err
	}
	// Properties with a meaning (image, version, configuration) first, then free text, each in
	// schema order.
	type ask struct {
		p   *crd.Property
		req llm.Request
	}
	var hinted, plain []ask
	for _, p := range s.Properties() {
		req, ok := llmRequest(p, pool)
		if !ok {
			continue
		}
		if p.Semantic != nil && p.Semantic.Hint != "" {
			hinted = append(hinted, ask{p, req})
		} else {
			plain = append(plain, ask{p, req})
		}
	}
	for _, a := range append(hinted, plain...) {
		if st.Asked >= o.MaxQueries {
			break
		}
		p, req := a.p, a.req
		st.Asked++
		e, cached, err := client.Ask(ctx, req)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return st, err
			}
			st.Failed++
			if log != nil {
				log.Warn("LLM values unavailable", "path", req.Path, "err", err)
			}
			continue
		}
		if cached {
			st.FromCache++
		}
		path := p.Path.String()
		for _, v := range e.Values {
			if fitsType(p, v) {
				pool.Add(path, v, SourceLLM)
				st.Values++
			}
		}
		keys := slices.Sorted(maps.Keys(e.Entries))
		for _, k := range keys {
			pool.AddKey(path, k, e.Entries[k], SourceLLM)
			st.Values++
		}
	}
	st.Requests = client.Requests()
	if err := client.Save(); err != nil {
		return st, err
	}
	return st, nil
}

// llmRequest decides whether to ask about p and builds the request.
func llmRequest(p *crd.Property, pool *Pool) (llm.Request, bool) {
	hint := ""
	if p.Semantic != nil {
		hint = p.Semantic.Hint
	}
	path := p.Path.String()
	known := pool.Values(path)
	var knownVals []any
	for _, k := range known {
		if isScalar(k.Value) {
			knownVals = append(knownVals, k.Value)
		}
	}
	req := llm.Request{Path: path, Type: typeName(p), Description: p.Description, Constraints: constraintsOf(p), Known: knownVals, Count: 5}
	switch {
	case (p.IsFreeForm() || p.IsMap()) && hint == semantic.HintConfig:
		if keys, _ := pool.Keys(path); len(keys) >= 3 {
			return req, false
		}
		req.Kind = llm.KindEntries
		req.Type = "object"
		return req, true
	case p.Type != crd.TypeString || len(p.Enum) > 0 || p.Format != "":
		return req, false
	case hint == semantic.HintImage || hint == semantic.HintVersion:
		if len(knownVals) >= 2 {
			return req, false
		}
		req.Kind = llm.KindValues
		return req, true
	case p.Pattern == "" && len(knownVals) == 0 && !p.InsideList() && hint == "":
		req.Kind = llm.KindValues
		return req, true
	}
	return req, false
}

// constraintsOf renders p's constraints for a prompt.
func constraintsOf(p *crd.Property) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if len(p.Enum) > 0 {
		add("one of %s", compactJSON(p.Enum))
	}
	if p.Pattern != "" {
		add("matches the regular expression %s", p.Pattern)
	}
	if p.Format != "" {
		add("format %s", p.Format)
	}
	if p.MinLength != nil {
		add("at least %d characters", *p.MinLength)
	}
	if p.MaxLength != nil {
		add("at most %d characters", *p.MaxLength)
	}
	if p.Minimum != nil {
		add("minimum %v", *p.Minimum)
	}
	if p.Maximum != nil {
		add("maximum %v", *p.Maximum)
	}
	if p.HasDefault {
		add("default %s", compactJSON(p.Default))
	}
	for _, r := range p.Rules {
		msg := r.Message
		if msg == "" {
			msg = r.Rule
		}
		add("rule: %s", strings.TrimSpace(msg))
	}
	return out
}
