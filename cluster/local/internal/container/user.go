package container

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
)

// identity is who the program runs as, resolved in the container's filesystem.
type identity struct {
	setIDs bool // false: keep the shim's (root's) credentials
	uid    uint32
	gid    uint32
	groups []uint32
	home   string
}

// resolveIdentity applies what container runtimes do: without GID the user's
// primary group from /etc/passwd (0 when the user has no entry); the supplemental
// groups plus those /etc/group lists the user in (Kubernetes' default "Merge"
// policy); HOME from /etc/passwd, else "/".
func resolveIdentity(spec Spec) identity {
	id := identity{home: "/"}
	id.setIDs = spec.UID != nil || spec.GID != nil || len(spec.SupplementalGroups) > 0
	if spec.UID != nil {
		id.uid = *spec.UID
	}
	name, pgid, home, found := lookupUser("/etc/passwd", id.uid)
	if found && home != "" {
		id.home = home
	}
	switch {
	case spec.GID != nil:
		id.gid = *spec.GID
	case spec.UID != nil && found:
		id.gid = pgid
	}
	id.groups = append([]uint32{}, spec.SupplementalGroups...)
	if spec.UID != nil && found {
		id.groups = append(id.groups, memberGroups("/etc/group", name)...)
	}
	slices.Sort(id.groups)
	id.groups = slices.Compact(id.groups)
	return id
}

// lookupUser finds uid in a passwd file.
func lookupUser(path string, uid uint32) (name string, gid uint32, home string, found bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, "", false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 6 {
			continue
		}
		u, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil || uint32(u) != uid {
			continue
		}
		g, err := strconv.ParseUint(fields[3], 10, 32)
		if err != nil {
			continue
		}
		return fields[0], uint32(g), fields[5], true
	}
	return "", 0, "", false
}

// memberGroups lists the groups of a group file that name the user as a member.
func memberGroups(path, user string) []uint32 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []uint32
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name:password:gid:member,member
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 4 || fields[3] == "" {
			continue
		}
		if !slices.Contains(strings.Split(fields[3], ","), user) {
			continue
		}
		if g, err := strconv.ParseUint(fields[2], 10, 32); err == nil {
			out = append(out, uint32(g))
		}
	}
	return out
}
