package view

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// Rules are the perturbations the proxy applies; the zero value passes
// everything through unchanged.
type Rules struct {
	// Lag serves reads (get, list) and watch events as the cluster was Lag ago:
	// lists and gets are answered at the newest resource version the proxy had
	// seen Lag ago (an exact-version read), and each watch event is held until
	// Lag after the cluster reached its version. 0: no lag. Keep it below the
	// API server's compaction interval (5 minutes by default), or reads of the
	// old version fail with 410 Gone.
	Lag time.Duration `json:"lag,omitempty"`
	// LagOnly narrows the lag to reads and watches of these resources (none:
	// every resource lags).
	LagOnly []Resource `json:"lagOnly,omitempty"`
	// Withhold lists the watch events that are dropped (never delivered).
	Withhold []EventMatch `json:"withhold,omitempty"`
	// CrashAfter, when set, cuts the operator's connections right after its
	// Nth matching write reached the API server (before it sees the answer)
	// and restarts it. It fires once.
	CrashAfter *WriteMatch `json:"crashAfter,omitempty"`
}

// Active reports whether any perturbation is set.
func (r Rules) Active() bool {
	return r.Lag > 0 || len(r.Withhold) > 0 || r.CrashAfter != nil
}

// Resource names an API resource ("" group: the core group; the resource in
// the plural, as in URLs).
type Resource struct {
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"`
}

// String is group/resource, or the resource alone for the core group.
func (r Resource) String() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// lagFor is the lag in force for a request (or watch stream) ri.
func (r Rules) lagFor(ri *request.RequestInfo) time.Duration {
	if r.Lag <= 0 || len(r.LagOnly) == 0 {
		return r.Lag
	}
	if ri == nil {
		return 0
	}
	for _, x := range r.LagOnly {
		if x.Group == ri.APIGroup && x.Resource == ri.Resource {
			return r.Lag
		}
	}
	return 0
}

// EventMatch chooses watch events. Empty fields match anything.
type EventMatch struct {
	// Group and Resource name the API resource ("" group: the core group;
	// resource in the plural, as in URLs: "services", "valkeyclusters").
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Namespace and Name narrow it to objects of that namespace or name.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Type is the event type: ADDED, MODIFIED or DELETED.
	Type string `json:"type,omitempty"`
	// StatusOnly matches only MODIFIED events that change nothing but the
	// object's status (and its resource version and managed fields): the
	// events a coalescing watch would fold into the next one.
	StatusOnly bool `json:"statusOnly,omitempty"`
	// Limit is how many matching events to withhold (0: every one).
	Limit int `json:"limit,omitempty"`
}

// WriteMatch chooses the operator's writes. Empty fields match anything.
type WriteMatch struct {
	// Verb is create, update, patch, delete or deletecollection ("": any write).
	Verb string `json:"verb,omitempty"`
	// Group, Resource and Subresource name the API resource ("status" for
	// status writes; "" matches any subresource, including none).
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	// Namespace narrows it to writes in that namespace.
	Namespace string `json:"namespace,omitempty"`
	// N: the Nth matching write triggers the crash (1 if 0).
	N int `json:"n,omitempty"`
}

// writeVerbs are the request verbs that change the cluster.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// IsWriteVerb reports whether a request verb changes the cluster.
func IsWriteVerb(verb string) bool { return writeVerbs[verb] }

// isWrite reports whether a request changes the cluster.
func isWrite(ri *request.RequestInfo) bool {
	return ri != nil && ri.IsResourceRequest && writeVerbs[ri.Verb]
}

// matches reports whether the write request ri is one m chooses.
func (m WriteMatch) matches(ri *request.RequestInfo) bool {
	if !isWrite(ri) {
		return false
	}
	return (m.Verb == "" || m.Verb == ri.Verb) &&
		(m.Group == "" || m.Group == ri.APIGroup) &&
		(m.Resource == "" || m.Resource == ri.Resource) &&
		(m.Subresource == "" || m.Subresource == ri.Subresource) &&
		(m.Namespace == "" || m.Namespace == ri.Namespace)
}

// String names the match in records.
func (m WriteMatch) String() string {
	verb, res := m.Verb, m.Resource
	if verb == "" {
		verb = "write"
	}
	if res == "" {
		res = "any resource"
	}
	if m.Group != "" {
		res += "." + m.Group
	}
	if m.Subresource != "" {
		res += "/" + m.Subresource
	}
	return fmt.Sprintf("%s of %s #%d", verb, res, max(m.N, 1))
}

// writeCounter counts the writes a WriteMatch chooses and says when the
// chosen one comes; it fires once.
type writeCounter struct {
	m     WriteMatch
	count int
	fired bool
}

// next counts ri and reports whether it is the write to crash after.
func (w *writeCounter) next(ri *request.RequestInfo) bool {
	if w.fired || !w.m.matches(ri) {
		return false
	}
	w.count++
	if w.count >= max(w.m.N, 1) {
		w.fired = true
		return true
	}
	return false
}

// event is one watch event as the API server sends it in JSON.
type event struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// objectMeta is what the proxy reads of an event's object.
type objectMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Namespace       string `json:"namespace"`
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// matches reports whether m chooses an event of type typ on an object
// (namespace, name) of the resource ri watches; statusOnly says whether the
// event changes nothing but the status.
func (m EventMatch) matches(ri *request.RequestInfo, typ string, meta objectMeta, statusOnly bool) bool {
	if ri == nil {
		return false
	}
	return (m.Group == "" || m.Group == ri.APIGroup) &&
		(m.Resource == "" || m.Resource == ri.Resource) &&
		(m.Namespace == "" || m.Namespace == meta.Metadata.Namespace) &&
		(m.Name == "" || m.Name == meta.Metadata.Name) &&
		(m.Type == "" || strings.EqualFold(m.Type, typ)) &&
		(!m.StatusOnly || (typ == "MODIFIED" && statusOnly))
}

// volatileMeta are the metadata fields every write changes.
var volatileMeta = []string{"resourceVersion", "managedFields", "generation"}

// statusOnlyChange reports whether cur differs from prev (two versions of one
// object, as JSON) in nothing but status, resource version, generation and
// managed fields. A change that cannot be read is not status-only.
func statusOnlyChange(prev, cur json.RawMessage) bool {
	if prev == nil || cur == nil {
		return false
	}
	var a, b map[string]any
	if json.Unmarshal(prev, &a) != nil || json.Unmarshal(cur, &b) != nil {
		return false
	}
	strip := func(o map[string]any) {
		delete(o, "status")
		if md, ok := o["metadata"].(map[string]any); ok {
			for _, k := range volatileMeta {
				delete(md, k)
			}
		}
	}
	strip(a)
	strip(b)
	return reflect.DeepEqual(a, b)
}
