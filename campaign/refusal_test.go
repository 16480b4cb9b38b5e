package campaign

import (
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// alertmanagerCR is the Alertmanager's status of the untuned
// Prometheus-operator campaign (seed 1) at generation gen, with its
// conditions given as type, status, reason, message.
func alertmanagerCR(gen int64, conds ...[4]string) model.Object {
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "message": c[3], "observedGeneration": gen})
	}
	return model.Object{"metadata": map[string]any{"name": "example", "generation": gen}, "status": map[string]any{"conditions": cs}}
}

// TestOperatorReportedRefusal: the Prometheus operator refused spec.serviceName
// naming a Service that does not exist (seed 1, w4/s9) and said so
// (Reconciled=False, ReconciliationFailed); the consistency oracle's
// "overruled" (group 19) is its refusal, a misoperation group. On bug A
// (w0/s1: the operator deleted its StatefulSet on a refused update) the
// refusal explains the properties not reflected, but Available=False stays
// an alarm.
func TestOperatorReportedRefusal(t *testing.T) {
	healthy := alertmanagerCR(8, [4]string{"Available", "True", "", ""}, [4]string{"Reconciled", "True", "", ""})
	refused := alertmanagerCR(9, [4]string{"Available", "True", "", ""},
		[4]string{"Reconciled", "False", "ReconciliationFailed", `failed to get custom governing service g4-w4-1/gauntlet-v5h5o: services "gauntlet-v5h5o" not found`})
	bugA := alertmanagerCR(2, [4]string{"Available", "False", "StatefulSetNotFound", ""},
		[4]string{"Reconciled", "False", "ReconciliationFailed", `creating statefulset failed: StatefulSet.apps "alertmanager-example" is invalid: spec.volumeClaimTemplates[0].spec.resources[storage]: Required value`})
	findings := func(step string, health bool) []model.Finding {
		fs := []model.Finding{{Oracle: oracles.NameConsistency, Severity: model.SeverityError, Step: step, Signature: model.Signature("consistency", "spec.serviceName", "set"),
			Summary: `spec.serviceName changed to "gauntlet-v5h5o" but the value was overruled: StatefulSet alertmanager-example spec.serviceName holds "alertmanager-operated"`}}
		if health {
			fs = append(fs, model.Finding{Oracle: oracles.NameHealth, Severity: model.SeverityError, Step: step, Signature: model.Signature("health", "condition", "Available", "False", "StatefulSetNotFound"),
				Summary: "the Alertmanager reports condition Available=False (StatefulSetNotFound)"})
		}
		return fs
	}

	cause := operatorReported(healthy, refused)
	if !strings.Contains(cause, "Reconciled=False (ReconciliationFailed)") || !strings.Contains(cause, `services "gauntlet-v5h5o" not found`) {
		t.Fatalf("operatorReported = %q, want the condition and its message", cause)
	}
	fs := findings("w4/s9", false)
	labelRefused(fs, cause)
	if gs := reports.Group(fs); len(gs) != 1 || !gs[0].Misoperation || gs[0].Summary != cause {
		t.Fatalf("the refused serviceName: groups %+v, want one misoperation group named after the refusal", gs)
	}

	fs = findings("w0/s1", true)
	labelRefused(fs, operatorReported(healthy, bugA))
	bugs, misops := 0, 0
	for _, g := range reports.Group(fs) {
		if g.Misoperation {
			misops++
		} else {
			bugs++
			if g.Oracle != oracles.NameHealth {
				t.Errorf("alarm group of oracle %s, want only health's", g.Oracle)
			}
		}
	}
	if bugs != 1 || misops != 1 {
		t.Fatalf("bug A: %d alarm groups and %d misoperation groups, want Available=False still an alarm beside the refusal", bugs, misops)
	}

	// Not a refusal: the same condition as before the step, one for an older
	// generation, a condition that is False without a failure reason.
	for name, tc := range map[string][2]model.Object{
		"already refused before the step": {refused, refused},
		"stale generation": {healthy, func() model.Object {
			o := alertmanagerCR(10, [4]string{"Reconciled", "False", "ReconciliationFailed", "x failed"})
			o["status"].(map[string]any)["conditions"].([]any)[0].(map[string]any)["observedGeneration"] = int64(9)
			return o
		}()},
		"no failure reason": {healthy, alertmanagerCR(9, [4]string{"Available", "False", "NoPodReady", "pod alertmanager-example-0: containers with incomplete status"})},
		"no message":        {healthy, alertmanagerCR(9, [4]string{"Reconciled", "False", "ReconciliationFailed", ""})},
		// A state the system passes through, not a refusal: the bundled
		// operator's Ready=False while it promotes a replica.
		"failing over": {healthy, alertmanagerCR(9, [4]string{"Ready", "False", "FailingOver", "primary cache-0 is down; promoting cache-1"})},
	} {
		if got := operatorReported(tc[0], tc[1]); got != "" {
			t.Errorf("%s: operatorReported = %q, want none", name, got)
		}
	}
}
