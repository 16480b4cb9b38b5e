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

	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
)

type clusterFlags struct {
	name, stateDir, mapping, operatorBin string
	nodes, apiPort                       int
	wait                                 time.Duration
	foreground                           bool
}

func (f *clusterFlags) options(g *globals) local.Options {
	return local.Options{
		Name: f.name, StateRoot: f.stateDir, Nodes: f.nodes, APIServerPort: f.apiPort,
		MappingFile: f.mapping, OperatorBinary: f.operatorBin, Log: g.logger(),
	}
}

func newClusterCmd(g *globals) *cobra.Command {
	f := &clusterFlags{}
	cmd := &cobra.Command{Use: "cluster", Short: "Manage embedded local clusters"}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", "", "state root (default $"+local.EnvStateDir+" or "+local.DefaultStateRoot+")")

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
			return upDetached(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
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
		Use:   "down [NAME...]",
		Short: "Delete clusters (default: gauntlet)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"gauntlet"}
			}
			var errs []error
			for _, n := range args {
				if err := local.Down(cmd.Context(), f.stateDir, n, time.Minute); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cluster %s deleted\n", n)
			}
			return errors.Join(errs...)
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List clusters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			infos, err := local.List(f.stateDir)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tSERVER\tPOD CIDR\tNODES\tKUBECONFIG")
			for _, i := range infos {
				state := i.Phase
				if !i.Running {
					state += " (owner gone: run gauntlet cluster gc)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", i.Name, state, i.Server, i.PodCIDR, len(i.Nodes), i.Kubeconfig)
			}
			// kind clusters Gauntlet created (--backend kind), recorded under the same state root.
			kinfos, kerr := kind.List(f.stateDir)
			for _, i := range kinfos {
				state := "running (kind)"
				if !i.Running {
					state = "owner gone (kind): run gauntlet cluster gc"
				}
				fmt.Fprintf(w, "kind:%s\t%s\t-\t%s\t-\t%s\n", i.Name, state, orDash(i.PodSubnet), i.Kubeconfig)
			}
			return errors.Join(w.Flush(), kerr)
		},
	}

	gc := &cobra.Command{
		Use:   "gc",
		Short: "Remove every cluster whose owner process is gone (e.g. killed), under the state root and every state root a cluster registered there (e.g. tests' temporary roots), and kind clusters recorded in STATE_ROOT/kind",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			removed, err := local.GC(cmd.Context(), f.stateDir)
			// kind clusters recorded under the same state root whose owner is gone.
			kremoved, kerr := kind.GC(cmd.Context(), f.stateDir)
			removed, err = append(removed, kremoved...), errors.Join(err, kerr)
			for _, n := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", n)
			}
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
	return local.Serve(ctx, f.options(g), func(c *local.Cluster) {
		fmt.Fprintf(out, "cluster %s ready: export KUBECONFIG=%s\n", c.Name(), c.Kubeconfig())
	})
}

// upDetached starts `gauntlet cluster serve` in its own session with its log in the
// state root, relays the log as progress, and returns once the cluster runs.
func upDetached(ctx context.Context, f *clusterFlags, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	logPath := local.LogPath(f.stateDir, f.name)
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
	info, err := local.WaitRunning(wctx, f.stateDir, f.name, exited)
	if err != nil {
		if b, rerr := os.ReadFile(logPath); rerr == nil {
			fmt.Fprintf(stderr, "--- %s ---\n%s", logPath, lastLines(string(b), 20))
		}
		return err
	}
	_ = cmd.Process.Release()
	fmt.Fprintf(stdout, "cluster %s ready (%d nodes, API server %s)\nexport KUBECONFIG=%s\n", info.Name, len(info.Nodes), info.Server, info.Kubeconfig)
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
