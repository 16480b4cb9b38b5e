package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/inputgen"
)

// printCases writes the test cases a campaign would run (gauntlet run
// --dry-run), in run order: position, position in the whole campaign, worker,
// label, desired states, and the ID (property#generator; last, as it is long).
func printCases(w io.Writer, cfg campaign.Config, cases []*inputgen.TestCase) error {
	workers := max(cfg.Workers, 1)
	if workers > len(cases) {
		workers = len(cases)
	}
	owner := map[string]int{}
	for wi, ids := range campaign.Partition(cases, workers) {
		for _, id := range ids {
			owner[id] = wi
		}
	}
	states := 0
	for _, tc := range cases {
		states += campaign.CaseStates(tc)
	}
	order := cfg.Order
	if order == "" {
		order = campaign.OrderBreadth
	}
	what := "the whole plan"
	if !cfg.Shard.IsZero() {
		what = "shard " + cfg.Shard.String()
	}
	check := "off"
	if cfg.Plan.CoreValidator != nil {
		check = "on"
	}
	fmt.Fprintf(w, "# target %s, seed %d, order %s, %s: %d test cases, %d desired states on %d workers (no cluster started; API server check of core-typed values %s)\n",
		cfg.Target.Name, cfg.Seed, order, what, len(cases), states, workers, check)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tcampaign#\tworker\tlabel\tstates\tid (property#generator)")
	for i, tc := range cases {
		pos := i + 1
		if !cfg.Shard.IsZero() {
			pos = i*cfg.Shard.Count + cfg.Shard.Index // round-robin: case i of shard K/N
		}
		fmt.Fprintf(tw, "%d\t%d\tw%d\t%s\t%d\t%s\n", i+1, pos, owner[tc.ID], tc.Label, campaign.CaseStates(tc), tc.ID)
	}
	return tw.Flush()
}
