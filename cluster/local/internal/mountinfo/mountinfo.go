// Package mountinfo reads the kernel's lists of mount points
// (/proc/self/mountinfo, /proc/PID/mountinfo) through
// github.com/moby/sys/mountinfo, and adds what the local back end asks of them:
// the mount points below a folder, a superblock option's value.
package mountinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	moby "github.com/moby/sys/mountinfo"
)

// Info is one mount: its point, root, options, file system type, source and
// superblock options. Every field but VFSOptions is unescaped.
type Info = moby.Info

// Read parses a mountinfo file, e.g. /proc/self/mountinfo or /proc/PID/mountinfo.
func Read(path string) ([]*Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	defer func() { _ = f.Close() }()
	mounts, err := moby.GetMountsFromReader(f, nil)
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %s: %w", path, err)
	}
	return mounts, nil
}

// MountPoints returns the mount points of the calling process that are dir
// itself or lie below it, in mountinfo order.
func MountPoints(dir string) ([]string, error) {
	mounts, err := moby.GetMounts(func(m *Info) (skip, stop bool) {
		return m.Mountpoint != dir && !strings.HasPrefix(m.Mountpoint, dir+"/"), false
	})
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	out := make([]string, len(mounts))
	for i, m := range mounts {
		out[i] = m.Mountpoint
	}
	return out, nil
}

// SuperOption returns the (unescaped) value of the superblock option name
// (e.g. an overlay's "upperdir") of m.
func SuperOption(m *Info, name string) (string, bool) {
	for _, o := range strings.Split(m.VFSOptions, ",") {
		if v, ok := strings.CutPrefix(o, name+"="); ok {
			return Unescape(v), true
		}
	}
	return "", false
}

// Unescape decodes the octal escapes (\040 for a space, …) the kernel writes
// into mountinfo fields. Info's fields come unescaped; this is for the
// superblock options and for readers that split lines themselves.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
