package mountinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnescape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`/plain/path`, `/plain/path`},
		{`/with\040space`, `/with space`},
		{`/tab\011and\134backslash`, "/tab\tand\\backslash"},
		{`/short\04`, `/short\04`},
		{`/not\xyzoctal`, `/not\xyzoctal`},
	}
	for _, tc := range tests {
		if got := Unescape(tc.in); got != tc.want {
			t.Errorf("Unescape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMountPointsRoot(t *testing.T) {
	mps, err := MountPoints("/")
	if err != nil {
		t.Fatal(err)
	}
	// "/" itself is always a mount point of every process.
	found := false
	for _, m := range mps {
		if m == "/" {
			found = true
		}
	}
	if !found {
		t.Fatalf("MountPoints(\"/\") = %v, lacks \"/\"", mps)
	}
}

// TestRead: lines as the kernel writes them, with escaped spaces in the mount
// point and in an overlay's upperdir, and optional fields before the separator.
func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	data := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
35 22 0:31 / /var/lib/my\040data ro,nosuid shared:5 master:2 - xfs /dev/sdb1 ro,attr2
41 22 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/state/up\040per,workdir=/state/work
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[1].Mountpoint != "/var/lib/my data" || ms[1].FSType != "xfs" || ms[1].Options != "ro,nosuid" {
		t.Fatalf("Read = %+v", ms)
	}
	if v, ok := SuperOption(ms[2], "upperdir"); !ok || v != "/state/up per" {
		t.Errorf("SuperOption(upperdir) = %q, %v; want /state/up per", v, ok)
	}
	if _, ok := SuperOption(ms[0], "upperdir"); ok {
		t.Error("an ext4 mount has an upperdir")
	}
	if _, err := Read(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("reading an absent file did not fail")
	}
}
