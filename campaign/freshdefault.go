package campaign

import (
	"context"
	"fmt"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// answerRemovals judges the consistency findings that say a removed property's
// previous value is still in effect against one fresh creation of the same
// desired state, on a fresh namespace: where the fresh creation holds that
// same value in every field named, the value is the operator's default for the
// desired state (a seed that set the default explicitly — cert-manager's
// `duration: 2160h`, an ECDSA key's `size: 256` — leaves the baseline unable to
// tell; a flag whose removal changed nothing when a fresh creation equals the
// state reached), so the finding becomes a warning saying so. Nothing is created when
// no finding is a removal; a fresh creation that fails keeps every finding.
func (s *session) answerRemovals(ctx context.Context, tr *model.Transition, findings []model.Finding) []model.Finding {
	removals := 0
	for _, f := range findings {
		if oracles.IsRemoval(f) {
			removals++
		}
	}
	if removals == 0 || tr.Desired == nil {
		return findings
	}
	other, err := s.freshCreation(ctx, "f", tr.Desired)
	if err != nil {
		s.r.cfg.Logger.Warn("removal judged against a fresh creation", "err", err)
		return findings
	}
	out := make([]model.Finding, 0, len(findings))
	for _, f := range findings {
		if !oracles.RemovalDefaulted(ctx, OracleConfig(s.r.target), f, tr, other) {
			out = append(out, f)
			continue
		}
		prop := f.Evidence[0].Path
		out = append(out, model.Finding{Oracle: oracles.NameConsistency, Severity: model.SeverityWarning,
			Signature: model.Signature("removal-default", prop), Step: f.Step,
			Summary:  fmt.Sprintf("%s was removed and its previous value stayed, but a fresh creation of the same desired state holds that value too: it is the operator's default, not a leftover", prop),
			Evidence: f.Evidence})
	}
	return out
}
