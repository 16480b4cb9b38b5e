package main

import (
	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/inputgen"
)

func newGenCmd(g *globals) *cobra.Command {
	var o inputgen.GenOptions
	cmd := &cobra.Command{
		Use:   "gen --crd FILE --seed CR.yaml [--out DIR]",
		Short: "Generate the test plan and desired states for a CRD (no cluster needed)",
		Long: `gen reads an operator's CRD and a seed CR and writes plan.json (every property with
the test cases that cover it) and one YAML file of desired states per test case,
then prints coverage. Every state is validated locally with the API server's own
schema, defaulting and CEL code.

LLM-proposed values are off unless --llm-base-url and --llm-model are set (or
GAUNTLET_LLM_BASE_URL / GAUNTLET_LLM_MODEL); the key comes only from
GAUNTLET_LLM_API_KEY or OPENAI_API_KEY. --llm-cache alone replays cached answers offline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.LLM = inputgen.LLMOptionsFromEnv(o.LLM)
			o.Logger = g.logger()
			return inputgen.RunGen(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.CRDPath, "crd", "", "CRD file (several documents allowed)")
	f.StringVar(&o.SeedPath, "seed", "", "seed CR file: the first object of the CRD's kind is the seed, the rest are mined for values")
	f.StringSliceVar(&o.ExamplePaths, "example", nil, "example CR files mined for values (repeatable)")
	f.StringVar(&o.OutDir, "out", "gauntlet-gen", "output folder")
	f.Int64Var(&o.Seed, "rand-seed", 1, "random seed; the same seed gives the same plan")
	f.StringVar(&o.Version, "version", "", "CRD version (default: the storage version)")
	f.StringVar(&o.Kind, "kind", "", "kind (default: the seed's kind)")
	f.IntVar(&o.Workers, "workers", 0, "generation workers (default: number of CPUs)")
	f.StringVar(&o.LLM.BaseURL, "llm-base-url", "", "OpenAI-compatible endpoint for LLM-proposed values")
	f.StringVar(&o.LLM.Model, "llm-model", "", "model name for LLM-proposed values")
	f.StringVar(&o.LLM.CacheFile, "llm-cache", "", "cache of LLM answers (commit it with the target to replay offline)")
	_ = cmd.MarkFlagRequired("crd")
	_ = cmd.MarkFlagRequired("seed")
	return cmd
}
