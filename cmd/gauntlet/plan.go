package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/inputgen"
)

// maxWhat bounds the description column of --dry-run.
const maxWhat = 110

// printCases writes the test cases a campaign would run (gauntlet run
// --dry-run), in run order: position, position in the whole campaign, worker,
// label, desired states, estimated pods, the ID (property#generator) and what
// the case does (last, as they are long); then the cases held back to the end
// and why.
func printCases(w io.Writer, cfg campaign.Config, plan *inputgen.Plan, cases []*inputgen.TestCase) error {
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
	if len(plan.PodFields) > 0 {
		fmt.Fprintf(w, "# pods estimated from %s: %d for the seed; test cluster capacity %d pods\n",
			strings.Join(plan.PodFields, ", "), plan.SeedPods, plan.PodCapacity)
	}
	fmt.Fprintf(w, "# coverage: %d of %d properties named by a test case, %d with their effective value changed\n",
		plan.Stats.Covered, plan.Stats.Properties-plan.Stats.Pinned, plan.Stats.Effective)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tcampaign#\tworker\tlabel\tstates\tpods\tid (property#generator)\twhat")
	for i, tc := range cases {
		pos := i + 1
		if !cfg.Shard.IsZero() {
			pos = i*cfg.Shard.Count + cfg.Shard.Index // round-robin: case i of shard K/N
		}
		pods := "-"
		if tc.Pods > 0 {
			pods = fmt.Sprint(tc.Pods)
		}
		fmt.Fprintf(tw, "%d\t%d\tw%d\t%s\t%d\t%s\t%s\t%s\n", i+1, pos, owner[tc.ID], tc.Label, campaign.CaseStates(tc), pods, tc.ID, clip(tc.Description, maxWhat))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	held := campaign.HeldBackCases(plan, cases)
	if len(held) > 0 {
		fmt.Fprintf(w, "# held back to the end (%d):\n", len(held))
		for _, h := range held {
			fmt.Fprintf(w, "#   %s: %s\n", h.ID, h.Reason)
		}
	}
	return nil
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
