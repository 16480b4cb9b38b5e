package coredns

import (
	"context"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestCorefileGolden(t *testing.T) {
	got := Corefile(netip.MustParseAddrPort("10.201.3.1:53"), "cluster.local", "/state/coredns/kubeconfig", 40001, 40002)
	golden.Check(t, filepath.Join("testdata", "Corefile.golden"), []byte(got), *update)
}

func TestDefaultBinaryInCache(t *testing.T) {
	t.Setenv("GAUNTLET_CACHE_DIR", "/c")
	if got, want := DefaultBinary(), "/c/coredns/"+Version+"/coredns"; got != want {
		t.Fatalf("DefaultBinary() = %q, want %q", got, want)
	}
}

// fakeBinary writes a shell script that answers -version and -plugins like coredns.
func fakeBinary(t *testing.T, version, plugins string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "coredns")
	script := "#!/bin/sh\ncase \"$1\" in\n-version) echo '" + version + "'; echo 'linux/amd64, go1.26, x';;\n-plugins) printf '%s\\n' " + plugins + ";;\n*) exit 2;;\nesac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFindBinary(t *testing.T) {
	all := strings.Join(requiredPlugins, " ")
	for _, tc := range []struct {
		name    string
		env     func(t *testing.T) string
		wantErr error
		wantMsg string
	}{
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, ErrBinaryMissing, "make coredns"},
		{"too old", func(t *testing.T) string { return fakeBinary(t, "CoreDNS-1.8.0", all) }, ErrBinaryUnfit, "1.11 or newer"},
		{"not coredns", func(t *testing.T) string { return fakeBinary(t, "something else", all) }, ErrBinaryUnfit, "CoreDNS 1.11"},
		{"no kubernetes plugin", func(t *testing.T) string {
			return fakeBinary(t, "CoreDNS-1.13.1", "bind cache errors health loadbalance ready template forward")
		}, ErrBinaryUnfit, "kubernetes"},
		{"fit folder", func(t *testing.T) string { return fakeBinary(t, "CoreDNS-1.13.1", all) }, nil, ""},
		{"fit file, old plugin names", func(t *testing.T) string {
			return filepath.Join(fakeBinary(t, "CoreDNS-1.11.3", "dns."+strings.Join(requiredPlugins, " dns.")), "coredns")
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvBin, tc.env(t))
			path, err := FindBinary(context.Background())
			if tc.wantErr == nil {
				if err != nil || filepath.Base(path) != "coredns" {
					t.Fatalf("FindBinary = %q, %v; want the binary", path, err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v; want %v mentioning %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// TestPickPortPrefers53 holds as root (53 is taken unless something listens)
// and not (53 is never free to an unprivileged user).
func TestPickPortPrefers53(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	p, err := PickPort(lo)
	if err != nil {
		t.Fatal(err)
	}
	if p != 53 && bothFree(lo, 53) {
		t.Fatalf("PickPort = %d although 53 is free", p)
	}
}
