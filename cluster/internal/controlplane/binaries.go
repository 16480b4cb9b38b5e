package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/internal/binprobe"
)

// Version is the Kubernetes release the embedded cluster is built and tested with.
const Version = "v1.35.4"

// EnvBinDir names a folder of prebuilt control-plane binaries used instead of the cache.
const EnvBinDir = "GAUNTLET_CONTROLPLANE_BIN"

// EnvEnvtest is the envtest convention (etcd and kube-apiserver only); honoured after EnvBinDir.
const EnvEnvtest = "KUBEBUILDER_ASSETS"

// ErrBinaryMissing is returned when a control-plane binary is found nowhere.
var ErrBinaryMissing = errors.New("control-plane binary missing")

// ErrBinaryVersion is returned when a control-plane binary is not of the supported minor version.
var ErrBinaryVersion = errors.New("control-plane binary has an unsupported version")

// Binaries are the paths of the four control-plane programs.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Scheduler         string
}

// CacheDir is where `make controlplane` puts the pinned build (hoststate.CacheDir).
func CacheDir() string { return hoststate.CacheDir() }

// ProbeDir caches binaries' answers to --version (internal/binprobe).
func ProbeDir() string { return filepath.Join(CacheDir(), "probes") }

// DefaultBinDir is the cache folder of the pinned build of Version.
func DefaultBinDir() string { return filepath.Join(CacheDir(), "controlplane", Version) }

// FindBinaries looks each program up in $GAUNTLET_CONTROLPLANE_BIN when it is
// set (only there: a wrong path is an error, never a silent fall-back to another
// build), else in $KUBEBUILDER_ASSETS, then the cache, and checks its version
// (major.minor of Version for Kubernetes, 3.5 or 3.6 for etcd).
func FindBinaries(ctx context.Context) (Binaries, error) {
	dirs := []string{os.Getenv(EnvBinDir)}
	if dirs[0] == "" {
		dirs = dirs[:0]
		if d := os.Getenv(EnvEnvtest); d != "" {
			dirs = append(dirs, d)
		}
		dirs = append(dirs, DefaultBinDir())
	}
	find := func(name string) (string, error) {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%w: %s not found in %s; build the pinned control plane with `make controlplane` (about 6 minutes the first time, cached after) or set %s to a folder holding prebuilt %s binaries",
			ErrBinaryMissing, name, strings.Join(dirs, ", "), EnvBinDir, Version)
	}
	var b Binaries
	var errs []error
	for _, x := range []struct {
		name string
		dst  *string
	}{{"etcd", &b.Etcd}, {"kube-apiserver", &b.APIServer}, {"kube-controller-manager", &b.ControllerManager}, {"kube-scheduler", &b.Scheduler}} {
		p, err := find(x.name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*x.dst = p
	}
	if err := errors.Join(errs...); err != nil {
		return Binaries{}, err
	}
	if err := b.checkVersions(ctx); err != nil {
		return Binaries{}, err
	}
	return b, nil
}

var (
	kubeVersionRE = regexp.MustCompile(`Kubernetes v(\d+)\.(\d+)\.`)
	etcdVersionRE = regexp.MustCompile(`etcd Version: (\d+)\.(\d+)\.`)
)

// checkVersions runs each program's --version in parallel (answers cached per
// binary file in the cache folder's probes/).
func (b Binaries) checkVersions(ctx context.Context) error {
	probe := binprobe.Prober{Dir: ProbeDir()}
	want := kubeVersionRE.FindStringSubmatch("Kubernetes " + Version + ".")
	checks := []struct {
		path string
		re   *regexp.Regexp
		ok   func(m []string) bool
		want string
	}{
		{b.Etcd, etcdVersionRE, func(m []string) bool { return m[1] == "3" && (m[2] == "5" || m[2] == "6") }, "3.5 or 3.6"},
		{b.APIServer, kubeVersionRE, func(m []string) bool { return m[1] == want[1] && m[2] == want[2] }, "v" + want[1] + "." + want[2]},
		{b.ControllerManager, kubeVersionRE, func(m []string) bool { return m[1] == want[1] && m[2] == want[2] }, "v" + want[1] + "." + want[2]},
		{b.Scheduler, kubeVersionRE, func(m []string) bool { return m[1] == want[1] && m[2] == want[2] }, "v" + want[1] + "." + want[2]},
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			out, err := probe.Output(ctx, c.path, "--version")
			if err != nil {
				errs[i] = fmt.Errorf("%w: %s --version failed (%v): %s; rebuild it with `make controlplane` or point %s at a working folder",
					ErrBinaryVersion, c.path, err, strings.TrimSpace(out), EnvBinDir)
				return
			}
			m := c.re.FindStringSubmatch(out)
			if m == nil || !c.ok(m) {
				errs[i] = fmt.Errorf("%w: %s reports %q, want %s; remove it or rebuild the pinned control plane with `make controlplane`",
					ErrBinaryVersion, c.path, strings.TrimSpace(out), c.want)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
