// Command gauntlet is the end-to-end testing harness for Kubernetes operators.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/cluster/backends"
)

func main() {
	// A re-executed copy of this binary may be a container shim: it never returns then.
	if backends.Init() {
		return
	}
	// Library logs (klog) go through the same handler, at warning level unless -v.
	backends.RouteKlog(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: klogLevel(os.Args)}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal stops the campaign gracefully (its reports are
		// written); a second one kills at once, as without a handler.
		<-ctx.Done()
		stop()
	}()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gauntlet:", err)
		os.Exit(1)
	}
}

// klogLevel shows library logs only with -v/--verbose.
func klogLevel(args []string) slog.Level {
	for _, a := range args {
		if a == "-v" || a == "--verbose" {
			return slog.LevelDebug
		}
	}
	return slog.LevelWarn
}

type globals struct {
	verbose bool
	quiet   bool
}

func (g *globals) logger() *slog.Logger {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	if g.quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "gauntlet",
		Short:         "End-to-end testing harness for Kubernetes operators",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "debug logging")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "warnings and errors only (for CI)")
	root.AddCommand(newVersionCmd(), newClusterCmd(g), newDemoCmd(g), newGenCmd(g), newRunCmd(g), newMergeCmd(), newReproduceCmd(g), newFindingsCmd(g), newKindCmd())
	return root
}
