package conf

import (
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		k, v string
		ok   bool
	}{
		{"maxmemory", "100mb", true},
		{"save", "900 1 300 10", true},
		{"notify-keyspace-events", "", true},
		{"port", "7000", false},
		{"requirepass", "x", false},
		{"Maxmemory", "1", false},
		{"maxmemory", "1\ninclude /etc/passwd", false},
		{"", "1", false},
	} {
		if err := Validate(tc.k, tc.v); (err == nil) != tc.ok {
			t.Errorf("Validate(%q, %q) = %v", tc.k, tc.v, err)
		}
	}
}

func TestDiff(t *testing.T) {
	a := Applied{}.WithLive("maxmemory", "100mb", "104857600", "0").WithRestartChanges(Change{Restart: map[string]string{"databases": "32"}})
	a = a.WithRejected("maxmemory-policy", "bogus", "bad value", "img:1")
	spec := map[string]string{
		"maxmemory":        "200mb", // changed live
		"databases":        "32",    // unchanged restart-only
		"io-threads":       "4",     // new restart-only
		"timeout":          "30",    // new live
		"maxmemory-policy": "bogus", // rejected before, same image
		"port":             "1",     // invalid
	}
	c := Diff(spec, a, "img:1")
	if !reflect.DeepEqual(c.Live, map[string]string{"maxmemory": "200mb", "timeout": "30"}) {
		t.Errorf("Live %v", c.Live)
	}
	if !reflect.DeepEqual(c.Restart, map[string]string{"io-threads": "4"}) {
		t.Errorf("Restart %v", c.Restart)
	}
	if _, ok := c.Invalid["port"]; !ok || len(c.Invalid) != 1 {
		t.Errorf("Invalid %v", c.Invalid)
	}
	if c.Rejected["maxmemory-policy"] != "bad value" || len(c.StaleRejections) != 0 {
		t.Errorf("Rejected %v stale %v", c.Rejected, c.StaleRejections)
	}
	// A new image retries rejected keys.
	c = Diff(spec, a, "img:2")
	if _, ok := c.Live["maxmemory-policy"]; !ok || len(c.StaleRejections) != 1 {
		t.Errorf("after an image change: live %v stale %v", c.Live, c.StaleRejections)
	}
	// Removed keys.
	c = Diff(map[string]string{}, a, "img:1")
	if !reflect.DeepEqual(c.RemoveLive, []string{"maxmemory"}) || !reflect.DeepEqual(c.RemoveRestart, []string{"databases"}) {
		t.Errorf("removals: live %v restart %v", c.RemoveLive, c.RemoveRestart)
	}
	if !c.Empty() == (len(c.RemoveLive) == 0) {
		t.Error("Empty")
	}
}

func TestAppliedRecord(t *testing.T) {
	a := Applied{}.WithLive("maxmemory", "100mb", "104857600", "0")
	a = a.WithLive("maxmemory", "200mb", "209715200", "104857600")
	if a.Defaults["maxmemory"] != "0" {
		t.Fatalf("the first default must be kept: %v", a.Defaults)
	}
	if d := a.Drift(map[string]string{"maxmemory": "209715200"}); len(d) != 0 {
		t.Fatalf("no drift expected: %v", d)
	}
	if d := a.Drift(map[string]string{"maxmemory": "0"}); !reflect.DeepEqual(d, []string{"maxmemory"}) {
		t.Fatalf("drift: %v", d)
	}
	b := a.WithRestartKey("hz", "20")
	if !b.IsRestartKey("hz") || b.RestartHash() == a.RestartHash() {
		t.Fatal("a server-reported immutable key must join the restart hash")
	}
	if a.WithoutLive("maxmemory").Config != nil && len(a.WithoutLive("maxmemory").Config) != 0 {
		t.Fatal("WithoutLive")
	}
	round, err := ParseApplied(b.Encode())
	if err != nil || !reflect.DeepEqual(round.normalized(), b.normalized()) {
		t.Fatalf("round trip: %v %+v", err, round)
	}
	if b.Encode() != b.Clone().Encode() {
		t.Fatal("Encode is not deterministic")
	}
	if _, err := ParseApplied("{"); err == nil {
		t.Fatal("garbage record accepted")
	}
	// Live changes do not touch the restart hash.
	if a.RestartHash() != (Applied{}).RestartHash() {
		t.Fatal("live keys changed the restart hash")
	}
}

func TestRender(t *testing.T) {
	got := Render(Base{TLS: true, Auth: true, Persistence: false}, map[string]string{"save": "900 1", "maxmemory": "1gb", "notify-keyspace-events": ""})
	for _, want := range []string{"port 0\n", "tls-port 6379\n", "tls-replication yes\n", "replicaof 127.0.0.1 1\n",
		"include " + AuthFile + "\n", "dir /data\n", "save \"\"\n", "appendonly no\n", "save 900 1\n", "maxmemory 1gb\n", "notify-keyspace-events \"\"\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// The user's save line comes after the operator's default (a later line wins).
	if strings.Index(got, "save 900 1") < strings.Index(got, "save \"\"") {
		t.Error("user keys must follow the operator defaults")
	}
	if got := AuthFileContent(`a"b\c`); got != "requirepass \"a\\\"b\\\\c\"\nmasterauth \"a\\\"b\\\\c\"\n" {
		t.Errorf("auth.conf quoting: %q", got)
	}
}

func TestRestartOnlyListHasSources(t *testing.T) {
	for k, src := range restartOnly {
		if src == "" || IsReserved(k) {
			t.Errorf("%s: source %q, reserved %v", k, src, IsReserved(k))
		}
	}
	for _, k := range []string{"databases", "io-threads", "tcp-backlog", "aclfile"} {
		if !RestartOnly(k) {
			t.Errorf("%s must be restart-only", k)
		}
	}
}
