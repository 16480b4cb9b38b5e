package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// runFlags are the flags of `gauntlet run` shared with `gauntlet reproduce`.
type runFlags struct {
	repo     string
	opBin    string
	stateDir string
	backend  string
	kubecfg  string
	mapping  string
	// faults is set by the command when it injects faults: on kind that needs Chaos Mesh.
	faults bool
}

func (f *runFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.repo, "repo", "", "Gauntlet repository (for built-in targets; default: found above the working directory)")
	cmd.Flags().StringVar(&f.opBin, "operator-binary", "", "binary the bundled operator image maps to (default $GAUNTLET_OPERATOR_BINARY or REPO/bin/valkey-operator)")
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "embedded clusters' state root (default $GAUNTLET_STATE_DIR or /var/lib/gauntlet)")
	cmd.Flags().StringVar(&f.backend, "backend", backends.Default, "cluster back end: "+backends.Describe())
	cmd.Flags().StringVar(&f.kubecfg, "kubeconfig", "", "the existing cluster's kubeconfig file for --backend kubeconfig (default $KUBECONFIG)")
	cmd.Flags().StringVar(&f.mapping, "image-mapping", "", "image-mapping file (YAML) for the embedded clusters, tried before the target's imageMapping and the shipped defaults")
}

// findRepo finds the Gauntlet repository above the working directory, else above
// the running binary (make build writes REPO/bin/gauntlet); "" when neither is in one.
func findRepo() string {
	if r, err := targets.FindRepoRoot("."); err == nil {
		return r
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if r, err := targets.FindRepoRoot(filepath.Dir(exe)); err == nil {
				return r
			}
		}
	}
	return ""
}

func (f *runFlags) resolve(g *globals, spec string) (*targets.Target, cluster.Backend, error) {
	repo := f.repo
	if repo == "" {
		repo = findRepo()
	}
	t, err := targets.Resolve(spec, repo)
	if err != nil {
		return nil, nil, err
	}
	bin := f.opBin
	if bin == "" {
		bin = operatorbin.Path(repo)
	}
	opts := backends.Options{StateRoot: f.stateDir, Log: g.logger(), OperatorBinary: bin, MappingFile: f.mapping, Faults: f.faults, Kubeconfig: f.kubecfg}
	if t.Source == "builtin:valkey" {
		opts.BundledOperatorImage = t.Operator.Image
	}
	b, err := backends.Open(context.Background(), f.backend, opts)
	if err != nil {
		return nil, nil, err
	}
	return t, b, nil
}

func newRunCmd(g *globals) *cobra.Command {
	var (
		rf                                      runFlags
		target, out, resume, order              string
		workers                                 string
		maxSteps                                int
		seed                                    int64
		goTests, shared, noDiff, noMin          bool
		operatorView                            bool
		minMisop                                bool
		quietWin, quietUnobs, timeout, stuckWin time.Duration
		faultKinds                              []string
		faultEvery                              int
		faultHold, minBudget, budget            time.Duration
		fromSeed, dryRun, lenient               bool
		shard, validateCore                     string
	)
	cmd := &cobra.Command{
		Use:   "run --target valkey|FILE [--workers N] [--seed N] [--out DIR] [--max-steps N] [--shard K/N] [--dry-run] | --resume DIR",
		Short: "Run a campaign of desired-state transitions against an operator",
		Long: `run plans test cases from the target's CRD, runs them on N workers (each its own
embedded cluster), judges every transition with the oracles, and writes a results
folder (plan, journal, per-step state, alarms with reproducers, summary).
A campaign killed at any point continues with --resume DIR.

--shard K/N runs the K-th of N disjoint slices of the campaign (1-based; env/N
takes K from a Kubernetes Indexed Job's $JOB_COMPLETION_INDEX + 1), so N machines
share it; gauntlet merge joins their results folders. --dry-run prints the test
cases a run would execute, in order, without starting a cluster.

As gauntlet gen does, the plan's core-typed values (containers, affinity,
claims, Services, ...) are judged by a real API server's dry run: an etcd and
kube-apiserver from the pinned control plane run while the plan is made and
stop before the first cluster starts. --validate-core=auto (the default) does
this when the control plane is built; with --shard it requires it, so every
shard plans the same; off plans without it on every shard. The journal records
which, and --resume keeps the recorded plan.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nWorkers, autoW, err := parseWorkers(workers)
			if err != nil {
				return err
			}
			cfg := campaign.Config{Workers: nWorkers, Seed: seed, OutDir: out, MaxSteps: maxSteps, GoTests: goTests,
				SharedCluster: shared, OperatorView: operatorView, NoDifferential: noDiff, NoMinimize: noMin, Progress: cmd.ErrOrStderr(), Quiet: g.quiet, Logger: g.logger()}
			cfg.Converge.Quiet, cfg.Converge.QuietUnobserved, cfg.Converge.Timeout, cfg.Converge.Stuck = quietWin, quietUnobs, timeout, stuckWin
			cfg.MinimizeBudget, cfg.DifferentialFromSeed, cfg.Budget = minBudget, fromSeed, budget
			cfg.MinimizeMisoperations, cfg.Order = minMisop, order
			if cfg.Shard, err = campaign.ParseShard(shard, os.Getenv); err != nil {
				return fmt.Errorf("--shard: %w", err)
			}
			kinds, on, err := campaign.ParseFaultKindsView(faultKinds, operatorView)
			if err != nil {
				return fmt.Errorf("--faults: %w", err)
			}
			if on {
				cfg.Faults = &campaign.FaultOptions{Kinds: kinds, Every: faultEvery, Hold: faultHold}
			}
			rf.faults = on || resume != "" // a resumed journal may hold faults
			if resume != "" && dryRun {
				return errors.New("run: --dry-run plans a new campaign; a resumed one runs what its journal recorded")
			}
			if resume != "" {
				recs, _, err := campaign.ReadJournal(filepath.Join(resume, "journal.jsonl"))
				if err != nil {
					return fmt.Errorf("resume %s: %w", resume, err)
				}
				st, _, err := campaign.Replay(recs)
				if err != nil {
					return fmt.Errorf("resume %s: %w", resume, err)
				}
				// The recorded plan is used: the API server is not needed again.
				if err := campaign.CheckCoreValidation(st, validateCore, cmd.Flags().Changed("validate-core")); err != nil {
					return fmt.Errorf("resume %s: %w", resume, err)
				}
				target = st.Target
				cfg.OutDir, cfg.Resume, cfg.GoTests = resume, true, st.GoTests
				t, p, err := rf.resolve(g, target)
				if err != nil {
					return err
				}
				t.Properties = st.Properties
				cfg.Target, cfg.Provider = t, p
				if autoW {
					// The recorded worker count stays; the back-off applies.
					cfg.Gate = newAutoWorkers(rf.backend, t.Source, g.logger(), cmd.ErrOrStderr()).gate()
				}
				// Clusters of the killed run are gone with their owner; collect what they left.
				if _, err := p.GC(cmd.Context()); err != nil {
					g.logger().Warn("collect clusters left by the killed run", "err", err)
				}
			} else {
				if target == "" {
					return errors.New("run: pass --target valkey or --target FILE (or --resume DIR)")
				}
				t, p, err := rf.resolve(g, target)
				if err != nil {
					return err
				}
				cfg.Target, cfg.Provider = t, p
				cfg.Plan.Lenient = lenient
				if autoW {
					aw := newAutoWorkers(rf.backend, t.Source, g.logger(), cmd.ErrOrStderr())
					if cfg.Workers, err = aw.decide(shared); err != nil {
						return err
					}
					cfg.Gate, cfg.AfterSeed = aw.gate(), aw.afterSeed
				}
				mode, err := campaign.CoreCheckMode(validateCore, cfg.Shard)
				if err != nil {
					return err
				}
				srv, err := startCoreValidator(cmd.Context(), mode, g.logger())
				if err != nil {
					if !cfg.Shard.IsZero() && validateCore != campaign.CoreCheckOn {
						err = fmt.Errorf("%w (with --shard, --validate-core=auto requires the check so every shard plans the same: pass --validate-core=off to every shard to plan without it)", err)
					}
					return fmt.Errorf("run: %w", err)
				}
				if srv != nil {
					stop := sync.OnceFunc(func() {
						if err := srv.Stop(context.WithoutCancel(cmd.Context())); err != nil {
							g.logger().Warn("stopping the API server of --validate-core", "err", err)
						}
					})
					defer stop()
					cfg.Plan.CoreValidator, cfg.AfterPlan = srv, stop
				}
				if dryRun {
					plan, cases, err := campaign.SelectCases(cmd.Context(), cfg)
					if err != nil {
						return err
					}
					return printCases(cmd.OutOrStdout(), cfg, plan, cases)
				}
			}
			res, err := campaign.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if res.Stopped != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "gauntlet: partial campaign (stopped by %s): its reports are in %s; continue it with: gauntlet run --resume %s\n", res.Stopped, res.Dir, res.Dir)
			}
			if res.Alarms() > 0 {
				return fmt.Errorf("%d alarm groups: see %s", res.Alarms(), res.Dir)
			}
			return nil
		},
	}
	rf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "built-in target name (valkey) or a target file (YAML, or Acto's config JSON)")
	f.StringVar(&workers, "workers", workersAuto, "parallel workers, each with its own cluster: auto (as many clusters as memory allows, at most 3 per core, printing why; no new step starts while the host is saturated) or N")
	f.Int64Var(&seed, "seed", 1, "random seed (plan and partitioning); recorded in the summary")
	f.StringVar(&out, "out", "gauntlet-results", "results folder")
	f.IntVar(&maxSteps, "max-steps", 0, "bound the planned steps (0: the whole plan)")
	f.StringVar(&order, "order", campaign.OrderBreadth, "test-case order: breadth (a seeded round-robin over properties, operation-heavy first) or plan (the plan's alphabetical order)")
	f.DurationVar(&budget, "budget", 0, "wall-clock limit: no step starts that would overrun it (with time kept for the reports); the run ends partial, with its reports, and --resume continues it (SIGINT/SIGTERM do the same)")
	f.StringVar(&shard, "shard", "", "run shard K of N of the campaign (K/N, 1-based; env/N: K = $JOB_COMPLETION_INDEX+1 in a Kubernetes Indexed Job); gauntlet merge joins the shards' results")
	f.StringVar(&validateCore, "validate-core", campaign.CoreCheckAuto, "judge the plan's core-typed values with a real API server's dry run, as gauntlet gen does: auto (when the control plane is built; on with --shard, so every shard plans the same), on, off; recorded in the journal (a resume keeps it)")
	f.BoolVar(&lenient, "lenient", false, "drop the target seed's fields the CRD schema does not declare with a warning (default: refuse the seed, naming them)")
	f.BoolVar(&dryRun, "dry-run", false, "print the test cases the run (or its --shard) would execute, in order, and start nothing")
	f.StringVar(&resume, "resume", "", "continue the campaign recorded in DIR")
	f.BoolVar(&goTests, "go-tests", false, "emit a Go regression test per alarm group")
	f.BoolVar(&shared, "shared-cluster", false, "run every worker in a namespace of one cluster")
	f.BoolVar(&operatorView, "operator-view", false, "put the view proxy between each cluster's operator and its API server (embedded cluster only); each step's view.jsonl records the operator's requests and watch events")
	f.BoolVar(&noDiff, "no-differential", false, "skip differential re-runs from S0")
	f.BoolVar(&noMin, "no-minimize", false, "skip reproducer minimization")
	f.BoolVar(&minMisop, "minimize-misoperations", false, "minimize the misoperation groups too (their cause is known: off by default)")
	f.StringSliceVar(&faultKinds, "faults", nil, "inject faults after converged states: all, none, or kinds from "+strings.Join(campaign.DefaultFaultKinds, ",")+" and, with --operator-view (all then includes them), "+strings.Join(campaign.ViewFaultKinds, ","))
	f.IntVar(&faultEvery, "fault-every", 1, "inject a fault after every Nth converged desired state")
	f.DurationVar(&faultHold, "fault-hold", 0, "how long lasting faults (pod-failure, partitions) hold (default 8s)")
	f.DurationVar(&minBudget, "minimize-budget", 0, "time all reproducer replays may take together (default 15m)")
	f.BoolVar(&fromSeed, "differential-from-seed", false, "declare the seed before each differential re-run instead of creating D directly")
	f.DurationVar(&quietWin, "quiet-window", 0, "time without changes that counts as converged (default 3s)")
	f.DurationVar(&quietUnobs, "quiet-window-unobserved", 0, "the quiet window while the CR's status has never reported the generation the operator saw (default 10s; the longer of the two applies)")
	f.DurationVar(&timeout, "converge-timeout", 0, "hard convergence timeout per step (default 5m)")
	f.DurationVar(&stuckWin, "stuck-window", 0, "end a step early as stuck when nothing readiness depends on changed for this long (default 1m; negative: off)")
	return cmd
}
