package view

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Record is one line of the proxy's evidence: a request it passed, a watch
// event it saw, or a perturbation it made.
type Record struct {
	// Seq orders records; Time is when the proxy wrote it.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// What is "request", "watch-event", "watch-end", "cut" or "restart".
	What string `json:"what"`
	// Request: the verb, group, resource, subresource, namespace and name of
	// the request (from the API server's own request-info parsing), its answer's
	// status and how long it took; Stream numbers a watch's events.
	Verb        string  `json:"verb,omitempty"`
	Group       string  `json:"group,omitempty"`
	Resource    string  `json:"resource,omitempty"`
	Subresource string  `json:"subresource,omitempty"`
	Namespace   string  `json:"namespace,omitempty"`
	Name        string  `json:"name,omitempty"`
	Path        string  `json:"path,omitempty"`
	Status      int     `json:"status,omitempty"`
	Millis      float64 `json:"ms,omitempty"`
	Stream      uint64  `json:"stream,omitempty"`
	// Event: its type, the object's kind and resource version.
	Type            string `json:"type,omitempty"`
	Kind            string `json:"kind,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Action is what the proxy did: "passed" (unchanged), "withheld" (event
	// dropped), "delayed" (event held back for the lag), "lagged" (a read
	// answered at an older resource version), "cut" (the operator's
	// connections closed after this write), "restarted", "expired" (a watch
	// that withheld events ended with 410 Expired so that the client re-lists).
	Action string `json:"action"`
	// Detail says why, or what went wrong.
	Detail string `json:"detail,omitempty"`
}

// recorder writes records as JSON lines to a writer that can be swapped (one
// file per step); with none set, records are counted and dropped.
type recorder struct {
	mu  sync.Mutex
	w   io.Writer
	enc *json.Encoder
	seq uint64
	err error
	// actions counts the records by action since the last reset.
	actions map[string]int
}

// counts returns the records counted by action since the last reset and,
// with reset, starts counting again.
func (r *recorder) counts(reset bool) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.actions))
	for k, v := range r.actions {
		out[k] = v
	}
	if reset {
		r.actions = nil
	}
	return out
}

// setWriter sends the following records to w (nil: none) and returns the
// first write error since the last call.
func (r *recorder) setWriter(w io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	r.err = nil
	r.w = w
	r.enc = nil
	if w != nil {
		r.enc = json.NewEncoder(w)
	}
	return err
}

// add stamps and writes rec.
func (r *recorder) add(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec.Seq = r.seq
	if rec.Action != "passed" && rec.What != "cut" { // a cut is counted on its write's request
		if r.actions == nil {
			r.actions = map[string]int{}
		}
		r.actions[rec.Action]++
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	if r.enc == nil {
		return
	}
	if err := r.enc.Encode(rec); err != nil && r.err == nil {
		r.err = err
	}
}
