package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// noSysResource is this machine's bounding set: every capability up to
// CAP_CHECKPOINT_RESTORE (40) but CAP_SYS_RESOURCE (24).
const noSysResource = 0x000001fffeffffff

func TestFilterJSON(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		field   string
		want    map[string][]string // capability sets after filtering; nil: unchanged
		changed bool
	}{
		{
			name:  "config.json of a privileged container",
			doc:   `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_BPF"],"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_CHOWN","CAP_SYS_RESOURCE"]}},"root":{"path":"rootfs"}}`,
			field: "process",
			want: map[string][]string{
				"bounding": {"CAP_CHOWN", "CAP_BPF"}, "effective": {}, "permitted": {"CAP_CHOWN"},
			},
			changed: true,
		},
		{
			name:    "exec process file",
			doc:     `{"args":["sh"],"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_KILL"]}}`,
			want:    map[string][]string{"bounding": {"CAP_KILL"}},
			changed: true,
		},
		{
			name:  "an unprivileged container is left as it is",
			doc:   `{"process":{"capabilities":{"bounding":["CAP_CHOWN","CAP_KILL"]}}}`,
			field: "process",
		},
		{
			name:  "unknown names are left for runc",
			doc:   `{"process":{"capabilities":{"bounding":["CAP_FROM_THE_FUTURE"]}}}`,
			field: "process",
		},
		{
			name:  "no capabilities at all",
			doc:   `{"process":{"args":["true"]}}`,
			field: "process",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := filterJSON([]byte(tc.doc), tc.field, noSysResource)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Fatalf("changed = %v, want %v", changed, tc.changed)
			}
			if !changed {
				if string(out) != tc.doc {
					t.Fatalf("unchanged document rewritten: %s", out)
				}
				return
			}
			var root map[string]any
			if err := json.Unmarshal(out, &root); err != nil {
				t.Fatal(err)
			}
			proc := root
			if tc.field != "" {
				proc = root[tc.field].(map[string]any)
				if _, ok := root["root"]; !ok {
					t.Errorf("the bundle's other fields lost: %s", out)
				}
			}
			got := map[string][]string{}
			for set, v := range proc["capabilities"].(map[string]any) {
				got[set] = []string{}
				for _, c := range v.([]any) {
					got[set] = append(got[set], c.(string))
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("capabilities = %v, want %v", got, tc.want)
			}
			if _, ok := proc["args"]; !ok {
				t.Errorf("process args lost: %s", out)
			}
		})
	}
}

func TestTarget(t *testing.T) {
	tests := []struct {
		args        []string
		path, field string
	}{
		{[]string{"--root", "/run/r", "--log", "l.json", "create", "--bundle", "/b/1", "--pid-file", "p", "id"}, "/b/1/config.json", "process"},
		{[]string{"run", "-b", "/b/2", "id"}, "/b/2/config.json", "process"},
		{[]string{"create", "--bundle=/b/3", "id"}, "/b/3/config.json", "process"},
		{[]string{"--root", "/run/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, "/tmp/p.json", ""},
		{[]string{"exec", "-p", "/tmp/q.json", "id"}, "/tmp/q.json", ""},
		{[]string{"--root", "/run/r", "start", "id"}, "", ""},
		{[]string{"delete", "--force", "id"}, "", ""},
	}
	for _, tc := range tests {
		path, field := target(tc.args)
		if path != tc.path || field != tc.field {
			t.Errorf("target(%q) = %q, %q; want %q, %q", tc.args, path, field, tc.path, tc.field)
		}
	}
}

func TestBoundingSet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(p, []byte("Name:\tx\nCapPrm:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := boundingSet(p)
	if err != nil || got != noSysResource {
		t.Fatalf("boundingSet = %x, %v; want %x", got, err, uint64(noSysResource))
	}
	if len(capNames) != 41 || capNames[24] != "CAP_SYS_RESOURCE" || capNames[40] != "CAP_CHECKPOINT_RESTORE" {
		t.Fatalf("capability table out of order: %d names, [24]=%s", len(capNames), capNames[24])
	}
	if err := os.WriteFile(p, []byte("Name:\tx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := boundingSet(p); err == nil {
		t.Fatal("a status without CapBnd gave no error")
	}
}
