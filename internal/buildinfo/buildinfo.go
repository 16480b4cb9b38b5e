// Package buildinfo reports what this build of Gauntlet is.
package buildinfo

import (
	"runtime/debug"
)

// version is set with -ldflags "-X github.com/gauntlet-dev/gauntlet/internal/buildinfo.version=…".
var version = ""

// Version is the release (from -ldflags) or the VCS revision the binary was built from.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel+" + rev
}
