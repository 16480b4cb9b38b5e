package view

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/gauntlet-dev/gauntlet/model"
)

var infos = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

func info(t *testing.T, method, target string) *request.RequestInfo {
	t.Helper()
	ri, err := infos.NewRequestInfo(httptest.NewRequest(method, target, nil))
	if err != nil {
		t.Fatalf("request info of %s %s: %v", method, target, err)
	}
	return ri
}

func TestClockLag(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newClock(time.Minute)
	c.observe("100", t0)
	c.observe("105", t0.Add(2*time.Second))
	c.observe("103", t0.Add(3*time.Second)) // older than the newest: says nothing about now
	c.observe("105", t0.Add(4*time.Second)) // seen before: keeps its first time
	c.observe("not-a-revision", t0.Add(4*time.Second))
	c.observe("110", t0.Add(5*time.Second))

	for _, tc := range []struct {
		at   time.Duration
		want string
		ok   bool
	}{
		{-time.Second, "", false},
		{0, "100", true},
		{time.Second, "100", true},
		{2 * time.Second, "105", true},
		{4 * time.Second, "105", true},
		{10 * time.Second, "110", true},
	} {
		got, ok := c.at(t0.Add(tc.at))
		if got != tc.want || ok != tc.ok {
			t.Errorf("at(t0%+v) = %q, %v; want %q, %v", tc.at, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		rv   string
		want time.Duration
		ok   bool
	}{
		{"100", 0, true},
		{"101", 2 * time.Second, true}, // not seen: the cluster had reached it by the time 105 was seen
		{"105", 2 * time.Second, true},
		{"106", 5 * time.Second, true},
		{"111", 0, false},
		{"x", 0, false},
	} {
		got, ok := c.reached(tc.rv)
		if ok != tc.ok || (ok && !got.Equal(t0.Add(tc.want))) {
			t.Errorf("reached(%s) = %v, %v; want t0+%v, %v", tc.rv, got, ok, tc.want, tc.ok)
		}
	}
	// History older than keep goes, except the newest revision.
	c.observe("120", t0.Add(2*time.Minute))
	if _, ok := c.at(t0.Add(10 * time.Second)); ok {
		t.Errorf("revisions older than the history's length are still known")
	}
	if rv, ok := c.at(t0.Add(2 * time.Minute)); !ok || rv != "120" {
		t.Errorf("at(newest) = %q, %v; want 120", rv, ok)
	}
}

func TestWriteCounter(t *testing.T) {
	w := &writeCounter{m: WriteMatch{Verb: "create", Resource: "services", N: 2}}
	seq := []struct {
		method, path string
		fire         bool
	}{
		{"GET", "/api/v1/namespaces/a/services/x", false},  // a read
		{"POST", "/api/v1/namespaces/a/configmaps", false}, // another resource
		{"POST", "/api/v1/namespaces/a/services", false},   // first create
		{"PUT", "/api/v1/namespaces/a/services/x", false},  // an update
		{"POST", "/api/v1/namespaces/a/services", true},    // second create: fire
		{"POST", "/api/v1/namespaces/a/services", false},   // fires once
	}
	for i, s := range seq {
		if got := w.next(info(t, s.method, s.path)); got != s.fire {
			t.Errorf("write %d (%s %s): fire = %v, want %v", i, s.method, s.path, got, s.fire)
		}
	}
	st := &writeCounter{m: WriteMatch{Resource: "valkeyclusters", Group: "valkey.gauntlet.dev", Subresource: "status"}}
	if st.next(info(t, "PUT", "/apis/valkey.gauntlet.dev/v1alpha1/namespaces/a/valkeyclusters/v")) {
		t.Errorf("a spec update matched a status-write rule")
	}
	if !st.next(info(t, "PUT", "/apis/valkey.gauntlet.dev/v1alpha1/namespaces/a/valkeyclusters/v/status")) {
		t.Errorf("the first status update did not fire (N 0 means 1)")
	}
	del := &writeCounter{m: WriteMatch{Verb: "delete"}}
	if del.next(info(t, "PATCH", "/api/v1/namespaces/a/pods/p")) || !del.next(info(t, "DELETE", "/api/v1/namespaces/a/pods/p")) {
		t.Errorf("a delete rule chose the wrong write")
	}
}

func TestEventMatch(t *testing.T) {
	svcWatch := info(t, "GET", "/api/v1/namespaces/a/services?watch=true")
	crWatch := info(t, "GET", "/apis/valkey.gauntlet.dev/v1alpha1/valkeyclusters?watch=true")
	meta := func(ns, name string) objectMeta {
		var m objectMeta
		m.Metadata.Namespace, m.Metadata.Name = ns, name
		return m
	}
	for _, tc := range []struct {
		name       string
		m          EventMatch
		ri         *request.RequestInfo
		typ        string
		obj        objectMeta
		statusOnly bool
		want       bool
	}{
		{"any", EventMatch{}, svcWatch, "ADDED", meta("a", "s"), false, true},
		{"delete of services", EventMatch{Resource: "services", Type: "DELETED"}, svcWatch, "DELETED", meta("a", "s"), false, true},
		{"type is case-insensitive", EventMatch{Type: "deleted"}, svcWatch, "DELETED", meta("a", "s"), false, true},
		{"modify is not delete", EventMatch{Resource: "services", Type: "DELETED"}, svcWatch, "MODIFIED", meta("a", "s"), false, false},
		{"other resource", EventMatch{Resource: "services"}, crWatch, "DELETED", meta("a", "v"), false, false},
		{"group", EventMatch{Group: "valkey.gauntlet.dev"}, crWatch, "MODIFIED", meta("a", "v"), false, true},
		{"core group is not valkey's", EventMatch{Group: "valkey.gauntlet.dev"}, svcWatch, "MODIFIED", meta("a", "s"), false, false},
		{"name", EventMatch{Name: "other"}, svcWatch, "ADDED", meta("a", "s"), false, false},
		{"namespace", EventMatch{Namespace: "b"}, svcWatch, "ADDED", meta("a", "s"), false, false},
		{"status-only modify", EventMatch{StatusOnly: true}, crWatch, "MODIFIED", meta("a", "v"), true, true},
		{"spec modify is not status-only", EventMatch{StatusOnly: true}, crWatch, "MODIFIED", meta("a", "v"), false, false},
		{"status-only needs MODIFIED", EventMatch{StatusOnly: true}, crWatch, "ADDED", meta("a", "v"), true, false},
		{"no request info", EventMatch{}, nil, "ADDED", meta("a", "s"), false, false},
	} {
		if got := tc.m.matches(tc.ri, tc.typ, tc.obj, tc.statusOnly); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStatusOnlyChange(t *testing.T) {
	base := `{"apiVersion":"v1","kind":"X","metadata":{"name":"a","resourceVersion":"1","generation":1,"managedFields":[]},"spec":{"r":1},"status":{"p":"A"}}`
	for _, tc := range []struct {
		name, cur string
		want      bool
	}{
		{"status and version", `{"apiVersion":"v1","kind":"X","metadata":{"name":"a","resourceVersion":"2","generation":1,"managedFields":[{"m":1}]},"spec":{"r":1},"status":{"p":"B"}}`, true},
		{"spec", `{"apiVersion":"v1","kind":"X","metadata":{"name":"a","resourceVersion":"2","generation":2},"spec":{"r":2},"status":{"p":"A"}}`, false},
		{"labels", `{"apiVersion":"v1","kind":"X","metadata":{"name":"a","resourceVersion":"2","generation":1,"labels":{"l":"v"}},"spec":{"r":1},"status":{"p":"A"}}`, false},
		{"unreadable", `{`, false},
	} {
		if got := statusOnlyChange(json.RawMessage(base), json.RawMessage(tc.cur)); got != tc.want {
			t.Errorf("%s: statusOnlyChange = %v, want %v", tc.name, got, tc.want)
		}
	}
	if statusOnlyChange(nil, json.RawMessage(base)) {
		t.Errorf("a change from an unknown version is status-only")
	}
}

func TestPreferJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"application/vnd.kubernetes.protobuf, application/json", "application/json"},
		{"application/vnd.kubernetes.protobuf;stream=watch,application/json", "application/json"},
		{"application/json", "application/json"},
		{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf"}, // JSON not accepted: left alone
		{"", ""},
	} {
		h := http.Header{}
		if tc.in != "" {
			h.Set("Accept", tc.in)
		}
		preferJSON(h)
		if got := h.Get("Accept"); got != tc.want {
			t.Errorf("preferJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRecorder(t *testing.T) {
	var r recorder
	r.add(Record{What: "request"}) // no writer: counted, dropped
	var a, b bytes.Buffer
	if err := r.setWriter(&a); err != nil {
		t.Fatal(err)
	}
	r.add(Record{What: "request", Verb: "get", Action: "passed"})
	if err := r.setWriter(&b); err != nil {
		t.Fatal(err)
	}
	r.add(Record{What: "watch-event", Type: "DELETED", Action: "withheld"})
	var got Record
	if err := json.Unmarshal(a.Bytes(), &got); err != nil || got.Seq != 2 || got.Verb != "get" {
		t.Errorf("first file: %q (%v), want the get as record 2", a.String(), err)
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got.Seq != 3 || got.Action != "withheld" || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("second file: %q (%v), want only the withheld event as record 3", b.String(), err)
	}
}

func TestPointDeployment(t *testing.T) {
	dep := map[string]any{"kind": "Deployment", "spec": map[string]any{"replicas": 1, "template": map[string]any{"spec": map[string]any{
		"containers": []any{
			map[string]any{"name": "manager", "env": []any{map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": "old"}, map[string]any{"name": "X", "value": "1"}}},
			map[string]any{"name": "sidecar", "ports": []any{map[string]any{"containerPort": 8080}}},
		},
	}}}}
	if err := PointDeployment(dep, "10.201.0.1:41000"); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(dep)
	for _, want := range []string{
		`"env":[{"name":"KUBERNETES_SERVICE_HOST","value":"10.201.0.1"},{"name":"X","value":"1"},{"name":"KUBERNETES_SERVICE_PORT","value":"41000"}]`,
		`"env":[{"name":"KUBERNETES_SERVICE_HOST","value":"10.201.0.1"},{"name":"KUBERNETES_SERVICE_PORT","value":"41000"}],"name":"sidecar"`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("pointed Deployment %s lacks %s", got, want)
		}
	}
	if err := PointDeployment(map[string]any{"kind": "Deployment"}, "10.201.0.1:41000"); err == nil {
		t.Errorf("a Deployment without containers was pointed")
	}
	if err := PointDeployment(dep, "no-port"); err == nil {
		t.Errorf("an address without a port was accepted")
	}
}

func TestRulesFor(t *testing.T) {
	r, err := RulesFor(model.FaultStaleRead, FaultTarget{})
	if err != nil || r.Lag != 5*time.Second || len(r.Withhold) > 0 || r.CrashAfter != nil {
		t.Errorf("stale-read = %+v, %v; want a 5s lag only", r, err)
	}
	r, err = RulesFor(model.FaultMissedEvent, FaultTarget{Resource: "services", Namespace: "a"})
	if err != nil || len(r.Withhold) != 1 || r.Withhold[0] != (EventMatch{Resource: "services", Namespace: "a", Type: "DELETED"}) {
		t.Errorf("missed-event = %+v, %v; want services' deletes in a withheld", r, err)
	}
	r, err = RulesFor(model.FaultMissedEvent, FaultTarget{StatusOnly: true})
	if err != nil || len(r.Withhold) != 1 || r.Withhold[0] != (EventMatch{StatusOnly: true}) {
		t.Errorf("status-only missed-event = %+v, %v", r, err)
	}
	r, err = RulesFor(model.FaultCrashAfterWrite, FaultTarget{Verb: "create", Resource: "statefulsets"})
	if err != nil || r.CrashAfter == nil || *r.CrashAfter != (WriteMatch{Verb: "create", Resource: "statefulsets", N: 1}) || !r.Active() {
		t.Errorf("crash-after-write = %+v, %v", r, err)
	}
	if _, err := RulesFor(model.FaultPodKill, FaultTarget{}); err == nil || !strings.Contains(err.Error(), "stale-read") {
		t.Errorf("pod-kill: err = %v, want one naming the view's kinds", err)
	}
	if (Rules{}).Active() {
		t.Errorf("the zero Rules are active")
	}
}
