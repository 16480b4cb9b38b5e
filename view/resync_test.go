package view

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestResyncExpiresWithheldWatch: a watch that withheld a delete is ended by
// Resync with a 410 Expired error event (the client re-lists); a watch that
// withheld nothing goes on.
func TestResyncExpiresWithheldWatch(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		kind := "Service"
		if r.URL.Path == "/api/v1/namespaces/ns/configmaps" {
			kind = "ConfigMap"
		}
		for i, typ := range []string{"ADDED", "DELETED"} {
			fmt.Fprintf(w, `{"type":%q,"object":{"kind":%q,"apiVersion":"v1","metadata":{"namespace":"ns","name":"a","resourceVersion":"%d"}}}`+"\n", typ, kind, 10+i)
			f.Flush()
		}
		<-r.Context().Done()
	}))
	defer upstream.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, Config{Upstream: &rest.Config{Host: upstream.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetRules(Rules{Withhold: []EventMatch{{Resource: "services", Type: "DELETED"}}})

	watch := func(res string) *bufio.Scanner {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/namespaces/ns/"+res+"?watch=true", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewScanner(resp.Body)
	}
	next := func(sc *bufio.Scanner) (typ string, code int, ok bool) {
		if !sc.Scan() {
			return "", 0, false
		}
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Code int `json:"code"`
			} `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %s: %v", sc.Bytes(), err)
		}
		return ev.Type, ev.Object.Code, true
	}
	svc, cms := watch("services"), watch("configmaps")
	if typ, _, _ := next(svc); typ != "ADDED" {
		t.Fatalf("first service event %q, want ADDED", typ)
	}
	for _, want := range []string{"ADDED", "DELETED"} {
		if typ, _, _ := next(cms); typ != want {
			t.Fatalf("config map event %q, want %s (not withheld)", typ, want)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); p.Effects()["withheld"] == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the service's delete was never withheld")
		}
	}
	if n := p.Resync(); n != 1 {
		t.Fatalf("Resync ended %d watches, want 1 (the one that withheld)", n)
	}
	typ, code, ok := next(svc)
	if !ok || typ != "ERROR" || code != http.StatusGone {
		t.Fatalf("after Resync the service watch got %q code %d (ok %v), want ERROR 410", typ, code, ok)
	}
	if _, _, ok := next(svc); ok {
		t.Fatal("the expired watch went on")
	}
	if got := p.Effects(); got["expired"] != 1 || got["withheld"] != 1 {
		t.Errorf("effects %v, want one withheld and one expired", got)
	}
	p.SetRules(Rules{})
	if got := p.Effects(); len(got) != 0 {
		t.Errorf("effects after SetRules %v, want none", got)
	}
}
