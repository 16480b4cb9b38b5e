package mountinfo

import "testing"

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
