package images

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeHost makes a search-path folder holding empty executables with the given names.
func fakeHost(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"redis:*", "redis:7", true},
		{"redis:*", "redis-operator:7", false},
		{"redis:*", "redis", false},
		{"*", "", true},
		{"busybox*", "busybox:1.36", true},
		{"docker.io/*", "docker.io/library/redis:7", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*/valkey:*", "valkey/valkey:8.0", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestReferenceForms(t *testing.T) {
	const dgst = "sha256:4b7f5d5a8b6f1f4e3b0a9c2d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f"
	tests := []struct {
		image string
		want  []string // must all be present
		not   []string
	}{
		{"redis", []string{"redis", "redis:latest", "library/redis:latest", "docker.io/library/redis:latest"}, nil},
		{"valkey/valkey:8.0", []string{"valkey/valkey:8.0", "docker.io/valkey/valkey:8.0"}, []string{"library/valkey/valkey:8.0"}},
		{"docker.io/library/redis:7.2", []string{"redis:7.2", "library/redis:7.2"}, nil},
		{"ghcr.io/gauntlet-dev/valkey-operator:v1", []string{"ghcr.io/gauntlet-dev/valkey-operator:v1"}, []string{"gauntlet-dev/valkey-operator:v1"}},
		{"localhost:5000/app", []string{"localhost:5000/app:latest"}, nil},
		{"redis@" + dgst, []string{"redis@" + dgst, "redis:latest", "docker.io/library/redis@" + dgst}, nil},
		{"redis:7@" + dgst, []string{"redis:7", "redis:7@" + dgst, "library/redis@" + dgst}, nil},
		{"registry-1.docker.io/valkey/valkey:8", []string{"valkey/valkey:8", "docker.io/valkey/valkey:8"}, nil},
		{"index.docker.io/library/redis", []string{"redis:latest"}, nil},
		// Not a reference any runtime would pull: matched as written only.
		{"Redis@sha256:abc", []string{"Redis@sha256:abc"}, []string{"redis:latest", "Redis:latest"}},
	}
	for _, tt := range tests {
		got := referenceForms(tt.image)
		has := map[string]bool{}
		for _, g := range got {
			has[g] = true
		}
		for _, w := range tt.want {
			if !has[w] {
				t.Errorf("referenceForms(%q) = %q, missing %q", tt.image, got, w)
			}
		}
		for _, n := range tt.not {
			if has[n] {
				t.Errorf("referenceForms(%q) = %q, must not contain %q", tt.image, got, n)
			}
		}
	}
}

func TestResolveDefaults(t *testing.T) {
	redisOnly := fakeHost(t, "redis-server", "redis-cli", "sh", "sleep")
	both := fakeHost(t, "valkey-server", "redis-server", "valkey-cli", "sh")
	none := fakeHost(t, "sh")
	opDir := t.TempDir()
	opBin := filepath.Join(opDir, "valkey-operator")
	if err := os.WriteFile(opBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name           string
		search         string
		operator       string
		image          string
		command, args  []string
		wantArgv       []string // "@dir/" prefixes are replaced by the search dir
		wantSimulated  bool
		wantErr        error
		wantErrText    string
		wantAlias      map[string]string
		wantWorkingDir string
		wantUID        int64
	}{
		{name: "valkey image defaults to redis-server when valkey is absent", search: redisOnly, image: "valkey/valkey:8.0",
			wantArgv: []string{"@dir/redis-server"}, wantAlias: map[string]string{"/usr/local/bin/valkey-server": "@dir/redis-server", "/usr/local/bin/valkey-cli": "@dir/redis-cli"}, wantWorkingDir: "/data"},
		{name: "valkey image prefers valkey-server", search: both, image: "docker.io/valkey/valkey:8",
			wantArgv: []string{"@dir/valkey-server"}},
		{name: "args only with a config file prepend the server", search: redisOnly, image: "valkey/valkey",
			args: []string{"/etc/valkey/valkey.conf", "--port", "6380"}, wantArgv: []string{"@dir/redis-server", "/etc/valkey/valkey.conf", "--port", "6380"}},
		{name: "args only with an option prepend the server", search: redisOnly, image: "redis:7",
			args: []string{"--appendonly", "yes"}, wantArgv: []string{"@dir/redis-server", "--appendonly", "yes"}},
		{name: "args naming the server", search: redisOnly, image: "redis:7",
			args: []string{"redis-server", "--appendonly", "yes"}, wantArgv: []string{"@dir/redis-server", "--appendonly", "yes"}},
		{name: "command replaces the image's program", search: redisOnly, image: "valkey/valkey:8.0",
			command: []string{"valkey-cli", "ping"}, args: []string{"-h", "x"}, wantArgv: []string{"@dir/redis-cli", "ping", "-h", "x"}},
		{name: "absolute image path maps by base name", search: redisOnly, image: "valkey/valkey:8.0",
			command: []string{"/usr/local/bin/valkey-server"}, wantArgv: []string{"@dir/redis-server"}},
		{name: "shell from the host inside a valkey pod", search: redisOnly, image: "valkey/valkey:8.0",
			command: []string{"sh", "-c", "valkey-server --port 1"}, wantArgv: []string{"@dir/sh", "-c", "valkey-server --port 1"}},
		{name: "nothing installed names the package", search: none, image: "valkey/valkey:8.0",
			wantErr: ErrNotInstalled, wantErrText: "apt-get install redis-server"},
		{name: "unknown image cannot be pulled", search: redisOnly, image: "quay.io/prometheus/prometheus:v2",
			wantErr: ErrUnmapped, wantErrText: "simulate: true"},
		{name: "the exporter sidecar is simulated on purpose", search: redisOnly, image: "oliver006/redis_exporter:v1.67.0",
			wantSimulated: true},
		{name: "busybox uses the host shell", search: redisOnly, image: "busybox:1.36",
			wantArgv: []string{"@dir/sh"}},
		{name: "busybox command from the host", search: redisOnly, image: "busybox",
			command: []string{"sleep", "3600"}, wantArgv: []string{"@dir/sleep", "3600"}},
		{name: "missing host tool is an error", search: redisOnly, image: "busybox",
			command: []string{"wget", "x"}, wantErr: ErrNotInstalled, wantErrText: "install wget"},
		{name: "operator image runs the built binary", search: redisOnly, operator: opBin, image: "ghcr.io/gauntlet-dev/valkey-operator:v0.1.0",
			args: []string{"--leader-elect"}, wantArgv: []string{opBin, "--leader-elect"}, wantUID: 65532, wantAlias: map[string]string{"/manager": opBin}},
		{name: "operator manifest command /manager", search: redisOnly, operator: opBin, image: "gauntlet/valkey-operator:latest",
			command: []string{"/manager"}, wantArgv: []string{opBin}},
		{name: "operator not built", search: redisOnly, operator: "", image: "gauntlet/valkey-operator:latest",
			wantErr: ErrNotInstalled, wantErrText: "make build"},
		{name: "operator binary missing", search: redisOnly, operator: filepath.Join(opDir, "nope"), image: "gauntlet/valkey-operator:latest",
			wantErr: ErrNotInstalled, wantErrText: "make build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Default(Options{SearchPath: tt.search, OperatorBinary: tt.operator})
			res, err := m.Resolve(tt.image, tt.command, tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve error = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErrText) {
					t.Fatalf("Resolve error %q does not mention %q", err, tt.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if res.Simulated != tt.wantSimulated {
				t.Fatalf("Simulated = %v, want %v (%+v)", res.Simulated, tt.wantSimulated, res)
			}
			if tt.wantSimulated {
				if want := "simulated: mapping rule \"redis-exporter\" simulates image " + tt.image; res.Message != want {
					t.Fatalf("Message = %q, want %q", res.Message, want)
				}
				return
			}
			want := make([]string, len(tt.wantArgv))
			for i, a := range tt.wantArgv {
				want[i] = strings.Replace(a, "@dir", tt.search, 1)
			}
			if !reflect.DeepEqual(res.Argv, want) {
				t.Fatalf("Argv = %q, want %q", res.Argv, want)
			}
			aliases := map[string]string{}
			for _, a := range res.Aliases {
				aliases[a.Target] = a.Path
			}
			for target, p := range tt.wantAlias {
				p = strings.Replace(p, "@dir", tt.search, 1)
				if aliases[target] != p {
					t.Errorf("alias %s = %q, want %q (all: %v)", target, aliases[target], p, aliases)
				}
			}
			if tt.wantWorkingDir != "" && res.WorkingDir != tt.wantWorkingDir {
				t.Errorf("WorkingDir = %q, want %q", res.WorkingDir, tt.wantWorkingDir)
			}
			if tt.wantUID != 0 && (res.UID == nil || *res.UID != tt.wantUID) {
				t.Errorf("UID = %v, want %d", res.UID, tt.wantUID)
			}
		})
	}
}

func TestValkeyInstalledNeedsNoAlias(t *testing.T) {
	dir := fakeHost(t, "valkey-server", "valkey-cli", "redis-server", "redis-cli")
	res, err := Default(Options{SearchPath: dir}).Resolve("valkey/valkey:8", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Aliases {
		if a.Target == "/usr/local/bin/valkey-server" || a.Target == "/usr/local/bin/valkey-cli" {
			t.Errorf("unexpected alias %+v: valkey is installed", a)
		}
	}
}

func TestLoadUserRulesFirst(t *testing.T) {
	host := fakeHost(t, "redis-server", "myserver")
	file := filepath.Join(t.TempDir(), "images.yaml")
	content := `rules:
- name: mine
  images: ["valkey/valkey:7*"]
  simulate: true
- images: ["registry.example.com/app:*"]
  entrypoint: ["/app/server"]
  cmd: ["--serve"]
  env: {MODE: test}
  user: "1000"
  programs:
    /app/server: [missing-server, myserver]
`
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(file, Options{SearchPath: host})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		image     string
		simulated bool
		argv      []string
	}{
		{"valkey/valkey:7.2", true, nil},
		{"valkey/valkey:8.0", false, []string{filepath.Join(host, "redis-server")}},
		{"registry.example.com/app:v3", false, []string{filepath.Join(host, "myserver"), "--serve"}},
	}
	for _, tt := range tests {
		res, err := m.Resolve(tt.image, nil, nil)
		if err != nil {
			t.Fatalf("Resolve(%s): %v", tt.image, err)
		}
		if res.Simulated != tt.simulated || (!tt.simulated && !reflect.DeepEqual(res.Argv, tt.argv)) {
			t.Errorf("Resolve(%s) = %+v, want simulated=%v argv=%q", tt.image, res, tt.simulated, tt.argv)
		}
		if tt.image == "valkey/valkey:7.2" && !strings.Contains(res.Message, `rule "mine"`) {
			t.Errorf("message %q does not name the rule", res.Message)
		}
		if tt.image == "registry.example.com/app:v3" {
			if !reflect.DeepEqual(res.Env, []string{"MODE=test"}) || res.UID == nil || *res.UID != 1000 || res.GID != nil {
				t.Errorf("env/user = %q %v %v", res.Env, res.UID, res.GID)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // all must appear in the error
	}{
		{"unknown field", "rules:\n- images: [a]\n  entrypint: [x]\n", []string{"my.yaml", `unknown field "entrypint"`}},
		{"unknown top-level field", "rulez: []\n", []string{"my.yaml", `unknown field "rulez"`}},
		{"bad yaml", "rules: [\n", []string{"my.yaml", "yaml"}},
		{"empty rule", "rules:\n- {}\n", []string{"my.yaml", "rule 1 is empty"}},
		{"no images", "rules:\n- cmd: [x]\n", []string{"rule 1", `"images" is empty`}},
		{"empty pattern", "rules:\n- images: ['']\n  cmd: [x]\n", []string{"rule 1", "pattern is empty"}},
		{"simulate with command", "rules:\n- images: [a]\n  simulate: true\n  cmd: [x]\n", []string{"simulate: true", "cannot be combined"}},
		{"bad user", "rules:\n- images: [a]\n  user: nobody\n", []string{`user "nobody"`, "numeric"}},
		{"no candidates", "rules:\n- images: [a]\n  programs: {x: []}\n", []string{`program "x" has no candidates`}},
		{"relative candidate", "rules:\n- images: [a]\n  programs: {x: [bin/x]}\n", []string{"absolute path or a bare name"}},
		{"duplicate field", "rules:\n- images: [a]\n  images: [b]\n", []string{"my.yaml", "images"}},
		{"user without name", "rules:\n- images: [a]\n  cmd: [x]\n  users: [{uid: 26, gid: 26}]\n", []string{"users", `user name ""`}},
		{"user relative home", "rules:\n- images: [a]\n  cmd: [x]\n  users: [{name: pg, uid: 26, gid: 26, home: var/lib}]\n", []string{`home "var/lib"`, "absolute"}},
		{"user twice", "rules:\n- images: [a]\n  cmd: [x]\n  users: [{name: pg, uid: 26, gid: 26}, {name: pg2, uid: 26, gid: 27}]\n", []string{"listed twice"}},
		{"user unknown field", "rules:\n- images: [a]\n  cmd: [x]\n  users: [{name: pg, uid: 26, gid: 26, homedir: /x}]\n", []string{`unknown field "homedir"`}},
		{"second rule numbered", "rules:\n- images: [a]\n  cmd: [x]\n- {}\n", []string{"rule 2 is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.content), "my.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"), Options{})
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("Load error = %v, want one naming the file", err)
	}
}

func TestDefaultRulesValid(t *testing.T) {
	for _, opts := range []Options{{}, {OperatorBinary: "/x/op"}, {OperatorBinary: "bin/op"}} {
		if _, err := New(DefaultRules(opts), opts); err != nil {
			t.Fatalf("DefaultRules(%+v) invalid: %v", opts, err)
		}
	}
}

func TestNoCommand(t *testing.T) {
	m, err := New([]Rule{{Images: []string{"app:*"}, WorkingDir: "/w"}}, Options{SearchPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Resolve("app:1", nil, nil)
	if !errors.Is(err, ErrNoCommand) {
		t.Fatalf("error = %v, want ErrNoCommand", err)
	}
}

// The valkey and redis images' entrypoint, started as root for the server,
// drops to user 999: only when the entrypoint runs the server.
func TestRootUser(t *testing.T) {
	host := fakeHost(t, "valkey-server", "valkey-cli", "sh")
	m := Default(Options{SearchPath: host})
	tests := []struct {
		name          string
		image         string
		command, args []string
		drop          bool
	}{
		{"config file argument: the entrypoint starts the server", "valkey/valkey:8.1", nil, []string{"/etc/valkey/valkey.conf"}, true},
		{"no command, no args: the image's CMD", "valkey/valkey:8.1", nil, nil, true},
		{"args naming the server", "redis:7", nil, []string{"redis-server", "--port", "1"}, true},
		{"args naming another image's server", "redis:7", nil, []string{"valkey-server", "--port", "1"}, false},
		{"a command bypasses the entrypoint", "valkey/valkey:8.1", []string{"valkey-server"}, []string{"/etc/valkey/valkey.conf"}, false},
		{"the entrypoint running another program", "valkey/valkey:8.1", nil, []string{"valkey-cli", "ping"}, false},
		{"an image without such an entrypoint", "busybox", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := m.Resolve(tt.image, tt.command, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.RootUID != nil; got != tt.drop {
				t.Fatalf("RootUID set = %v, want %v (argv %v)", got, tt.drop, res.Argv)
			}
			if tt.drop && (*res.RootUID != 999 || res.RootGID == nil || *res.RootGID != 999) {
				t.Fatalf("RootUID/GID = %d/%v, want 999/999", *res.RootUID, res.RootGID)
			}
		})
	}
}

func TestImagePrograms(t *testing.T) {
	m, err := New(nil, Options{SearchPath: "/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	r := Rule{Images: []string{"x:*"}, Entrypoint: []string{"/entry/true"}, Cmd: []string{"--flag"},
		Programs: map[string][]string{"/manager": {"/nonexistent", "/bin/true"}, "tool": {"echo"}}}
	got, err := m.ImagePrograms(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []Alias{{Target: "/entry/true", Path: "/usr/bin/true"}, {Target: "/manager", Path: "/bin/true"}, {Target: AliasDir + "/tool", Path: "/usr/bin/echo"}}
	if len(got) != len(want) {
		t.Fatalf("programs %+v, want %+v", got, want)
	}
	for i := range want {
		// /bin may be a link to /usr/bin: compare what the paths name.
		if got[i].Target != want[i].Target || filepath.Base(got[i].Path) != filepath.Base(want[i].Path) {
			t.Errorf("program %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := m.ImagePrograms(Rule{Images: []string{"x:*"}, Simulate: true}); err == nil {
		t.Error("a simulating rule gave programs")
	}
}
