package kubeconfig

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
)

// record is what the state root keeps of a view (DIR/NAME/record.json, beside
// its owner record and created.jsonl).
type record struct {
	Name       string    `json:"name"`
	Kubeconfig string    `json:"kubeconfig"`
	Server     string    `json:"server"`
	Created    time.Time `json:"created"`
	// dir is the view's folder; alive whether its owner runs (not stored).
	dir   string
	alive bool
}

// created is one object created through a view: its API path and, for a
// namespaced object, its namespace; Namespace objects are marked IsNamespace.
type created struct {
	Path        string `json:"path"`
	Namespace   string `json:"namespace,omitempty"`
	IsNamespace bool   `json:"isNamespace,omitempty"`
}

// view is a recorded view: what was created through it, in memory and appended
// to DIR/created.jsonl as it happens (a killed run's record is complete).
type view struct {
	root, dir string
	mu        sync.Mutex
	objs      []created
	seen      map[string]bool
	file      *os.File
}

const createdFile = "created.jsonl"

// newView records r under root with this process as its owner. A view of the
// same name whose owner runs is refused; one whose owner is gone is replaced
// (gc removes what it created).
func newView(root string, r record) (*view, error) {
	dir := filepath.Join(recordsDir(root), r.Name)
	unlock, err := hoststate.Lock(filepath.Join(recordsDir(root), ".lock"))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(dir); err == nil {
		if hoststate.OwnerAlive(dir) {
			return nil, fmt.Errorf("kubeconfig: a view called %s is in use by another process (see `gauntlet cluster list`)", r.Name)
		}
		return nil, fmt.Errorf("kubeconfig: an abandoned view called %s is recorded in %s: remove what it created with `gauntlet cluster gc`", r.Name, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kubeconfig: record view %s: %w", r.Name, err)
	}
	if err := hoststate.RecordOwner(dir); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, "record.json"), b, 0o644); err != nil {
		return nil, fmt.Errorf("kubeconfig: record view %s: %w", r.Name, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, createdFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: record view %s: %w", r.Name, err)
	}
	return &view{root: root, dir: dir, seen: map[string]bool{}, file: f}, nil
}

// add records an object created through the view (once).
func (v *view) add(c created) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen[c.Path] {
		return
	}
	v.seen[c.Path] = true
	v.objs = append(v.objs, c)
	if v.file != nil {
		b, _ := json.Marshal(c)
		_, _ = v.file.Write(append(b, '\n'))
	}
}

// created is what was created through the view, oldest first.
func (v *view) created() []created {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]created(nil), v.objs...)
}

// remove closes and deletes the view's record.
func (v *view) remove() error {
	v.mu.Lock()
	if v.file != nil {
		v.file.Close()
		v.file = nil
	}
	v.mu.Unlock()
	return removeView(v.root, record{dir: v.dir})
}

// removeView deletes a view's folder under the records lock.
func removeView(root string, r record) error {
	unlock, err := hoststate.Lock(filepath.Join(recordsDir(root), ".lock"))
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	defer unlock()
	if err := os.RemoveAll(r.dir); err != nil {
		return fmt.Errorf("kubeconfig: remove the record %s: %w", r.dir, err)
	}
	return nil
}

// listViews reads the views recorded under root, by name.
func listViews(root string) ([]record, error) {
	dir := recordsDir(root)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: read the views recorded in %s: %w", dir, err)
	}
	var out []record
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		vdir := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(filepath.Join(vdir, "record.json"))
		if err != nil {
			continue // being created
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil || r.Name != e.Name() {
			continue
		}
		r.dir, r.alive = vdir, hoststate.OwnerAlive(vdir)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readCreated reads a view's created.jsonl (a torn last line, from a killed
// writer, is passed over).
func readCreated(dir string) ([]created, error) {
	f, err := os.Open(filepath.Join(dir, createdFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	defer f.Close()
	var out []created
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c created
		if json.Unmarshal(sc.Bytes(), &c) != nil || c.Path == "" || seen[c.Path] {
			continue
		}
		seen[c.Path] = true
		out = append(out, c)
	}
	return out, sc.Err()
}

// recordingTransport records in view every object a request through it created
// (an answer 201 Created to a POST to a collection or to an apply PATCH). It
// asks for a JSON answer to such a POST, so the created object's name can be
// read whatever encoding the client prefers; clients decode by the answer's type.
type recordingTransport struct {
	next http.RoundTripper
	view *view
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("dryRun") != "" {
		return t.next.RoundTrip(req)
	}
	var coll apiPath
	post := false
	if req.Method == http.MethodPost {
		if p, ok := parsePath(req.URL.Path); ok && p.name == "" {
			coll, post = p, true
			req = req.Clone(req.Context())
			req.Header.Set("Accept", "application/json")
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		return resp, err
	}
	switch {
	case post:
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			return nil, rerr
		}
		var obj struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if json.Unmarshal(body, &obj) == nil && obj.Metadata.Name != "" {
			coll.name = obj.Metadata.Name
			t.view.add(coll.created())
		}
	case req.Method == http.MethodPatch:
		if p, ok := parsePath(req.URL.Path); ok && p.name != "" {
			t.view.add(p.created())
		}
	}
	return resp, nil
}

// apiPath is a parsed API path: a collection (name empty) or one object.
type apiPath struct {
	prefix    string // /api/v1 or /apis/GROUP/VERSION
	namespace string
	resource  string
	name      string
}

// parsePath parses an object or collection path; subresources and other paths
// are not one (ok false).
func parsePath(p string) (apiPath, bool) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	var out apiPath
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		out.prefix, segs = "/"+strings.Join(segs[:2], "/"), segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		out.prefix, segs = "/"+strings.Join(segs[:3], "/"), segs[3:]
	default:
		return apiPath{}, false
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		out.namespace, segs = segs[1], segs[2:]
	}
	switch len(segs) {
	case 1:
		out.resource = segs[0]
	case 2:
		out.resource, out.name = segs[0], segs[1]
	default:
		return apiPath{}, false
	}
	if out.resource == "" || (len(segs) == 2 && out.name == "") {
		return apiPath{}, false
	}
	return out, true
}

// created is the record of the object at p.
func (p apiPath) created() created {
	path := p.prefix
	if p.namespace != "" {
		path += "/namespaces/" + p.namespace
	}
	path += "/" + p.resource + "/" + p.name
	return created{Path: path, Namespace: p.namespace, IsNamespace: p.prefix == "/api/v1" && p.namespace == "" && p.resource == "namespaces"}
}
