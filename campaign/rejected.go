package campaign

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// rejectedReason matches condition reasons with which operators refuse an input
// they validate themselves (ConfigRejected, InvalidSpec, ValidationFailed...).
var rejectedReason = regexp.MustCompile(`(?i)reject|invalid|validat|refus|unsupported`)

// operatorRejected reports why a desired state counts as a misoperation that the
// operator itself caught: after the step, the custom resource carries a
// condition with status False, a reason saying it refused the input, and a
// message naming one of the fields the step changed (its key or its value). The
// operator then keeps the previous state, which the oracles would otherwise
// report as an inconsistency. Empty when there is no such condition.
func operatorRejected(cr model.Object, desired model.Object, changed []string) string {
	conds, _ := get(cr, "status", "conditions").([]any)
	if len(conds) == 0 || len(changed) == 0 {
		return ""
	}
	var needles []string
	for _, p := range changed {
		v, ok := valueAt(desired, p)
		if !ok {
			continue
		}
		needles = append(needles, leafNeedles(p, v)...)
	}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		if status != "False" || !rejectedReason.MatchString(reason) {
			continue
		}
		for _, n := range needles {
			if strings.Contains(msg, n) {
				typ, _ := m["type"].(string)
				return fmt.Sprintf("the operator refused it: condition %s=False (%s): %s", typ, reason, msg)
			}
		}
	}
	return ""
}

// valueAt returns the value at a dotted path of plain keys (the form
// changedPaths writes for keys without dots).
func valueAt(obj model.Object, p string) (any, bool) {
	var cur any = obj
	for _, seg := range strings.Split(p, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// leafNeedles lists the distinctive strings of a changed value: the keys of
// its leaves (and the path's last key) and their string values, each at least
// three characters long so that a message does not match by accident.
func leafNeedles(p string, v any) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 {
			out = append(out, s)
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		add(p[i+1:])
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				add(k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			add(x)
		}
	}
	walk(v)
	return out
}

// specObjects calls fn for every object below a desired state's spec, with
// its path ("spec.containers[0].securityContext").
func specObjects(d model.Object, fn func(p string, m map[string]any)) {
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case map[string]any:
			fn(p, x)
			for k, e := range x {
				walk(p+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", p, i), e)
			}
		}
	}
	walk("spec", d["spec"])
}

// nodeLocalProfiles lists the Localhost seccomp and AppArmor profiles a desired
// state names (any localhostProfile field): profiles are files on each node,
// which test clusters do not have, so such a pod can never run there. A
// desired state naming one is a misoperation, like one naming a missing Secret.
func nodeLocalProfiles(d model.Object) []string {
	var out []string
	specObjects(d, func(p string, m map[string]any) {
		if name, ok := m["localhostProfile"].(string); ok && name != "" {
			out = append(out, fmt.Sprintf("%s.localhostProfile names the Localhost profile %q, which no node of the test cluster has loaded", p, name))
		}
	})
	sort.Strings(out)
	return out
}

// defaultScheduler is the only scheduler test clusters run.
const defaultScheduler = "default-scheduler"

// unknownSchedulers lists the schedulerName fields of a desired state that
// name another scheduler than the default one: no scheduler of the test
// cluster picks such a pod, which stays Pending for ever (CloudNativePG seed
// 2: a generated schedulerName). A desired state naming one is a
// misoperation, like one naming a missing Secret.
func unknownSchedulers(d model.Object) []string {
	var out []string
	specObjects(d, func(p string, m map[string]any) {
		if name, ok := m["schedulerName"].(string); ok && name != "" && name != defaultScheduler {
			out = append(out, fmt.Sprintf("%s.schedulerName names the scheduler %q, which the test cluster does not run (only %s)", p, name, defaultScheduler))
		}
	})
	sort.Strings(out)
	return out
}

// identityKeys are the security-context fields that decide which user and
// groups a container's processes run as.
var identityKeys = map[string]bool{"runAsUser": true, "runAsGroup": true, "fsGroup": true, "supplementalGroups": true}

// userChangeOverData reports why a desired state counts as a misoperation of
// the user's: it changes the user or groups the containers run as, and a
// container of the state reached fails with "permission denied": the files a
// persistent volume holds belong to the previous user, and only root (or a
// volume type that applies fsGroup, which hostPath and local-path volumes, as
// on kind and the embedded cluster, do not) could hand them over. Empty when
// that is not the case.
//
// A container that exits without a message (CloudNativePG's instance manager
// exits 0 after "chmod …/pgdata: operation not permitted") is judged by the
// tail of its previous log, which logs returns ("" when it cannot be read).
func userChangeOverData(prevD, d model.Object, changed []string, snap *model.Snapshot, logs func(pod, container string) string) string {
	var ids []string
	for _, p := range changed {
		prev, _ := valueAt(prevD, p)
		cur, _ := valueAt(d, p)
		ids = append(ids, changedIdentity(p, prev, cur)...)
	}
	if len(ids) == 0 || snap == nil {
		return ""
	}
	for _, o := range snap.Objects {
		if o["kind"] != "Pod" {
			continue
		}
		statuses, _ := get(o, "status", "containerStatuses").([]any)
		for _, cs := range statuses {
			m, _ := cs.(map[string]any)
			name, _ := get(o, "metadata", "name").(string)
			for _, msg := range []any{get(m, "lastState", "terminated", "message"), get(m, "state", "terminated", "message"), get(m, "state", "waiting", "message")} {
				if s, _ := msg.(string); strings.Contains(strings.ToLower(s), "permission denied") {
					return fmt.Sprintf("%s changed the user the containers run as, and pod %s fails with \"permission denied\": the data volume's files belong to the previous user", strings.Join(ids, ", "), name)
				}
			}
			restarts, _ := jsonv.AsFloat(m["restartCount"])
			if logs == nil || restarts == 0 {
				continue
			}
			cname, _ := m["name"].(string)
			if line := deniedLine(logs(name, cname)); line != "" {
				return fmt.Sprintf("%s changed the user the containers run as, and container %s of pod %s fails: %q: the data volume's files belong to the previous user", strings.Join(ids, ", "), cname, name, line)
			}
		}
	}
	return ""
}

// rootRefused reports why a desired state counts as a misoperation of the
// user's: it changes the user or groups the containers run as, or whether they
// may run as root, and the kubelet refuses to start a container of the state
// reached because of it ("container has runAsNonRoot and image will run as
// root": a pod-level runAsUser 0 under a container the operator marks
// runAsNonRoot, as CloudNativePG does for every container of its instances).
// The operator could refuse such an input at admission; the user asked for
// something its pods cannot be. Empty when that is not the case.
func rootRefused(prevD, d model.Object, changed []string, snap *model.Snapshot) string {
	var ids []string
	for _, p := range changed {
		prev, _ := valueAt(prevD, p)
		cur, _ := valueAt(d, p)
		ids = append(ids, changedIdentity(p, prev, cur)...)
		ids = append(ids, changedKey(p, prev, cur, "runAsNonRoot")...)
	}
	if len(ids) == 0 || snap == nil {
		return ""
	}
	for _, o := range snap.Objects {
		if o["kind"] != "Pod" {
			continue
		}
		for _, f := range []string{"initContainerStatuses", "containerStatuses"} {
			statuses, _ := get(o, "status", f).([]any)
			for _, cs := range statuses {
				m, _ := cs.(map[string]any)
				reason, _ := get(m, "state", "waiting", "reason").(string)
				msg, _ := get(m, "state", "waiting", "message").(string)
				if reason == "CreateContainerConfigError" && strings.Contains(msg, "runAsNonRoot") {
					name, _ := get(o, "metadata", "name").(string)
					cname, _ := m["name"].(string)
					sort.Strings(ids)
					return fmt.Sprintf("%s changed the user the containers run as, and the kubelet refuses container %s of pod %s: %s", strings.Join(slices.Compact(ids), ", "), cname, name, msg)
				}
			}
		}
	}
	return ""
}

// changedKey lists the fields named key under path p whose value differs
// between prev and cur.
func changedKey(p string, prev, cur any, key string) []string {
	var out []string
	var walk func(p string, a, b any)
	walk = func(p string, a, b any) {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok || bok {
			for k := range am {
				if _, ok := bm[k]; !ok {
					walk(p+"."+k, am[k], nil)
				}
			}
			for k := range bm {
				walk(p+"."+k, am[k], bm[k])
			}
			return
		}
		if p[strings.LastIndexByte(p, '.')+1:] == key && !jsonEqual(a, b) {
			out = append(out, p)
		}
	}
	walk(p, prev, cur)
	return out
}

// deniedLine is the first line of a log that reports a permission refused
// by the file system ("permission denied", "operation not permitted"),
// trimmed to 200 bytes; "" when none does.
func deniedLine(log string) string {
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "permission denied") || strings.Contains(l, "operation not permitted") {
			line = strings.TrimSpace(line)
			if i := strings.Index(l, "\"error\":\""); i >= 0 {
				// a JSON log line: its error field says it best
				rest := line[i+9:]
				if j := strings.IndexByte(rest, '"'); j > 0 {
					return rest[:j]
				}
			}
			if len(line) > 200 {
				line = line[:200]
			}
			return line
		}
	}
	return ""
}

// changedIdentity lists the identity fields (see identityKeys) under path p
// whose value differs between prev and cur.
func changedIdentity(p string, prev, cur any) []string {
	var out []string
	var walk func(p string, a, b any)
	walk = func(p string, a, b any) {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok || bok {
			keys := map[string]bool{}
			for k := range am {
				keys[k] = true
			}
			for k := range bm {
				keys[k] = true
			}
			for k := range keys {
				walk(p+"."+k, am[k], bm[k])
			}
			return
		}
		if identityKeys[p[strings.LastIndexByte(p, '.')+1:]] && !jsonEqual(a, b) {
			out = append(out, p)
		}
	}
	walk(p, prev, cur)
	return out
}

// placementKeys are fields that decide where (and whether) the scheduler can
// place a pod.
var placementKeys = map[string]bool{
	"scheduling": true, "affinity": true, "nodeAffinity": true, "podAffinity": true, "podAntiAffinity": true,
	"nodeSelector": true, "tolerations": true, "topologySpreadConstraints": true, "resources": true,
	"requests": true, "limits": true, "priorityClassName": true,
}

// unplaceable reports why a desired state counts as a misoperation for the
// test cluster: it changes where pods may run (affinity, spread, node
// selector, requests...) and a pod of the state reached is Unschedulable: the
// scheduler says the cluster cannot place it as asked (a spread or an affinity
// over topology the few test nodes do not have, more CPU than a node holds).
// Empty when that is not the case.
func unplaceable(prevD, d model.Object, changed []string, snap *model.Snapshot) string {
	touches := false
	for _, p := range changed {
		v, _ := valueAt(d, p)
		pv, _ := valueAt(prevD, p)
		for _, n := range append(append(leafNeedles(p, v), leafNeedles(p, pv)...), p[strings.LastIndexByte(p, '.')+1:]) {
			if placementKeys[n] {
				touches = true
			}
		}
	}
	if !touches || snap == nil {
		return ""
	}
	for _, o := range snap.Objects {
		if o["kind"] != "Pod" {
			continue
		}
		conds, _ := get(o, "status", "conditions").([]any)
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "PodScheduled" && m["status"] == "False" && m["reason"] == "Unschedulable" {
				name, _ := get(o, "metadata", "name").(string)
				msg, _ := m["message"].(string)
				return fmt.Sprintf("the test cluster cannot place pod %s as the desired state asks: %s", name, msg)
			}
		}
	}
	return ""
}

// pullFailures are the waiting reasons of a container whose image cannot be had.
var pullFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true}

// unmappedImage is how the embedded cluster's kubelet says that it has no way
// to run an image (cluster/local's images.ErrUnmapped).
const unmappedImage = "no image mapping rule matches the image"

// unpullable says why a desired state is a misoperation when it names an
// image that cannot be pulled: a string the step changed is the image of a
// container that waits in ErrImagePull, ImagePullBackOff or InvalidImageName.
// So is one whose state needs an image the test cluster has no mapping for,
// named or not: removing CloudNativePG's imageName brings its default
// PostgreSQL 18 image and a major-upgrade Job that cannot run here (seed 2,
// stuck) — a limit of the test environment, not the operator's doing.
// Empty when neither is the case.
func unpullable(d model.Object, changed []string, snap *model.Snapshot) string {
	if snap == nil {
		return ""
	}
	named := map[string]bool{}
	for _, p := range changed {
		v, _ := valueAt(d, p)
		for _, n := range leafNeedles(p, v) {
			named[n] = true
		}
	}
	for _, key := range slices.Sorted(maps.Keys(snap.Objects)) {
		o := snap.Objects[key]
		if o["kind"] != "Pod" {
			continue
		}
		images := map[string]string{}
		for _, list := range []string{"containers", "initContainers"} {
			cs, _ := get(o, "spec", list).([]any)
			for _, c := range cs {
				m, _ := c.(map[string]any)
				name, _ := m["name"].(string)
				images[name], _ = m["image"].(string)
			}
		}
		for _, list := range []string{"containerStatuses", "initContainerStatuses"} {
			ss, _ := get(o, "status", list).([]any)
			for _, st := range ss {
				m, _ := st.(map[string]any)
				name, _ := m["name"].(string)
				reason, _ := get(m, "state", "waiting", "reason").(string)
				msg, _ := get(m, "state", "waiting", "message").(string)
				img := images[name]
				if !pullFailures[reason] {
					continue
				}
				pod, _ := get(o, "metadata", "name").(string)
				if named[img] {
					return fmt.Sprintf("image %q cannot be pulled: container %s of pod %s waits in %s", img, name, pod, reason)
				}
				if strings.Contains(msg, unmappedImage) {
					return fmt.Sprintf("the state needs image %q (container %s of pod %s), which the test cluster cannot run: no image mapping rule matches it (map it to test this change)", img, name, pod)
				}
			}
		}
	}
	return ""
}

// nodeRefused says why a desired state is a misoperation when the test cluster's nodes
// refuse to run its pods for lack of a feature a field the step set asks for: the kubelet
// rejects such a pod at admission with the reason <Field>NotSupported (seen on kind, whose
// node runs Debian's containerd 1.6: "SupplementalGroupsPolicy=Strict is not supported in
// this node", 1,025 rejections as the StatefulSet re-created the pod). A limit of the test
// environment, not the operator's doing. Empty when the snapshot's events show none.
func nodeRefused(d model.Object, changed []string, snap *model.Snapshot) string {
	if snap == nil {
		return ""
	}
	fields := map[string]bool{}
	for _, p := range changed {
		fields[strings.ToLower(p[strings.LastIndexByte(p, '.')+1:])] = true
		v, _ := valueAt(d, p)
		collectKeys(v, fields)
	}
	for _, e := range snap.Events {
		field, ok := strings.CutSuffix(e.Reason, "NotSupported")
		if !ok || !fields[strings.ToLower(field)] || !strings.Contains(e.Object, "/Pod/") {
			continue
		}
		return fmt.Sprintf("the test cluster's node refuses the pods this state asks for: %s (%s, %s)", e.Message, e.Reason, e.Object)
	}
	return ""
}

// collectKeys adds every map key under v, lowercased, to keys.
func collectKeys(v any, keys map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			keys[strings.ToLower(k)] = true
			collectKeys(c, keys)
		}
	case []any:
		for _, c := range t {
			collectKeys(c, keys)
		}
	}
}

// misopMarker separates a test case's description from the reason inputgen
// labelled it a misoperation.
const misopMarker = " — a misoperation: "

// designedCause is the cause a misoperation test case is grouped under: the
// reason inputgen gave (a dangling in-object reference, …), else its
// generator and property, so the cases of one scenario share a group instead
// of one group per test case. Empty for valid test cases.
func designedCause(tc *inputgen.TestCase) string {
	if tc.Label != inputgen.Misoperation {
		return ""
	}
	if _, why, ok := strings.Cut(tc.Description, misopMarker); ok && why != "" {
		return why
	}
	return fmt.Sprintf("%s on %s is a misoperation by design", tc.Generator, tc.Property)
}

// misoperationWhy runs the misoperation rules in order and returns the first
// reason found. On a step that timed out only envLimits run — the rules that
// recognise a limit of the test environment (an image it cannot run, a node
// feature it lacks), which no operator could overcome by any wait: a timeout
// is otherwise the operator's to answer for (seeded bug 03's beyond-capacity
// step times out and must stay an alarm, so unplaceable is not among them).
func misoperationWhy(timedOut bool, rules, envLimits []func() string) string {
	if !timedOut {
		for _, r := range rules {
			if why := r(); why != "" {
				return why
			}
		}
	}
	for _, r := range envLimits {
		if why := r(); why != "" {
			return why
		}
	}
	return ""
}

// failedReason matches condition reasons with which operators say they could
// not bring the system to a desired state (ReconciliationFailed, SyncError,
// ConfigRejected, InvalidSpec...) — not a state the system passes through
// (FailingOver, the bundled operator's reason while it promotes a replica).
var failedReason = regexp.MustCompile(`(?i)fail(ed|ure)|error|reject|invalid|refus|unsupported`)

// operatorReported says, in the operator's own words, why a step's desired
// state was not carried out: after the step the custom resource carries a
// condition with status False, a failure reason and a message, for its
// current generation (its observedGeneration, where it has one, is not older
// than metadata.generation), which it did not carry with that reason and
// message before the step (the Prometheus operator's Reconciled=False,
// ReconciliationFailed, "failed to get custom governing service …: services
// "gauntlet-v5h5o" not found"). Unlike operatorRejected, the message need
// not name a changed field, nor the reason say "rejected". Empty when there is
// no such condition.
func operatorReported(prevCR, cr model.Object) string {
	conds, _ := get(cr, "status", "conditions").([]any)
	gen, _ := jsonv.AsFloat(get(cr, "metadata", "generation"))
	before := map[string]bool{}
	prevConds, _ := get(prevCR, "status", "conditions").([]any)
	for _, c := range prevConds {
		m, _ := c.(map[string]any)
		if m["status"] == "False" {
			before[fmt.Sprint(m["type"], "\x00", m["reason"], "\x00", m["message"])] = true
		}
	}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		if m["status"] != "False" || !failedReason.MatchString(reason) || strings.TrimSpace(msg) == "" {
			continue
		}
		if og, ok := jsonv.AsFloat(m["observedGeneration"]); ok && gen > 0 && og < gen {
			continue // about an earlier desired state
		}
		if before[fmt.Sprint(typ, "\x00", reason, "\x00", msg)] {
			continue
		}
		return fmt.Sprintf("the operator refused the desired state: condition %s=False (%s): %s", typ, reason, truncateText(msg, 300))
	}
	return ""
}

// labelRefused turns a step's consistency findings (a property "not
// reflected", "overruled", "still holds its previous value") into a
// misoperation group named after the operator's refusal (operatorReported):
// the operator said it did not carry the desired state out, and why, so the
// state not reflecting it is what it announced, not an inconsistency. Every
// other finding stays as it is: a refusal that takes the running system down
// (the Prometheus operator deleting its StatefulSet on a refused update:
// Available=False) is still an alarm.
func labelRefused(fs []model.Finding, cause string) {
	if cause == "" {
		return
	}
	for i := range fs {
		f := &fs[i]
		if f.Oracle != oracles.NameConsistency || f.Severity == model.SeverityWarning || f.Misoperation {
			continue
		}
		f.Misoperation, f.Cause, f.Signature = true, cause, model.CauseSignature(cause)
	}
}

// truncateText cuts s to n bytes, marking the cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
