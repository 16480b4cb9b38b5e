package campaign

import (
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/model"
)

func TestOperatorRejected(t *testing.T) {
	cr := func(reason, msg string) model.Object {
		return model.Object{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "3/3 pods ready"},
			map[string]any{"type": "ConfigApplied", "status": "False", "reason": reason, "message": msg},
		}}}
	}
	desired := model.Object{"spec": map[string]any{"config": map[string]any{"maxmemory-policy": "gauntlet-bwa2c"}, "replicas": int64(3)}}
	rejectMsg := "not applied, not written: maxmemory-policy: CONFIG SET failed - argument(s) must be one of the following: volatile-lru"
	tests := []struct {
		name    string
		cr      model.Object
		changed []string
		want    bool
	}{
		{"the operator refuses the changed key", cr("ConfigRejected", rejectMsg), []string{"spec.config"}, true},
		{"a refusal that names another field", cr("ConfigRejected", "maxclients: out of range"), []string{"spec.config"}, false},
		{"a condition that is not a refusal", cr("RestartPending", rejectMsg), []string{"spec.config"}, false},
		{"nothing changed there", cr("ConfigRejected", rejectMsg), []string{"spec.replicas"}, false},
		{"no conditions", model.Object{}, []string{"spec.config"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := operatorRejected(tt.cr, desired, tt.changed)
			if (got != "") != tt.want {
				t.Fatalf("operatorRejected = %q, want rejected=%v", got, tt.want)
			}
			if tt.want && !strings.Contains(got, "ConfigRejected") {
				t.Fatalf("the reason %q does not name the condition", got)
			}
		})
	}
}

func TestNodeLocalProfiles(t *testing.T) {
	d := model.Object{"spec": map[string]any{
		"containerSecurityContext": map[string]any{"appArmorProfile": map[string]any{"type": "Localhost", "localhostProfile": "gauntlet-f58al"}},
		"podSecurityContext":       map[string]any{"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"sidecars":                 []any{map[string]any{"securityContext": map[string]any{"seccompProfile": map[string]any{"localhostProfile": "p.json"}}}},
	}}
	got := nodeLocalProfiles(d)
	if len(got) != 2 || !strings.Contains(strings.Join(got, ";"), `spec.containerSecurityContext.appArmorProfile.localhostProfile names the Localhost profile "gauntlet-f58al"`) ||
		!strings.Contains(strings.Join(got, ";"), `spec.sidecars[0].securityContext.seccompProfile.localhostProfile`) {
		t.Fatalf("nodeLocalProfiles = %q", got)
	}
	if got := nodeLocalProfiles(model.Object{"spec": map[string]any{"replicas": int64(3)}}); len(got) != 0 {
		t.Fatalf("no profile named: %q", got)
	}
}

func TestUserChangeOverData(t *testing.T) {
	pod := func(msg string) *model.Snapshot {
		return &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/cache-2": {"kind": "Pod", "metadata": map[string]any{"name": "cache-2"},
			"status": map[string]any{"containerStatuses": []any{map[string]any{"lastState": map[string]any{"terminated": map[string]any{"message": msg}}}}}}}}
	}
	denied := pod("# Can't open the append-only file appendonly.aof.5.incr.aof: Permission denied")
	prevD := model.Object{"spec": map[string]any{"containerSecurityContext": map[string]any{"procMount": "Default"}}}
	d := model.Object{"spec": map[string]any{"containerSecurityContext": map[string]any{"runAsUser": int64(1000), "runAsGroup": int64(1000), "readOnlyRootFilesystem": true}}}
	changed := []string{"spec.containerSecurityContext"}
	if got := userChangeOverData(prevD, d, changed, denied, nil); !strings.Contains(got, "spec.containerSecurityContext.runAsUser") || !strings.Contains(got, "cache-2") {
		t.Fatalf("user changed, permission denied: %q", got)
	}
	if got := userChangeOverData(prevD, d, changed, pod("out of memory"), nil); got != "" {
		t.Fatalf("another failure: %q", got)
	}
	same := model.Object{"spec": map[string]any{"containerSecurityContext": map[string]any{"procMount": "Default", "readOnlyRootFilesystem": true}}}
	if got := userChangeOverData(prevD, same, changed, denied, nil); got != "" {
		t.Fatalf("the user did not change: %q", got)
	}
}

func TestUnplaceable(t *testing.T) {
	pending := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/cache-3": {"kind": "Pod", "metadata": map[string]any{"name": "cache-3"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
			"message": "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints."}}}}}}
	prevD := model.Object{"spec": map[string]any{"scheduling": map[string]any{}}}
	d := model.Object{"spec": map[string]any{"scheduling": map[string]any{"topologySpreadConstraints": []any{map[string]any{"maxSkew": int64(1)}}}}}
	if got := unplaceable(prevD, d, []string{"spec.scheduling"}, pending); !strings.Contains(got, "cache-3") || !strings.Contains(got, "topology spread") {
		t.Fatalf("a spread the cluster cannot satisfy: %q", got)
	}
	if got := unplaceable(prevD, model.Object{"spec": map[string]any{"config": map[string]any{"a": "b"}}}, []string{"spec.config"}, pending); got != "" {
		t.Fatalf("a config change with a Pending pod is not a placement misoperation: %q", got)
	}
	if got := unplaceable(prevD, d, []string{"spec.scheduling"}, &model.Snapshot{}); got != "" {
		t.Fatalf("nothing Pending: %q", got)
	}
}

// TestUnpullable: a changed image that a container then waits to pull is a
// misoperation; a pull failure of an image the step did not name is not.
func TestUnpullable(t *testing.T) {
	snap := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/cache-2": {"kind": "Pod", "metadata": map[string]any{"name": "cache-2"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "valkey", "image": "gauntlet-x1y2z"}}},
		"status": map[string]any{"containerStatuses": []any{map[string]any{"name": "valkey",
			"state": map[string]any{"waiting": map[string]any{"reason": "ImagePullBackOff"}}}}}}}}
	d := model.Object{"spec": map[string]any{"image": "gauntlet-x1y2z"}}
	if got := unpullable(d, []string{"spec.image"}, snap); !strings.Contains(got, "gauntlet-x1y2z") || !strings.Contains(got, "cache-2") {
		t.Fatalf("an image nobody serves: %q", got)
	}
	if got := unpullable(model.Object{"spec": map[string]any{"replicas": int64(4)}}, []string{"spec.replicas"}, snap); got != "" {
		t.Fatalf("a scale-up beside a pull failure it did not cause: %q", got)
	}
	// CloudNativePG seed 2: imageName removed, the operator's default image
	// (PostgreSQL 18) has no mapping here, its major-upgrade Job waits for ever.
	unmapped := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/example-1-major-upgrade-tm6x8": {"kind": "Pod",
		"metadata": map[string]any{"name": "example-1-major-upgrade-tm6x8"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "major-upgrade", "image": "ghcr.io/cloudnative-pg/postgresql:18.3-system-trixie"}}},
		"status": map[string]any{"containerStatuses": []any{map[string]any{"name": "major-upgrade", "state": map[string]any{"waiting": map[string]any{
			"reason": "ImagePullBackOff", "message": `Back-off pulling image "ghcr.io/cloudnative-pg/postgresql:18.3-system-trixie": images: image ghcr.io/cloudnative-pg/postgresql:18.3-system-trixie: no image mapping rule matches the image, and the embedded cluster pulls from no registry`}}}}}}}}
	removed := model.Object{"spec": map[string]any{"instances": int64(1)}}
	if got := unpullable(removed, []string{"spec.imageName"}, unmapped); !strings.Contains(got, "postgresql:18.3-system-trixie") || !strings.Contains(got, "no image mapping rule") {
		t.Fatalf("an operator's default image with no mapping: %q", got)
	}
}

// TestDesignedCause: misoperation test cases of one scenario share a cause
// (one group), inputgen's own reason wins, valid cases have none.
func TestDesignedCause(t *testing.T) {
	a := &inputgen.TestCase{ID: "spec.replicas#integer/boundary-max-1", Property: "spec.replicas", Generator: "integer/boundary-max", Label: inputgen.Misoperation}
	b := &inputgen.TestCase{ID: "spec.replicas#integer/boundary-max-2", Property: "spec.replicas", Generator: "integer/boundary-max", Label: inputgen.Misoperation}
	if designedCause(a) == "" || designedCause(a) != designedCause(b) {
		t.Errorf("two cases of one scenario: causes %q and %q, want one", designedCause(a), designedCause(b))
	}
	ref := &inputgen.TestCase{Label: inputgen.Misoperation, Generator: "g", Property: "p",
		Description: `set x — a misoperation: spec.exporter.resources.claims[0].name "x" names no resource claim of the pod`}
	if got := designedCause(ref); got != `spec.exporter.resources.claims[0].name "x" names no resource claim of the pod` {
		t.Errorf("inputgen's reason: got %q", got)
	}
	if got := designedCause(&inputgen.TestCase{Label: inputgen.Valid, Generator: "g"}); got != "" {
		t.Errorf("a valid case has cause %q", got)
	}
}

// TestRootRefused: CloudNativePG seed 2 declared a "privileged" pod security
// context (runAsUser 0, runAsNonRoot false) and the kubelet refused its
// instance's init container, which CloudNativePG marks runAsNonRoot: the user
// asked for what the operator's pods cannot be — a misoperation, not a
// health alarm. Another refusal, or no change of identity, is not one.
func TestRootRefused(t *testing.T) {
	pod := func(reason, msg string) *model.Snapshot {
		return &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/example-1": {"kind": "Pod", "metadata": map[string]any{"name": "example-1"},
			"status": map[string]any{"initContainerStatuses": []any{map[string]any{"name": "bootstrap-controller",
				"state": map[string]any{"waiting": map[string]any{"reason": reason, "message": msg}}}}}}}}
	}
	refused := pod("CreateContainerConfigError", `container has runAsNonRoot and image will run as root (pod: "example-1_ns(u)", container: bootstrap-controller)`)
	prevD := model.Object{"spec": map[string]any{"instances": int64(1)}}
	d := model.Object{"spec": map[string]any{"instances": int64(1), "podSecurityContext": map[string]any{"runAsUser": int64(0), "runAsNonRoot": false, "fsGroup": int64(0)}}}
	changed := []string{"spec.podSecurityContext"}
	got := rootRefused(prevD, d, changed, refused)
	for _, want := range []string{"spec.podSecurityContext.runAsNonRoot", "spec.podSecurityContext.runAsUser", "bootstrap-controller", "example-1", "will run as root"} {
		if !strings.Contains(got, want) {
			t.Errorf("rootRefused = %q, want %q in it", got, want)
		}
	}
	if got := rootRefused(prevD, d, changed, pod("CreateContainerConfigError", `secret "pw" not found`)); got != "" {
		t.Errorf("another refusal: %q", got)
	}
	if got := rootRefused(prevD, prevD, changed, refused); got != "" {
		t.Errorf("no identity changed: %q", got)
	}
	onlyNonRoot := model.Object{"spec": map[string]any{"instances": int64(1), "podSecurityContext": map[string]any{"runAsNonRoot": true}}}
	if got := rootRefused(prevD, onlyNonRoot, changed, refused); !strings.Contains(got, "runAsNonRoot") {
		t.Errorf("runAsNonRoot alone changed: %q", got)
	}
}

// TestUnknownSchedulers: a desired state naming a scheduler the test cluster
// does not run leaves its pods Pending for ever (CloudNativePG seed 2): a
// misoperation; the default scheduler, or none, is not.
func TestUnknownSchedulers(t *testing.T) {
	d := model.Object{"spec": map[string]any{"schedulerName": "gauntlet-wbipx",
		"template": map[string]any{"spec": map[string]any{"schedulerName": "default-scheduler"}}}}
	got := unknownSchedulers(d)
	if len(got) != 1 || !strings.Contains(got[0], `spec.schedulerName names the scheduler "gauntlet-wbipx"`) {
		t.Fatalf("unknownSchedulers = %q", got)
	}
	if got := unknownSchedulers(model.Object{"spec": map[string]any{"schedulerName": "default-scheduler"}}); len(got) != 0 {
		t.Fatalf("the default scheduler: %q", got)
	}
}

// TestUserChangeOverDataLog: a container that exits without a message after
// the user changed (CloudNativePG's instance manager exits 0) is judged by its
// previous log (seed 2: spec.securityContext runAsUser 1000 over PGDATA owned
// by 26 crash-looped, "chmod …/pgdata: operation not permitted").
func TestUserChangeOverDataLog(t *testing.T) {
	snap := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/example-1": {"kind": "Pod", "metadata": map[string]any{"name": "example-1"},
		"status": map[string]any{"containerStatuses": []any{map[string]any{"name": "postgres", "restartCount": float64(3),
			"lastState": map[string]any{"terminated": map[string]any{"exitCode": float64(0), "reason": "Completed"}}}}}}}}
	prevD := model.Object{"spec": map[string]any{"instances": int64(1)}}
	d := model.Object{"spec": map[string]any{"instances": int64(1), "securityContext": map[string]any{"runAsUser": int64(1000)}}}
	changed := []string{"spec.securityContext"}
	logs := func(pod, container string) string {
		if pod != "example-1" || container != "postgres" {
			t.Errorf("read the log of %s/%s", pod, container)
		}
		return `{"level":"info","msg":"Starting"}` + "\n" + `{"level":"error","msg":"Error waiting on the PostgreSQL process","error":"chmod /var/lib/postgresql/data/pgdata: operation not permitted","stacktrace":"…"}`
	}
	got := userChangeOverData(prevD, d, changed, snap, logs)
	if !strings.Contains(got, "spec.securityContext.runAsUser") || !strings.Contains(got, `"chmod /var/lib/postgresql/data/pgdata: operation not permitted"`) {
		t.Fatalf("userChangeOverData = %q", got)
	}
	if got := userChangeOverData(prevD, d, changed, snap, func(string, string) string { return "out of memory" }); got != "" {
		t.Fatalf("another failure: %q", got)
	}
	if got := userChangeOverData(prevD, prevD, changed, snap, logs); got != "" {
		t.Fatalf("no change of user: %q", got)
	}
}

// TestNodeRefused: kind's node (containerd 1.6) refuses supplementalGroupsPolicy Strict at
// admission, seed 7: a limit of the test cluster, not the operator's doing.
func TestNodeRefused(t *testing.T) {
	snap := &model.Snapshot{Events: []model.Event{
		{Reason: "Scheduled", Message: "Successfully assigned g0-w0-1/cache-2 to node", Object: "/v1/Pod/g0-w0-1/cache-2"},
		{Reason: "SupplementalGroupsPolicyNotSupported", Message: "SupplementalGroupsPolicy=Strict is not supported in this node", Object: "/v1/Pod/g0-w0-1/cache-2", Count: 1025},
	}}
	d := model.Object{"spec": map[string]any{"podSecurityContext": map[string]any{"fsGroupChangePolicy": "Always", "supplementalGroupsPolicy": "Strict"}}}
	if got := nodeRefused(d, []string{"spec.podSecurityContext"}, snap); !strings.Contains(got, "not supported in this node") {
		t.Errorf("a security context the node cannot honour: %q", got)
	}
	if got := nodeRefused(d, []string{"spec.podSecurityContext.supplementalGroupsPolicy"}, snap); got == "" {
		t.Error("the field itself as the changed path: not recognised")
	}
	if got := nodeRefused(model.Object{"spec": map[string]any{"replicas": int64(4)}}, []string{"spec.replicas"}, snap); got != "" {
		t.Errorf("a change the refusal is not about: %q", got)
	}
	if got := nodeRefused(d, []string{"spec.podSecurityContext"}, &model.Snapshot{Events: snap.Events[:1]}); got != "" {
		t.Errorf("no refusal event: %q", got)
	}
}

func TestMisoperationWhyTimedOut(t *testing.T) {
	var ran []string
	rule := func(name, why string) func() string {
		return func() string { ran = append(ran, name); return why }
	}
	// A converged (or stuck) step: every rule, in order, the first reason wins.
	got := misoperationWhy(false, []func() string{rule("rejected", ""), rule("unplaceable", "cannot place")},
		[]func() string{rule("nodeRefused", "node refuses")})
	if got != "cannot place" || strings.Join(ran, ",") != "rejected,unplaceable" {
		t.Fatalf("converged: %q after %v, want the operator rules first", got, ran)
	}
	// A timed-out step: only the test environment's limits relabel it.
	ran = nil
	got = misoperationWhy(true, []func() string{rule("unplaceable", "cannot place")},
		[]func() string{rule("unpullable", ""), rule("nodeRefused", "node refuses")})
	if got != "node refuses" || strings.Join(ran, ",") != "unpullable,nodeRefused" {
		t.Fatalf("timed out: %q after %v, want only the environment rules", got, ran)
	}
	ran = nil
	if got := misoperationWhy(true, []func() string{rule("unplaceable", "cannot place")}, nil); got != "" || len(ran) != 0 {
		t.Fatalf("timed out, beyond capacity: %q after %v, want an alarm (no reason)", got, ran)
	}
}
