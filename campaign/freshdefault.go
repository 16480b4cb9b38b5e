package campaign

import (
	"context"
	"fmt"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// answerFresh judges two kinds of consistency findings against one fresh
// creation of the same desired state, on a fresh namespace:
//
//   - a removed property whose previous value is still in effect: where the
//     fresh creation holds that same value in every field named, the value is
//     the operator's default for the desired state (a seed that set the
//     default explicitly — cert-manager's `duration: 2160h`, an ECDSA key's
//     `size: 256` — leaves the baseline unable to tell; a flag whose removal
//     changed nothing when a fresh creation equals the state reached);
//   - a property set to a value no field reflects (or one overruled): where
//     the fresh creation equals the state reached, the operator ignores the
//     value in this configuration when it creates the system too (a property
//     gated on the operand's version, one that acts on objects the campaign
//     never creates, a documented fallback) — not a transition it failed.
//
// Either finding becomes a warning saying so. Nothing is created when no
// finding is of these kinds; a fresh creation that fails keeps every finding.
func (s *session) answerFresh(ctx context.Context, tr *model.Transition, findings []model.Finding) []model.Finding {
	asked := 0
	for _, f := range findings {
		if oracles.IsRemoval(f) || oracles.IsUnreflected(f) {
			asked++
		}
	}
	if asked == 0 || tr.Desired == nil {
		return findings
	}
	other, err := s.freshCreation(ctx, "f", tr.Desired)
	if err != nil {
		s.r.cfg.Logger.Warn("findings judged against a fresh creation", "err", err)
		return findings
	}
	cfg := OracleConfig(s.r.target)
	agrees := oracles.CreationAgrees(ctx, cfg, tr, other)
	out := make([]model.Finding, 0, len(findings))
	for _, f := range findings {
		prop := ""
		if len(f.Evidence) > 0 {
			prop = f.Evidence[0].Path
		}
		switch {
		case oracles.IsRemoval(f) && oracles.RemovalDefaulted(ctx, cfg, f, tr, other):
			out = append(out, model.Finding{Oracle: oracles.NameConsistency, Severity: model.SeverityWarning,
				Signature: model.Signature("removal-default", prop), Step: f.Step,
				Summary:  fmt.Sprintf("%s was removed and its previous value stayed, but a fresh creation of the same desired state holds that value too: it is the operator's default, not a leftover", prop),
				Evidence: f.Evidence})
		case oracles.IsUnreflected(f) && agrees:
			out = append(out, model.Finding{Oracle: oracles.NameConsistency, Severity: model.SeverityWarning,
				Signature: model.Signature("ignored-on-creation", f.Signature), Step: f.Step,
				Summary: f.Summary + "; a fresh creation of the same desired state gives the same state, so the operator " +
					"ignores this value in this configuration when it creates the system too (not a failed transition): " +
					"if the value should take effect, it is a bug on creation as well — otherwise skip the property in the target's oracleConfig",
				Evidence: f.Evidence})
		default:
			out = append(out, f)
		}
	}
	return out
}
