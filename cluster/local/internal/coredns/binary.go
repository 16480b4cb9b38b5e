package coredns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/controlplane"
	"github.com/gauntlet-dev/gauntlet/internal/binprobe"
)

// Version is the CoreDNS release `make coredns` builds (build/coredns/go.mod):
// the one kubeadm deploys with Kubernetes v1.35.
const Version = "v1.13.1"

// EnvBin names a prebuilt coredns binary (or a folder holding one) used instead
// of the cache.
const EnvBin = "GAUNTLET_COREDNS_BIN"

// ErrBinaryMissing is returned when the coredns binary is found nowhere.
var ErrBinaryMissing = errors.New("coredns binary missing")

// ErrBinaryUnfit is returned when a coredns binary is too old or lacks a plugin the cluster's Corefile uses.
var ErrBinaryUnfit = errors.New("coredns binary is unfit for the cluster DNS")

// requiredPlugins are the plugins the Corefile (see Corefile) uses.
var requiredPlugins = []string{"bind", "cache", "errors", "health", "kubernetes", "loadbalance", "ready", "template"}

// DefaultBinary is the cached build of Version.
func DefaultBinary() string {
	return filepath.Join(controlplane.CacheDir(), "coredns", Version, "coredns")
}

// FindBinary returns the coredns binary: $GAUNTLET_COREDNS_BIN when set (only
// there: a wrong path is an error, never a fall-back to another build), else the
// cache. It checks that it runs, is CoreDNS 1.11 or newer and has the plugins
// the cluster's Corefile uses.
func FindBinary(ctx context.Context) (string, error) {
	path := DefaultBinary()
	where := "the cache"
	if v := os.Getenv(EnvBin); v != "" {
		path, where = v, EnvBin
		if st, err := os.Stat(v); err == nil && st.IsDir() {
			path = filepath.Join(v, "coredns")
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: %s (from %s) is not an executable file; build the pinned CoreDNS with `make coredns` (a few minutes the first time, cached after) or set %s to a prebuilt coredns %s",
			ErrBinaryMissing, path, where, EnvBin, Version)
	}
	if err := checkBinary(ctx, path); err != nil {
		return "", err
	}
	return path, nil
}

var versionRE = regexp.MustCompile(`CoreDNS-(\d+)\.(\d+)\.`)

// checkBinary runs `coredns -version` and `coredns -plugins`.
func checkBinary(ctx context.Context, path string) error {
	probe := binprobe.Prober{Dir: controlplane.ProbeDir()}
	run := func(arg string) (string, error) {
		out, err := probe.Output(ctx, path, arg)
		if err != nil {
			return "", fmt.Errorf("%w: %s %s failed (%v): %s; rebuild it with `make coredns` or point %s at a working binary",
				ErrBinaryUnfit, path, arg, err, strings.TrimSpace(out), EnvBin)
		}
		return out, nil
	}
	out, err := run("-version")
	if err != nil {
		return err
	}
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("%w: %s -version reports %q, want CoreDNS 1.11 or newer (%s is tested)", ErrBinaryUnfit, path, strings.TrimSpace(out), Version)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major != 1 || minor < 11 {
		return fmt.Errorf("%w: %s is CoreDNS %s.%s, want 1.11 or newer (%s is tested); rebuild it with `make coredns`", ErrBinaryUnfit, path, m[1], m[2], Version)
	}
	out, err = run("-plugins")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, f := range strings.Fields(out) {
		have[strings.TrimPrefix(f, "dns.")] = true
	}
	var missing []string
	for _, p := range requiredPlugins {
		if !have[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s lacks the plugins %s; build the pinned CoreDNS with `make coredns`", ErrBinaryUnfit, path, strings.Join(missing, ", "))
	}
	return nil
}
