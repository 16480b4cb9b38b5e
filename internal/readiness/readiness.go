// Package readiness decides whether a workload object is ready: the one rule
// behind the campaign's convergence, the health oracle's not-ready findings and
// the generated tests' pod checks.
//
// It reads unstructured objects (map[string]any with numbers of any Go numeric
// type, as decoded from the API server, from JSON or from YAML) and knows Pods,
// Deployments, StatefulSets, DaemonSets, ReplicaSets and Jobs. The rules follow
// the Kubernetes controllers' own status fields, as kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus) does, with these differences, each one
// needed by the campaign:
//
//   - a StatefulSet with the OnDelete update strategy still needs its replicas
//     ready (kstatus reports it Current at once; the bundled operator's
//     StatefulSet is OnDelete, so a killed pod not yet recreated would count as
//     converged); only its revision is left to the operator;
//   - a Failed pod is not ready (kstatus counts it Current, as completed);
//   - every shortfall is listed with its status field, wanted and actual value
//     (the health oracle cites them as evidence), not only the first;
//   - messages are stable while nothing progresses: no container states,
//     timestamps or wall-clock windows (kstatus's Pending-pod verdict changes
//     after 15 s), because the campaign's stuck detector fingerprints them.
package readiness

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Problem is one reason an object is not ready.
type Problem struct {
	// Field is the path of the field that shows it (e.g. "status.readyReplicas"),
	// or "" when no single field does.
	Field string
	// Want and Got are the wanted and actual values of Field, when it has one.
	Want, Got any
	// Message says it in a few words that stay the same while nothing
	// progresses (e.g. "2 of 3 replicas ready", `phase "Pending"`).
	Message string
	// Detail adds what explains it, when there is more: a pod's Ready condition
	// reason and message, its containers' waiting reasons. It changes in a
	// crash loop.
	Detail string
	// Short is set when the object has fewer ready, available or up-to-date
	// replicas (or pods) than it wants, or has failed. It is unset for a change
	// still being rolled out or observed: extra replicas, a revision rolling
	// out, a generation not observed yet, a deletion in progress.
	Short bool
}

// Check returns what keeps obj, an object of the given API group ("" for the
// core group) and kind, from being ready. It returns nil when obj is ready or
// its kind is not one the package knows.
func Check(group, kind string, obj map[string]any) []Problem {
	var out []Problem
	if s, _ := get(obj, "metadata", "deletionTimestamp").(string); s != "" {
		out = append(out, Problem{Field: "metadata.deletionTimestamp", Message: "being deleted"})
	}
	switch {
	case group == "" && kind == "Pod":
		out = append(out, pod(obj)...)
	case group == "apps" && kind == "Deployment":
		out = append(out, observed(obj)...)
		want := intOr(obj, 1, "spec", "replicas")
		out = append(out, count(obj, "updatedReplicas", want, "replicas run the current template", true)...)
		out = append(out, count(obj, "availableReplicas", want, "replicas available", true)...)
		// Available replicas are ready ones: a shortfall shows as available.
		out = append(out, count(obj, "readyReplicas", want, "replicas ready", false)...)
		// Old replicas still running while the new ones cannot start (kubectl
		// rollout status: "old replicas are pending termination"): the old
		// pods keep the counts above whole.
		out = append(out, count(obj, "replicas", want, "replicas exist", false)...)
	case group == "apps" && kind == "StatefulSet":
		out = append(out, observed(obj)...)
		want := intOr(obj, 1, "spec", "replicas")
		out = append(out, count(obj, "readyReplicas", want, "replicas ready", true)...)
		out = append(out, count(obj, "updatedReplicas", want, "replicas run the current template", true)...)
		// Fewer replicas show as fewer ready; more are being scaled down.
		out = append(out, count(obj, "replicas", want, "replicas exist", false)...)
		cur, _ := get(obj, "status", "currentRevision").(string)
		upd, _ := get(obj, "status", "updateRevision").(string)
		if typ, _ := get(obj, "spec", "updateStrategy", "type").(string); typ != "OnDelete" && cur != upd {
			out = append(out, Problem{Field: "status.currentRevision", Want: upd, Got: cur,
				Message: fmt.Sprintf("rolling out revision %s (current %s)", upd, cur)})
		}
	case group == "apps" && kind == "DaemonSet":
		out = append(out, observed(obj)...)
		want := intOr(obj, 0, "status", "desiredNumberScheduled")
		out = append(out, count(obj, "numberReady", want, "pods ready", true)...)
	case group == "apps" && kind == "ReplicaSet":
		out = append(out, observed(obj)...)
		want := intOr(obj, 1, "spec", "replicas")
		out = append(out, count(obj, "readyReplicas", want, "replicas ready", true)...)
	case group == "batch" && kind == "Job":
		conds, _ := get(obj, "status", "conditions").([]any)
		for i, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Failed" && m["status"] == "True" {
				why := strings.TrimSpace(fmt.Sprintf("%s %s", str(m["reason"]), str(m["message"])))
				out = append(out, Problem{Field: fmt.Sprintf("status.conditions[%d].status", i), Want: "False", Got: "True",
					Message: "failed: " + why, Detail: why, Short: true})
			}
		}
	}
	return out
}

// Ready reports whether obj is ready (Check finds nothing).
func Ready(group, kind string, obj map[string]any) bool {
	return len(Check(group, kind, obj)) == 0
}

// PodReady reports whether a pod has finished successfully or runs with its
// Ready condition True, and its phase.
func PodReady(obj map[string]any) (ready bool, phase string) {
	phase, _ = get(obj, "status", "phase").(string)
	return phase == "Succeeded" || (phase == "Running" && readyCondition(obj) == "True"), phase
}

// Pod is PodReady's rule for a typed pod (client-go's): finished successfully,
// or Running with its Ready condition True.
func Pod(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true
	case corev1.PodRunning:
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
	}
	return false
}

func pod(obj map[string]any) []Problem {
	ready, phase := PodReady(obj)
	if ready {
		return nil
	}
	p := Problem{Field: "status.conditions", Want: "True", Short: true}
	if i := readyIndex(obj); i >= 0 {
		p.Field = fmt.Sprintf("status.conditions[%d].status", i)
	}
	if phase == "Running" {
		p.Message = "not ready"
	} else {
		p.Message = fmt.Sprintf("phase %q", phase)
	}
	p.Detail = podDetail(obj, phase)
	return []Problem{p}
}

// podDetail is "phase P; <Ready reason> <message>; <container>: <waiting reason>...".
func podDetail(obj map[string]any, phase string) string {
	if phase == "" {
		phase = "unknown"
	}
	parts := []string{"phase " + phase}
	if i := readyIndex(obj); i >= 0 {
		conds, _ := get(obj, "status", "conditions").([]any)
		m, _ := conds[i].(map[string]any)
		if why := strings.TrimSpace(str(m["reason"]) + " " + str(m["message"])); why != "" && m["status"] != "True" {
			parts = append(parts, why)
		}
	}
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		l, _ := get(obj, "status", field).([]any)
		for _, e := range l {
			m, _ := e.(map[string]any)
			if r, _ := get(m, "state", "waiting", "reason").(string); r != "" {
				parts = append(parts, str(m["name"])+": "+r)
			}
		}
	}
	return strings.Join(parts, "; ")
}

func readyIndex(obj map[string]any) int {
	conds, _ := get(obj, "status", "conditions").([]any)
	for i, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			return i
		}
	}
	return -1
}

func readyCondition(obj map[string]any) string {
	if i := readyIndex(obj); i >= 0 {
		conds, _ := get(obj, "status", "conditions").([]any)
		m, _ := conds[i].(map[string]any)
		return str(m["status"])
	}
	return ""
}

// observed is a problem when status.observedGeneration (absent: 0) lags
// metadata.generation.
func observed(obj map[string]any) []Problem {
	gen := intOr(obj, 0, "metadata", "generation")
	og := intOr(obj, 0, "status", "observedGeneration")
	if og >= gen {
		return nil
	}
	return []Problem{{Field: "status.observedGeneration", Want: gen, Got: og,
		Message: fmt.Sprintf("generation %d not observed (observedGeneration %d)", gen, og)}}
}

// count is a problem when status.<field> (absent: 0, as the API server omits
// zero counts) differs from want; short when it is lower and short is set.
func count(obj map[string]any, field string, want int64, what string, short bool) []Problem {
	got := intOr(obj, 0, "status", field)
	if got == want {
		return nil
	}
	return []Problem{{Field: "status." + field, Want: want, Got: got,
		Message: fmt.Sprintf("%d of %d %s", got, want, what), Short: short && got < want}}
}

func get(o map[string]any, path ...string) any { return jsonv.At(o, path...) }

// intOr returns the number at path as an integer, or def when it is absent or
// not a number (of any Go numeric type, or a json.Number).
func intOr(o map[string]any, def int64, path ...string) int64 {
	if f, ok := jsonv.AsFloat(get(o, path...)); ok {
		return int64(f)
	}
	return def
}

func str(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	}
	return fmt.Sprint(v)
}
