package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxObserved bounds the answers read for the lag bookkeeping.
const maxObserved = 16 << 20

// observeBody reads a JSON answer's metadata.resourceVersion into the clock
// and puts the body back as it was.
func (p *Proxy) observeBody(resp *http.Response) error {
	if resp.ContentLength > maxObserved {
		return fmt.Errorf("%d bytes, more than %d", resp.ContentLength, maxObserved)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxObserved+1))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return err
	}
	if len(body) > maxObserved {
		return fmt.Errorf("more than %d bytes", maxObserved)
	}
	var m objectMeta
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	p.clock.observe(m.Metadata.ResourceVersion, time.Now())
	return nil
}

// queued is a watch event on its way to the operator.
type queued struct {
	raw     []byte
	typ     string
	meta    objectMeta
	reached time.Time // when the cluster had reached the event's version
}

// liveStream is a watch stream being served: whether it withheld an event,
// and how to end it with an expiry.
type liveStream struct {
	withheld bool
	expire   chan struct{}
	once     sync.Once
}

// Resync ends every watch stream that withheld an event with a 410 Expired
// error event (what the API server sends when a watch fell too far behind):
// the operator's client re-lists and sees the current state, so what it
// missed is folded into the state it lists — the coalescing a real watch
// does, rather than a loss no reconnect repairs. It returns how many
// streams it ended.
func (p *Proxy) Resync() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ls := range p.live {
		if ls.withheld {
			ls.once.Do(func() { close(ls.expire) })
			n++
		}
	}
	return n
}

// expiredEvent is the watch event that ends a stream the client must re-list.
var expiredEvent = []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the view proxy expired the watch after withholding events: re-list","reason":"Expired","code":410}}` + "\n")

// filterWatch reads a JSON watch stream, withholds the events the rules
// choose, holds the others back for the lag, and returns what the operator
// reads. Every event is recorded with what happened to it.
func (p *Proxy) filterWatch(r *http.Request, st *reqState, body io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	q := make(chan queued, 4096)
	ls := &liveStream{expire: make(chan struct{})}
	p.mu.Lock()
	p.live[st.stream] = ls
	p.mu.Unlock()
	base := Record{Verb: "watch", Stream: st.stream}
	if ri := st.info; ri != nil {
		base.Group, base.Resource, base.Namespace = ri.APIGroup, ri.Resource, ri.Namespace
	}
	// Reader: decide at arrival, so withholding and lag bookkeeping follow
	// the events as the API server sent them.
	go func() {
		defer close(q)
		last := map[string]json.RawMessage{} // the latest version of each object on this stream
		dec := json.NewDecoder(body)
		for {
			var ev event
			if err := dec.Decode(&ev); err != nil {
				rec := base
				rec.What, rec.Action = "watch-end", "passed"
				if !errors.Is(err, io.EOF) {
					rec.Detail = err.Error()
				}
				p.rec.add(rec)
				return
			}
			now := time.Now()
			var m objectMeta
			_ = json.Unmarshal(ev.Object, &m)
			p.clock.observe(m.Metadata.ResourceVersion, now)
			key := m.Metadata.Namespace + "/" + m.Metadata.Name
			prev := last[key]
			if ev.Type == "DELETED" {
				delete(last, key)
			} else if ev.Type == "ADDED" || ev.Type == "MODIFIED" {
				last[key] = ev.Object
			}
			rec := base
			rec.What, rec.Type, rec.Kind, rec.Namespace, rec.Name, rec.ResourceVersion = "watch-event", ev.Type, m.Kind, m.Metadata.Namespace, m.Metadata.Name, m.Metadata.ResourceVersion
			if why := p.withhold(st, ls, ev.Type, m, prev, ev.Object); why != "" {
				rec.Action, rec.Detail = "withheld", why
				p.rec.add(rec)
				continue
			}
			raw, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			reached, ok := p.clock.reached(m.Metadata.ResourceVersion)
			if !ok {
				reached = now
			}
			select {
			case q <- queued{raw: raw, typ: ev.Type, meta: m, reached: reached}:
			case <-r.Context().Done():
				return
			}
		}
	}()
	// Writer: release each event once the lag in force has passed since
	// the cluster reached it; order is kept.
	go func() {
		defer body.Close()
		defer func() {
			p.mu.Lock()
			delete(p.live, st.stream)
			p.mu.Unlock()
		}()
		expire := func() {
			rec := base
			rec.What, rec.Type, rec.Action, rec.Detail = "watch-end", "ERROR", "expired", "410 Expired after withheld events: the client re-lists"
			p.rec.add(rec)
			_, _ = pw.Write(expiredEvent)
			pw.Close()
		}
		for {
			var item queued
			select {
			case it, ok := <-q:
				if !ok {
					pw.Close()
					return
				}
				item = it
			case <-ls.expire:
				expire()
				return
			}
			rec := base
			rec.What, rec.Type, rec.Kind, rec.Namespace, rec.Name, rec.ResourceVersion, rec.Action = "watch-event", item.typ, item.meta.Kind, item.meta.Metadata.Namespace, item.meta.Metadata.Name, item.meta.Metadata.ResourceVersion, "passed"
			held := time.Duration(0)
			for {
				wait := time.Until(item.reached.Add(p.Rules().lagFor(st.info)))
				if wait <= 0 {
					break
				}
				step := min(wait, 250*time.Millisecond) // the lag may change while it waits
				select {
				case <-time.After(step):
					held += step
				case <-ls.expire:
					expire()
					return
				case <-r.Context().Done():
					pw.CloseWithError(r.Context().Err())
					return
				}
			}
			if held > 0 {
				rec.Action, rec.Detail = "delayed", "held "+held.Round(time.Millisecond).String()
			}
			// Recorded before it is written: the operator may act on it at once.
			p.rec.add(rec)
			if _, err := pw.Write(append(item.raw, '\n')); err != nil {
				return
			}
		}
	}()
	return pr
}

// withhold decides whether an event is withheld and says which rule chose it.
func (p *Proxy) withhold(st *reqState, ls *liveStream, typ string, m objectMeta, prev, cur json.RawMessage) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var statusOnly *bool
	for i, w := range p.rules.Withhold {
		if w.Limit > 0 && p.withheld[i] >= w.Limit {
			continue
		}
		if w.StatusOnly && statusOnly == nil {
			so := statusOnlyChange(prev, cur)
			statusOnly = &so
		}
		if w.matches(st.info, typ, m, statusOnly != nil && *statusOnly) {
			p.withheld[i]++
			ls.withheld = true
			return fmt.Sprintf("withhold rule %d (%s)", i+1, w)
		}
	}
	return ""
}

// String names the match in records.
func (m EventMatch) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("type", m.Type)
	add("group", m.Group)
	add("resource", m.Resource)
	add("namespace", m.Namespace)
	add("name", m.Name)
	if m.StatusOnly {
		parts = append(parts, "status-only")
	}
	if len(parts) == 0 {
		return "every event"
	}
	return strings.Join(parts, " ")
}

// laggedGet answers a get with the object as it was at resource version rv:
// an exact-version list of that one name (a get cannot ask for an exact
// version), its item, or NotFound when it did not exist then.
func (p *Proxy) laggedGet(w http.ResponseWriter, r *http.Request, st *reqState, rv string) {
	ri := st.info
	listURL := *r.URL
	listURL.Path = strings.TrimSuffix(r.URL.Path, "/"+ri.Name)
	q := listURL.Query()
	q.Set("fieldSelector", "metadata.name="+ri.Name)
	q.Set("resourceVersion", rv)
	q.Set("resourceVersionMatch", "Exact")
	listURL.RawQuery = q.Encode()
	target := p.upstreamURL(&listURL)
	out, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target, nil)
	if err != nil {
		p.errorHandler(w, r, err)
		return
	}
	for _, h := range []string{"Authorization", "Impersonate-User", "Impersonate-Group", "User-Agent"} {
		if v := r.Header.Values(h); len(v) > 0 {
			out.Header[h] = v
		}
	}
	out.Header.Set("Accept", "application/json")
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		st.status, st.detail = http.StatusBadGateway, err.Error()
		http.Error(w, "view proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxObserved))
	if err != nil {
		st.status, st.detail = http.StatusBadGateway, err.Error()
		http.Error(w, "view proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	write := func(code int, b []byte) {
		st.status = code
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}
	if resp.StatusCode != http.StatusOK {
		st.detail += ": the API server answered " + resp.Status
		write(resp.StatusCode, body)
		return
	}
	var list struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		st.status, st.detail = http.StatusBadGateway, "read the list: "+err.Error()
		http.Error(w, "view proxy: "+st.detail, http.StatusBadGateway)
		return
	}
	if len(list.Items) == 0 {
		st.status = http.StatusNotFound
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", ri.Resource, ri.Name),
			map[string]any{"name": ri.Name, "group": ri.APIGroup, "kind": ri.Resource})
		return
	}
	item := list.Items[0]
	if _, ok := item["kind"]; !ok {
		item["kind"] = strings.TrimSuffix(list.Kind, "List")
	}
	if _, ok := item["apiVersion"]; !ok {
		item["apiVersion"] = list.APIVersion
	}
	b, err := json.Marshal(item)
	if err != nil {
		st.status, st.detail = http.StatusBadGateway, err.Error()
		http.Error(w, "view proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	write(http.StatusOK, b)
}
