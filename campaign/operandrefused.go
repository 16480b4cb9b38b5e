package campaign

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
)

// introducedStrings are the strings (values and map keys) a step's desired
// state d holds under its changed paths that the previous desired state prevD
// did not hold there: the names and values the step brought in.
func introducedStrings(prevD, d model.Object, changed []string) map[string]string {
	collect := func(obj model.Object, into map[string]string) {
		for _, p := range changed {
			v, ok := valueAt(obj, p)
			if !ok {
				continue
			}
			var walk func(at string, v any)
			walk = func(at string, v any) {
				switch x := v.(type) {
				case map[string]any:
					for k, e := range x {
						into[k] = at + "." + k
						walk(at+"."+k, e)
					}
				case []any:
					for i, e := range x {
						walk(fmt.Sprintf("%s[%d]", at, i), e)
					}
				case string:
					if x != "" {
						into[x] = at
					}
				}
			}
			walk(p, v)
		}
	}
	before, now := map[string]string{}, map[string]string{}
	collect(prevD, before)
	collect(d, now)
	for s := range before {
		delete(now, s)
	}
	return now
}

// missingObjectMessage matches how the kubelet says a pod names a Secret or
// ConfigMap that does not exist: in a FailedMount event ("MountVolume.SetUp
// failed for volume "secret-x" : secret "x" not found") and in a container
// waiting in CreateContainerConfigError (`secret "x" not found`, `configmap
// "x" not found`).
var missingObjectMessage = regexp.MustCompile(`(?i)\b(secret|configmap)s? "([^"]+)" not found`)

// missingReferenced says why a desired state is a misoperation when an
// operand pod cannot start because it mounts or reads a Secret or ConfigMap
// that does not exist, whose name the step brought in (the Prometheus
// operator's spec.secrets: ["gauntlet-t4hbf"], rendered as a secret volume:
// the pod waits in FailedMount): the desired state names an object that does
// not exist, as a user's typo would. Empty when no such pod is seen.
func missingReferenced(prevD, d model.Object, changed []string, snap *model.Snapshot) string {
	if snap == nil {
		return ""
	}
	named := introducedStrings(prevD, d, changed)
	if len(named) == 0 {
		return ""
	}
	check := func(pod, how, msg string) string {
		for _, m := range missingObjectMessage.FindAllStringSubmatch(msg, -1) {
			if at, ok := named[m[2]]; ok {
				kind := "Secret"
				if strings.EqualFold(m[1], "configmap") {
					kind = "ConfigMap"
				}
				return fmt.Sprintf("%s names %s %q, which does not exist: pod %s cannot start (%s: %s)", at, kind, m[2], pod, how, truncateText(msg, 300))
			}
		}
		return ""
	}
	for _, e := range snap.Events {
		if e.Reason != "FailedMount" || !strings.Contains(e.Object, "/Pod/") {
			continue
		}
		if why := check(e.Object[strings.LastIndexByte(e.Object, '/')+1:], e.Reason, e.Message); why != "" {
			return why
		}
	}
	for _, key := range slices.Sorted(maps.Keys(snap.Objects)) {
		o := snap.Objects[key]
		if o["kind"] != "Pod" {
			continue
		}
		pod, _ := get(o, "metadata", "name").(string)
		for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
			ss, _ := get(o, "status", list).([]any)
			for _, st := range ss {
				m, _ := st.(map[string]any)
				reason, _ := get(m, "state", "waiting", "reason").(string)
				msg, _ := get(m, "state", "waiting", "message").(string)
				if reason != "CreateContainerConfigError" {
					continue
				}
				if why := check(pod, reason, msg); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// inventedValue matches the values the generator invents when a property
// has no meaning it knows of (inputgen's unique names: "gauntlet-" and a
// random word, alone or inside a host name or label key).
var inventedValue = regexp.MustCompile(`gauntlet-[a-z][a-z0-9]{3,}`)

// operandRefusedInvented says why a desired state is a misoperation when a
// container of the state reached fails (it restarted, or waits) and its log
// names a value the generator invented that the step brought in: the
// operand refused a made-up value the operator passed on, as it would a
// user's typo (the Prometheus operator's additionalArgs [{name:
// gauntlet-nz5qp, …}] rendered --gauntlet-nz5qp, which Alertmanager refuses:
// "unknown long flag '--gauntlet-nz5qp'"; clusterAdvertiseAddress
// gauntlet-gudjd: "missing port in address").
//
// A typed value does not count, nor a string the generator drew from the
// schema, the seed, the examples or a domain (an enum member, a duration, a
// number): the operator is meant to render those so the operand accepts
// them, and an operand refusing one is the operator's bug (the Prometheus
// operator's web.timeout: 6, a valid integer of its schema, rendered
// --web.timeout=6, which Alertmanager refuses: "time: missing unit in
// duration "6"").
//
// The operator's own pods (those labelled with every label of operator) do
// not count: an operator that fails on any input is its bug.
//
// logs returns a container's current or previous log ("" when it cannot be
// read). Empty when no such container is seen.
func operandRefusedInvented(prevD, d model.Object, changed []string, snap *model.Snapshot, operator map[string]string, logs func(pod, container string, previous bool) string) string {
	if snap == nil || logs == nil {
		return ""
	}
	var invented []string
	at := map[string]string{}
	for s, p := range introducedStrings(prevD, d, changed) {
		if inventedValue.MatchString(s) {
			invented = append(invented, s)
			at[s] = p
		}
	}
	if len(invented) == 0 {
		return ""
	}
	// The longest first: "gauntlet-ab12c.example.com" before "gauntlet-ab12c".
	slices.SortFunc(invented, func(a, b string) int { return len(b) - len(a) })
	for _, tc := range troubled(snap) {
		if !tc.restarted && tc.exitCode == -1 {
			continue // waiting to start, not refusing anything yet
		}
		if labelled(snap, tc.pod, operator) {
			continue
		}
		for _, previous := range []bool{false, true} {
			if previous && !tc.restarted {
				continue
			}
			text := logs(tc.pod, tc.container, previous)
			if !previous {
				// The kubelet's record of how it ended (a termination message) counts too.
				text = strings.Join(append(terminationMessages(snap, tc.pod, tc.container), text), "\n")
			}
			for _, line := range strings.Split(text, "\n") {
				for _, s := range invented {
					if strings.Contains(line, s) {
						return fmt.Sprintf("the operand refused a value the generator invented: %s = %q, and container %s of pod %s fails: %q",
							at[s], s, tc.container, tc.pod, truncateText(strings.TrimSpace(line), 300))
					}
				}
			}
		}
	}
	return ""
}

// labelled reports whether the snapshot's pod named pod carries every label
// of sel (false for an empty sel).
func labelled(snap *model.Snapshot, pod string, sel map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for _, o := range snap.Objects {
		if o["kind"] != "Pod" || get(o, "metadata", "name") != pod {
			continue
		}
		ls, _ := get(o, "metadata", "labels").(map[string]any)
		for k, v := range sel {
			if ls[k] != v {
				return false
			}
		}
		return true
	}
	return false
}

// terminationMessages are the messages of a container's current and last
// termination, as its pod's status holds them.
func terminationMessages(snap *model.Snapshot, pod, container string) []string {
	var out []string
	for _, o := range snap.Objects {
		if o["kind"] != "Pod" || get(o, "metadata", "name") != pod {
			continue
		}
		for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
			ss, _ := get(o, "status", list).([]any)
			for _, st := range ss {
				m, _ := st.(map[string]any)
				if m["name"] != container {
					continue
				}
				for _, at := range [][]string{{"state", "terminated", "message"}, {"lastState", "terminated", "message"}} {
					if msg, _ := get(m, at...).(string); msg != "" {
						out = append(out, msg)
					}
				}
			}
		}
	}
	return out
}

// inotifyExhausted matches a log line saying a program could not create a
// file watcher for lack of inotify instances ("create watcher: too many open
// files": inotify_init fails with EMFILE once the user's
// fs.inotify.max_user_instances are in use).
var inotifyExhausted = regexp.MustCompile(`(?i)(watch|notify).*too many open files|too many open files.*(watch|notify)`)

// inotifyLimitFile is the kernel setting that bounds inotify instances per user.
const inotifyLimitFile = "/proc/sys/fs/inotify/max_user_instances"

// hostLimited says why a step's findings are a limit of the test
// environment: a container of the state reached fails and its log says it
// could not create a file watcher ("too many open files"). The nodes of the
// embedded cluster and of kind are the host's kernel, where every cluster's
// pods running as one user share one fs.inotify.max_user_instances (128 by
// default; config reloaders of six clusters used it up). limit is that
// setting's value on this host ("" when unknown). Empty when no log says so.
func hostLimited(snap *model.Snapshot, logs func(pod, container string, previous bool) string, limit string) string {
	if snap == nil || logs == nil {
		return ""
	}
	for _, tc := range troubled(snap) {
		for _, previous := range []bool{false, true} {
			if previous && !tc.restarted {
				continue
			}
			for _, line := range strings.Split(logs(tc.pod, tc.container, previous), "\n") {
				if !inotifyExhausted.MatchString(line) {
					continue
				}
				held := ""
				if limit != "" {
					held = fmt.Sprintf(" (%s on this host)", limit)
				}
				return fmt.Sprintf("a limit of the test environment: container %s of pod %s fails: %q — the node's inotify instances are used up: fs.inotify.max_user_instances%s is shared by every test cluster's pods running as one user on the host's kernel; raise it (sysctl -w fs.inotify.max_user_instances=8192)",
					tc.container, tc.pod, truncateText(strings.TrimSpace(line), 200), held)
			}
		}
	}
	return ""
}

// hostInotifyLimit reads this host's fs.inotify.max_user_instances ("" when
// it cannot).
func hostInotifyLimit() string {
	b, err := os.ReadFile(inotifyLimitFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// logCache returns s.containerLog reading each container's log at most once
// (the misoperation rules and the step folder's logs/ read the same ones).
func (s *session) logCache(ctx context.Context) func(pod, container string, previous bool) string {
	got := map[string]string{}
	return func(pod, container string, previous bool) string {
		k := fmt.Sprint(pod, "\x00", container, "\x00", previous)
		if l, ok := got[k]; ok {
			return l
		}
		l := s.containerLog(ctx, pod, container, previous)
		got[k] = l
		return l
	}
}
