package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
)

type clusterFlags struct {
	name, stateDir, mapping, operatorBin string
	nodes, apiPort                       int
	wait                                 time.Duration
	foreground                           bool
}

// options are the embedded back end's options the flags give.
func (f *clusterFlags) options(g *globals) backends.Options {
	return backends.Options{StateRoot: f.stateDir, Nodes: f.nodes, APIServerPort: f.apiPort,
		MappingFile: f.mapping, OperatorBinary: f.operatorBin, Log: g.logger()}
}

// owner opens the embedded back end, the one whose clusters live in a process
// of their own (cluster.Owner), with the flags' options.
func (f *clusterFlags) owner(ctx context.Context, g *globals) (cluster.Owner, error) {
	b, err := backends.Open(ctx, backends.Local, f.options(g))
	if err != nil {
		return nil, err
	}
	o, ok := b.(cluster.Owner)
	if !ok {
		return nil, fmt.Errorf("the %s back end cannot keep a cluster in a process of its own", b.Name())
	}
	return o, nil
}

// recordedName splits a name as `cluster list` shows it: BACKEND:NAME, or NAME
// for the embedded back end.
func recordedName(s string) (backend, name string) {
	if b, n, ok := strings.Cut(s, ":"); ok {
		return b, n
	}
	return backends.Local, s
}

// shownName is how `cluster list` shows a cluster: NAME for the embedded back
// end, BACKEND:NAME for the others.
func shownName(i cluster.Info) string {
	if i.Backend == backends.Local {
		return i.Name
	}
	return i.Backend + ":" + i.Name
}

func newClusterCmd(g *globals) *cobra.Command {
	f := &clusterFlags{}
	cmd := &cobra.Command{Use: "cluster", Short: "Manage embedded local clusters"}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", "", "state root (default $"+hoststate.EnvStateDir+" or "+hoststate.DefaultStateRoot+")")

	up := &cobra.Command{
		Use:   "up [NAME]",
		Short: "Create a cluster and leave it running (kubeconfig path printed on success)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				f.name = args[0]
			}
			if f.foreground {
				return serveCluster(cmd.Context(), g, f, cmd.OutOrStdout())
			}
			return upDetached(cmd.Context(), g, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addCreateFlags(up, f)
	up.Flags().BoolVar(&f.foreground, "foreground", false, "keep the cluster in this process until interrupted")
	up.Flags().DurationVar(&f.wait, "wait", 3*time.Minute, "how long to wait for the cluster to become ready")

	serve := &cobra.Command{
		Use:    "serve",
		Short:  "Own a cluster until SIGTERM (started by `cluster up`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveCluster(cmd.Context(), g, f, cmd.OutOrStdout())
		},
	}
	addCreateFlags(serve, f)

	down := &cobra.Command{
		Use:   "down [NAME|BACKEND:NAME...]",
		Short: "Delete clusters (default: gauntlet), as `cluster list` names them",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"gauntlet"}
			}
			recorded := map[string]cluster.Backend{}
			for _, b := range backends.Recorded(f.stateDir, g.logger()) {
				recorded[b.Name()] = b
			}
			var errs []error
			for _, a := range args {
				bn, n := recordedName(a)
				b, ok := recorded[bn]
				if !ok {
					errs = append(errs, fmt.Errorf("%s: no back end %q records clusters here (see `gauntlet cluster list`)", a, bn))
					continue
				}
				if err := b.Delete(cmd.Context(), n); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cluster %s deleted\n", a)
			}
			return errors.Join(errs...)
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List the clusters of every back end recorded on this machine",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tSERVER\tPOD CIDR\tNODES\tKUBECONFIG")
			var errs []error
			for _, b := range backends.Recorded(f.stateDir, g.logger()) {
				infos, err := b.List(cmd.Context())
				errs = append(errs, err)
				for _, i := range infos {
					state := i.Phase
					if !i.Running {
						state += " (owner gone: run gauntlet cluster gc)"
					}
					nodes := "-"
					if i.Nodes > 0 {
						nodes = fmt.Sprint(i.Nodes)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", shownName(i), state, orDash(i.Server), orDash(i.PodCIDR), nodes, orDash(i.Kubeconfig))
				}
			}
			return errors.Join(append(errs, w.Flush())...)
		},
	}

	gc := &cobra.Command{
		Use:   "gc",
		Short: "Remove every cluster whose owner process is gone (e.g. killed), of every back end recorded under the state root (embedded clusters also under the state roots registered there, e.g. tests' temporary roots)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var removed []string
			var errs []error
			for _, b := range backends.Recorded(f.stateDir, g.logger()) {
				names, err := b.GC(cmd.Context())
				removed, errs = append(removed, names...), append(errs, err)
			}
			for _, n := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", n)
			}
			err := errors.Join(errs...)
			if len(removed) == 0 && err == nil {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to clean")
			}
			return err
		},
	}
	cmd.AddCommand(up, serve, down, list, gc)
	return cmd
}

func addCreateFlags(c *cobra.Command, f *clusterFlags) {
	c.Flags().StringVar(&f.name, "name", "gauntlet", "cluster name")
	c.Flags().IntVar(&f.nodes, "nodes", 3, "number of nodes")
	c.Flags().IntVar(&f.apiPort, "api-port", 0, "API server port (default: a free port)")
	c.Flags().StringVar(&f.mapping, "image-mapping", "", "image-mapping file (YAML) merged in front of the shipped defaults")
	c.Flags().StringVar(&f.operatorBin, "operator-binary", defaultOperatorBinary(), "binary the bundled operator's image maps to")
}

// defaultOperatorBinary is the valkey-operator next to this binary, where `make build` puts it.
func defaultOperatorBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(exe), "valkey-operator")
}

func serveCluster(ctx context.Context, g *globals, f *clusterFlags, out io.Writer) error {
	o, err := f.owner(ctx, g)
	if err != nil {
		return err
	}
	return o.Serve(ctx, f.name, func(c cluster.Cluster) {
		fmt.Fprintf(out, "cluster %s ready: export KUBECONFIG=%s\n", c.Name(), c.Kubeconfig())
	})
}

// upDetached starts `gauntlet cluster serve` in its own session with its log in the
// state root, relays the log as progress, and returns once the cluster runs.
func upDetached(ctx context.Context, g *globals, f *clusterFlags, stdout, stderr io.Writer) error {
	owner, err := f.owner(ctx, g)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	logPath := owner.LogPath(f.name)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open cluster log: %w", err)
	}
	defer logFile.Close()
	args := []string{"cluster", "serve", "--name", f.name, "--nodes", fmt.Sprint(f.nodes), "--api-port", fmt.Sprint(f.apiPort),
		"--image-mapping", f.mapping, "--operator-binary", f.operatorBin}
	if f.stateDir != "" {
		args = append(args, "--state-dir", f.stateDir)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start cluster owner: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	wctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	go relayProgress(wctx, logPath, stderr)
	info, err := owner.WaitRunning(wctx, f.name, exited)
	if err != nil {
		if b, rerr := os.ReadFile(logPath); rerr == nil {
			fmt.Fprintf(stderr, "--- %s ---\n%s", logPath, lastLines(string(b), 20))
		}
		return err
	}
	_ = cmd.Process.Release()
	fmt.Fprintf(stdout, "cluster %s ready (%d nodes, API server %s)\nexport KUBECONFIG=%s\n", info.Name, info.Nodes, info.Server, info.Kubeconfig)
	return nil
}

// relayProgress copies the owner's log lines to w as they appear.
func relayProgress(ctx context.Context, path string, w io.Writer) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var partial string
	for ctx.Err() == nil {
		line, err := r.ReadString('\n')
		partial += line
		if err == nil {
			fmt.Fprint(w, "  "+partial)
			partial = ""
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
