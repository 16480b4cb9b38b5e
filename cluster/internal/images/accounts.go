package images

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Passwd returns the /etc/passwd that containers of an image with users see:
// the host's file (host) without the entries whose name or uid one of users
// takes, followed by users' entries.
func Passwd(host []byte, users []User) []byte {
	return merge(host, users, 2, func(u User) (string, int64) { return u.Name, u.UID }, func(u User) string {
		home, shell := u.Home, u.Shell
		if home == "" {
			home = "/"
		}
		if shell == "" {
			shell = "/bin/sh"
		}
		return fmt.Sprintf("%s:x:%d:%d:%s:%s:%s", u.Name, u.UID, u.GID, u.Name, home, shell)
	})
}

// Group returns the /etc/group that containers of an image with users see: the
// host's file (host) without the groups whose name or gid one of users' primary
// groups takes, followed by those groups.
func Group(host []byte, users []User) []byte {
	return merge(host, users, 2, func(u User) (string, int64) { return u.Name, u.GID }, func(u User) string {
		return fmt.Sprintf("%s:x:%d:", u.Name, u.GID)
	})
}

// Home returns the home folder of the account users define for uid.
func Home(users []User, uid int64) (string, bool) {
	for _, u := range users {
		if u.UID == uid {
			if u.Home == "" {
				return "/", true
			}
			return u.Home, true
		}
	}
	return "", false
}

// merge drops from host (a colon-separated account file whose id is field
// idField) the lines that name or number an entry of users, and appends
// users' lines; key gives an entry's name and id, line its text.
func merge(host []byte, users []User, idField int, key func(User) (string, int64), line func(User) string) []byte {
	names, ids := map[string]bool{}, map[int64]bool{}
	for _, u := range users {
		n, id := key(u)
		names[n], ids[id] = true, true
	}
	var b bytes.Buffer
	for _, l := range strings.Split(string(host), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Split(l, ":")
		if len(f) > idField {
			if id, err := strconv.ParseInt(f[idField], 10, 64); (err == nil && ids[id]) || names[f[0]] {
				continue
			}
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	seen := map[string]bool{}
	for _, u := range users {
		l := line(u)
		if seen[l] {
			continue // two users sharing a primary group
		}
		seen[l] = true
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
