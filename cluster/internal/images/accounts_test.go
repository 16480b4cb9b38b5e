package images

import (
	"testing"
)

// TestImageAccounts: an image's own accounts replace host entries of the same
// name or id in the /etc/passwd and /etc/group its containers see, and the
// resolution carries them (CloudNativePG's postgres runs as uid 26, which
// initdb and postgres look up; Debian's host has no uid 26 and gid 26 is tape).
func TestImageAccounts(t *testing.T) {
	host := []byte("root:x:0:0:root:/root:/bin/bash\n" +
		"postgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\n" +
		"other:x:26:26::/:/bin/sh\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
	hostGroup := []byte("root:x:0:\ntape:x:26:\npostgres:x:104:\nssl-cert:x:103:postgres\n")
	users := []User{{Name: "postgres", UID: 26, GID: 26, Home: "/var/lib/postgresql", Shell: "/bin/bash"}}
	got := string(Passwd(host, users))
	want := "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
		"postgres:x:26:26:postgres:/var/lib/postgresql:/bin/bash\n"
	if got != want {
		t.Errorf("passwd:\n%s\nwant:\n%s", got, want)
	}
	gotGroup := string(Group(hostGroup, users))
	wantGroup := "root:x:0:\nssl-cert:x:103:postgres\npostgres:x:26:\n"
	if gotGroup != wantGroup {
		t.Errorf("group:\n%s\nwant:\n%s", gotGroup, wantGroup)
	}
	if h, ok := Home(users, 26); !ok || h != "/var/lib/postgresql" {
		t.Errorf("Home(26) = %q, %v", h, ok)
	}
	if _, ok := Home(users, 1000); ok {
		t.Error("Home(1000) found an account the image does not define")
	}
	if got := string(Passwd(host, []User{{Name: "app", UID: 10001, GID: 10001}})); got != string(host)+"app:x:10001:10001:app:/:/bin/sh\n" {
		t.Errorf("defaults (home /, shell /bin/sh):\n%s", got)
	}

	m, err := New([]Rule{{Images: []string{"pg:*"}, Cmd: []string{"sh"}, Users: users}}, Options{SearchPath: fakeHost(t, "sh")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Resolve("pg:15", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Users) != 1 || res.Users[0] != users[0] {
		t.Errorf("resolution users = %+v, want %+v", res.Users, users)
	}
}
