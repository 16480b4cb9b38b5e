// Command valkey-operator is Gauntlet's bundled Valkey operator: primary/replica
// Valkey sets (ValkeyCluster) whose failover the operator performs itself, with
// Kubernetes leader election in place of a Sentinel quorum, and RDB backups
// (ValkeyBackup). It is a controller-runtime manager; this file only parses flags
// and hands them to package operator/manager.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gauntlet-dev/gauntlet/operator/manager"
)

// options are the command-line flags.
type options struct {
	namespaces      string
	metricsAddr     string
	probeAddr       string
	leaderElect     bool
	leaderNamespace string
	leaderID        string
	concurrency     int
	logLevel        string
	logFormat       string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("valkey-operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.namespaces, "namespace", os.Getenv("WATCH_NAMESPACE"), "comma-separated namespaces to watch (default: all; env WATCH_NAMESPACE)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" disables it)`)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader through a Lease, so that only one replica acts (it replaces Sentinel's quorum)")
	fs.StringVar(&o.leaderNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
	fs.StringVar(&o.leaderID, "leader-election-id", "valkey-operator.valkey.gauntlet.dev", "name of the leader-election Lease")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "ValkeyClusters reconciled in parallel")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "json", "json or text")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	}
	if o.concurrency < 1 {
		return o, errors.New("--max-concurrent-reconciles must be at least 1")
	}
	return o, nil
}

func newLogger(o options, w io.Writer) (logr.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return logr.Logger{}, fmt.Errorf("--log-level %q: use debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch o.logFormat {
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	case "text":
		h = slog.NewTextHandler(w, hopts)
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: use json or text", o.logFormat)
	}
	return logr.FromSlogHandler(h), nil
}

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "valkey-operator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	logger, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	log.SetLogger(logger)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w (in a pod the service account is used; elsewhere set KUBECONFIG)", err)
	}
	var namespaces []string
	for _, ns := range strings.Split(o.namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	return manager.Run(ctx, cfg, manager.Options{
		Namespaces: namespaces, MetricsAddr: o.metricsAddr, ProbeAddr: o.probeAddr,
		LeaderElection: o.leaderElect, LeaderElectionID: o.leaderID, LeaderElectionNamespace: o.leaderNamespace,
		MaxConcurrentReconciles: o.concurrency,
	}, logger)
}
