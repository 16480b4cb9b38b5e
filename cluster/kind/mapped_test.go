package kind

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/internal/e2ekit"
)

func TestMappedImage(t *testing.T) {
	r := imagemap.Rule{
		Images:     []string{"example.com/op:*"},
		Entrypoint: []string{"/manager"},
		Cmd:        []string{"controller"},
		Programs:   map[string][]string{"/manager": {"/nonexistent/manager", "/bin/true"}, "helper": {"/bin/echo"}},
		Env:        map[string]string{"PATH": "/opt/bin:/usr/bin", "MODE": "test"},
		WorkingDir: "/work",
		User:       "26:26",
		Users:      []imagemap.User{{Name: "postgres", UID: 26, GID: 26, Home: "/var/lib/postgresql"}},
	}
	img, err := MappedImage("example.com/op:v1", r)
	if err != nil {
		t.Fatal(err)
	}
	v, err := img.build()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := v.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/manager"}) || !slices.Equal(c.Cmd, []string{"controller"}) || c.WorkingDir != "/work" || c.User != "26:26" {
		t.Errorf("config %+v, want the rule's entrypoint, cmd, working folder and user", c)
	}
	if !slices.Contains(c.Env, "PATH=/opt/bin:/usr/bin") || !slices.Contains(c.Env, "MODE=test") || len(c.Env) != 2 {
		t.Errorf("env %v, want the rule's (its PATH replacing the default)", c.Env)
	}
	files := map[string]string{}
	for _, e := range e2ekit.OnlyLayer(t, v) {
		files["/"+strings.TrimSuffix(e.Header.Name, "/")] = string(e.Data)
	}
	for _, want := range []string{"/manager", "/usr/local/bin/helper", "/tmp", "/etc/passwd", "/etc/group"} {
		if _, ok := files[want]; !ok {
			t.Errorf("image lacks %s (has %d entries)", want, len(files))
		}
	}
	if !strings.Contains(files["/etc/passwd"], "postgres:x:26:26:postgres:/var/lib/postgresql:/bin/sh") {
		t.Errorf("passwd %q lacks the rule's account", files["/etc/passwd"])
	}
	var libc bool
	for f := range files {
		libc = libc || strings.HasPrefix(f, "/lib/x86_64-linux-gnu/libc.so")
	}
	if !libc {
		t.Error("the dynamically linked /bin/true came without its C library")
	}

	// A rule whose program is nowhere is an error naming its install hint.
	r.Programs = map[string][]string{"/manager": {"/nonexistent/manager"}}
	r.Install = "build it with `make op`"
	if _, err := MappedImage("example.com/op:v1", r); err == nil || !strings.Contains(err.Error(), "make op") {
		t.Errorf("missing program: %v, want the rule's install hint", err)
	}
}

func TestWithMappedImages(t *testing.T) {
	rules := []imagemap.Rule{
		{Images: []string{"example.com/op:*"}, Entrypoint: []string{"/manager"}, Programs: map[string][]string{"/manager": {"/bin/true"}}},
		{Images: []string{"example.com/sidecar:*"}, Simulate: true},
	}
	p := Provider{Options: Options{Images: []Image{{Refs: []string{"example.com/bundled:dev"}}}}}
	np, err := p.WithMappedImages(rules, []string{"example.com/op:v1", "example.com/sidecar:v1", "example.com/bundled:dev", "quay.io/other:v2", "example.com/op:v1"},
		[]string{"example.com/op:v2", "not an image", "example.com/sidecar:v3", "example.com/op:v1"})
	if err != nil {
		t.Fatal(err)
	}
	o := np.(Provider).Options
	if len(o.Mapped) != 2 || o.Mapped[0].Refs[0] != "example.com/op:v1" || o.Mapped[1].Refs[0] != "example.com/op:v2" {
		t.Errorf("mapped %+v, want example.com/op:v1 once and the optional example.com/op:v2", o.Mapped)
	}
	if !slices.Equal(o.Unmapped, []string{"example.com/sidecar:v1", "quay.io/other:v2"}) {
		t.Errorf("unmapped %v, want the simulated and the unmatched image", o.Unmapped)
	}
	if _, err := offlineImages(o); !errors.Is(err, ErrUnmappedImage) || !strings.Contains(err.Error(), "quay.io/other:v2") {
		t.Errorf("offline with unmapped images: %v, want ErrUnmappedImage naming them", err)
	}
	o.Unmapped = nil
	got, err := offlineImages(o)
	if err != nil {
		t.Errorf("offline: %v", err)
	}
	o.Unmapped = []string{"example.com/sidecar:v1", "quay.io/other:v2"}
	if len(got.Images) != 3 {
		t.Errorf("offline: %d images, want the bundled and the two mapped ones", len(got.Images))
	}
	if len(p.Options.Mapped) != 0 {
		t.Error("WithMappedImages changed its receiver's options")
	}
}

func TestHostFiles(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "share", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "share", "sub", "data.txt"), []byte("d"), 0o644))
	must(os.Symlink("sub/data.txt", filepath.Join(dir, "share", "link.txt")))
	must(os.Symlink("sub", filepath.Join(dir, "share", "dirlink")))
	elf, err := os.ReadFile("/bin/true")
	must(err)
	must(os.WriteFile(filepath.Join(dir, "share", "prog"), elf, 0o755))
	must(os.WriteFile(filepath.Join(dir, "share", "script"), []byte("#!/bin/sh\n"), 0o755))
	files, err := hostFiles(filepath.Join(dir, "share"))
	must(err)
	got := map[string]bool{}
	for _, f := range files {
		if f.Src != f.Dst {
			t.Errorf("%s lands at %s, want the same path", f.Src, f.Dst)
		}
		got[strings.TrimPrefix(f.Dst, dir)] = f.Program
	}
	want := map[string]bool{"/share/sub/data.txt": false, "/share/link.txt": false, "/share/prog": true, "/share/script": false}
	if len(got) != len(want) {
		t.Errorf("files %v, want %v (a link to a folder is not entered)", got, want)
	}
	for k, prog := range want {
		if p, ok := got[k]; !ok || p != prog {
			t.Errorf("%s: present %v program %v, want present, program %v", k, ok, p, prog)
		}
	}
	if _, err := hostFiles(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file gave no error")
	}
}
