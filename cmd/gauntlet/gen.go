package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/apicheck"
	"github.com/gauntlet-dev/gauntlet/inputgen"
)

func newGenCmd(g *globals) *cobra.Command {
	var o inputgen.GenOptions
	validateCore := campaign.CoreCheckAuto
	cmd := &cobra.Command{
		Use:   "gen --crd FILE --seed CR.yaml [--out DIR]",
		Short: "Generate the test plan and desired states for a CRD (no cluster needed)",
		Long: `gen reads an operator's CRD and a seed CR and writes plan.json (every property with
the test cases that cover it) and one YAML file of desired states per test case,
then prints coverage. Every state is validated locally with the API server's own
schema, defaulting and CEL code.

Sub-objects that map to Kubernetes core types (containers, affinity, tolerations,
claims, Services, label selectors, probes, ...) are also judged by a real API
server: gen starts etcd and kube-apiserver from the pinned control plane (about
3 s) and dry-run creates each new value wrapped in the smallest real object that
carries it. A refused value is repaired or drawn again; when none passes, the
test case becomes a misoperation that gives the server's reason.
--validate-core=auto (the default) does this when the control plane is built
and warns otherwise, on requires it, off skips it.

LLM-proposed values are off unless --llm-base-url and --llm-model are set (or
GAUNTLET_LLM_BASE_URL / GAUNTLET_LLM_MODEL); the key comes only from
GAUNTLET_LLM_API_KEY or OPENAI_API_KEY. --llm-cache alone replays cached answers offline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.LLM = inputgen.LLMOptionsFromEnv(o.LLM)
			o.Logger = g.logger()
			srv, err := startCoreValidator(cmd.Context(), validateCore, o.Logger)
			if err != nil {
				return err
			}
			if srv != nil {
				defer func() {
					if err := srv.Stop(context.Background()); err != nil {
						o.Logger.Warn("stopping the API server of --validate-core", "err", err)
					}
				}()
				o.CoreValidator = srv
			}
			return inputgen.RunGen(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.CRDPath, "crd", "", "CRD file (several documents allowed)")
	f.StringVar(&o.SeedPath, "seed", "", "seed CR file: the first object of the CRD's kind is the seed, the rest are mined for values")
	f.StringSliceVar(&o.ExamplePaths, "example", nil, "example CR files mined for values (repeatable)")
	f.StringVar(&o.OutDir, "out", "gauntlet-gen", "output folder")
	f.Int64Var(&o.Seed, "rand-seed", 1, "random seed; the same seed gives the same plan")
	f.StringVar(&o.Version, "version", "", "CRD version (default: the seed's own version, which the CRD must serve)")
	f.BoolVar(&o.Lenient, "lenient", false, "drop seed fields the CRD schema does not declare with a warning (default: refuse the seed, naming them)")
	f.StringVar(&o.Kind, "kind", "", "kind (default: the seed's kind)")
	f.IntVar(&o.Workers, "workers", 0, "generation workers (default: number of CPUs)")
	f.StringVar(&validateCore, "validate-core", campaign.CoreCheckAuto, "judge core-typed values with a real API server's dry run: auto (when the control plane is built), on (fail without it), off")
	f.StringVar(&o.LLM.BaseURL, "llm-base-url", "", "OpenAI-compatible endpoint for LLM-proposed values")
	f.StringVar(&o.LLM.Model, "llm-model", "", "model name for LLM-proposed values")
	f.StringVar(&o.LLM.CacheFile, "llm-cache", "", "cache of LLM answers (commit it with the target to replay offline)")
	_ = cmd.MarkFlagRequired("crd")
	_ = cmd.MarkFlagRequired("seed")
	return cmd
}

// startCoreValidator starts the API server that judges core-typed values, as --validate-core
// says: nil without error for off, and for auto when the control plane is not built (with one
// warning).
func startCoreValidator(ctx context.Context, mode string, log *slog.Logger) (*apicheck.Server, error) {
	switch mode {
	case campaign.CoreCheckOff:
		return nil, nil
	case campaign.CoreCheckAuto, campaign.CoreCheckOn:
	default:
		return nil, fmt.Errorf("--validate-core=%q: want auto, on or off", mode)
	}
	t0 := time.Now()
	srv, err := apicheck.Start(ctx, apicheck.Options{Log: log})
	switch {
	case err == nil:
		log.Info("API server for --validate-core ready", "took", time.Since(t0).Round(time.Millisecond))
		return srv, nil
	case mode == campaign.CoreCheckOn:
		return nil, fmt.Errorf("--validate-core=on: %w", err)
	case errors.Is(err, apicheck.ErrUnavailable):
		log.Warn("core-typed values are not judged by the API server (the control plane is not built: run `make controlplane`); pass --validate-core=off to silence this", "err", err)
		return nil, nil
	default:
		log.Warn("core-typed values are not judged by the API server: it did not start; pass --validate-core=off to silence this", "err", err)
		return nil, nil
	}
}
