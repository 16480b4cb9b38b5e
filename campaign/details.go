package campaign

import (
	"fmt"
	"path/filepath"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// ReportDetails reads what a results folder's journal recorded for its
// report.html — every finding and the desired state declared at each step —
// as WriteReports passes it; reports.Merge takes it as MergeOptions.Details.
func ReportDetails(dir string) (reports.Details, error) {
	recs, _, err := ReadJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return reports.Details{}, fmt.Errorf("report details of %s: %w", dir, err)
	}
	var res Result
	collect(&res, recs)
	d := reports.Details{Findings: res.Findings, Desired: map[string]model.Object{}}
	for _, s := range res.Steps {
		d.Desired[s.ID()] = s.Desired
	}
	return d, nil
}

// report is s as the reports package records it (nil for the whole plan).
func (s *Shard) report() *reports.Shard {
	if s == nil || s.IsZero() {
		return nil
	}
	return &reports.Shard{Index: s.Index, Count: s.Count}
}
