package oracles

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/readiness"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Health finds explicit errors in the state reached:
//
//   - a step that did not converge (Step.TimedOut or Step.Stuck);
//   - containers that restarted since the previous state (restartCount grew, or the
//     pod is new and has restarted) or wait in CrashLoopBackOff;
//   - the operator's pods (Config.OperatorSelector) restarting or being replaced;
//   - panics and fatal errors in the operator log (and lines matching
//     Config.LogPatterns), one finding per distinct panic with its stack;
//   - workloads not ready after convergence: StatefulSets and Deployments with fewer
//     ready (available) or updated replicas than desired, DaemonSets with unready
//     pods, failed Jobs, and standalone pods that are not Ready;
//   - CR status conditions or phase that report a failure (Config.FailureConditions,
//     Config.FailurePhases), with their reason.
//
// Faults excuse what they cause: restarts of a pod a fault of the step targeted
// (a target that names no pod, such as "primary", covers every pod; "operator"
// covers the operator's pods); and, while a persistent fault is still in place,
// crash loops of targeted pods and unready workloads. Faults the back end could
// not inject excuse nothing.
//
// Create it with NewHealth.
type Health struct {
	selector   map[string]string
	failConds  map[string]string
	failPhases map[string]bool
	patterns   []*regexp.Regexp
}

// NewHealth returns the health oracle configured by cfg.
func NewHealth(cfg Config) *Health {
	h := &Health{selector: cfg.OperatorSelector, failConds: cfg.FailureConditions, failPhases: map[string]bool{}}
	if h.failConds == nil {
		h.failConds = DefaultFailureConditions()
	}
	phases := cfg.FailurePhases
	if phases == nil {
		phases = DefaultFailurePhases()
	}
	for _, p := range phases {
		h.failPhases[p] = true
	}
	for _, p := range cfg.LogPatterns {
		if re, err := regexp.Compile(p); err == nil {
			h.patterns = append(h.patterns, re)
		}
	}
	return h
}

// Name is "health".
func (h *Health) Name() string { return NameHealth }

// Check judges t.Curr (and t.Step's timeout flag and faults).
func (h *Health) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Curr == nil || ctx.Err() != nil {
		return nil
	}
	fs := newFindingSet(NameHealth)
	ns := testNamespace(t.Curr)
	ex := newExcuses(t.Step)
	notReady := h.checkWorkloads(t, ex, fs)
	h.checkPods(t, ex, fs)
	h.checkCR(t, fs)
	h.checkLog(t.Curr.OperatorLog, ns, fs)
	if t.Step != nil && t.Step.Unconverged() {
		h.timeout(t, notReady, fs)
	}
	return fs.list()
}

// excuses are the pods the step's faults account for.
type excuses struct {
	all, operator bool            // every (non-operator) pod; the operator's pods
	pods          map[string]bool // by name
	active        bool            // a persistent fault is still in place
}

func newExcuses(s *model.Step) excuses {
	e := excuses{pods: map[string]bool{}}
	if s == nil {
		return e
	}
	for _, f := range s.Faults {
		if f.Unsupported != "" {
			continue
		}
		if f.Persistent && f.Removed.IsZero() {
			e.active = true
		}
		if strings.HasPrefix(f.Kind, "operator") {
			e.operator = true
		}
		for _, tg := range f.Targets {
			switch {
			case tg == "operator":
				e.operator = true
			case strings.Contains(tg, "/") || strings.Contains(tg, "-") || strings.ContainsAny(tg, "0123456789"):
				// a pod name (possibly namespace/name)
				e.pods[tg[strings.LastIndexByte(tg, '/')+1:]] = true
			default:
				e.all = true // a role such as "primary" or "replica"
			}
		}
	}
	return e
}

func (e excuses) covers(pod string, operator bool) bool {
	if operator {
		return e.operator || e.pods[pod]
	}
	return e.all || e.pods[pod]
}

func (h *Health) isOperator(pod model.Object) bool {
	if len(h.selector) == 0 {
		return false
	}
	labels := mapAt(pod, "metadata", "labels")
	for k, v := range h.selector {
		if s, _ := labels[k].(string); s != v {
			return false
		}
	}
	return true
}

type containerStatus struct {
	path     string // e.g. status.containerStatuses[0]
	name     string
	restarts int
	waiting  string // waiting reason
	message  string
	last     string // last termination: reason and exit code
}

func containerStatuses(pod model.Object) []containerStatus {
	var out []containerStatus
	status := mapAt(pod, "status")
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		l, _ := status[field].([]any)
		for i, e := range l {
			m, _ := e.(map[string]any)
			if m == nil {
				continue
			}
			cs := containerStatus{path: fmt.Sprintf("status.%s[%d]", field, i)}
			cs.name, _ = m["name"].(string)
			if n, ok := jsonv.AsFloat(m["restartCount"]); ok {
				cs.restarts = int(n)
			}
			w := mapAt(m, "state", "waiting")
			cs.waiting, _ = w["reason"].(string)
			cs.message, _ = w["message"].(string)
			if lt := mapAt(m, "lastState", "terminated"); lt != nil {
				reason, _ := lt["reason"].(string)
				code, _ := scalarString(lt["exitCode"])
				cs.last = strings.TrimSpace(fmt.Sprintf("%s exit code %s", reason, code))
			}
			out = append(out, cs)
		}
	}
	return out
}

// mapAt walks nested maps.
func mapAt(v any, keys ...string) map[string]any {
	m, _ := v.(map[string]any)
	for _, k := range keys {
		if m == nil {
			return nil
		}
		m, _ = m[k].(map[string]any)
	}
	return m
}

func stringAt(v any, keys ...string) string {
	if len(keys) == 0 {
		return ""
	}
	m := mapAt(v, keys[:len(keys)-1]...)
	s, _ := m[keys[len(keys)-1]].(string)
	return s
}

func uidOf(o model.Object) string { return stringAt(o, "metadata", "uid") }

// objectsOfKind returns the keys of a snapshot's objects of a kind, sorted.
func objectsOfKind(s *model.Snapshot, kind string) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, key := range s.Keys() {
		if k, ok := model.ParseObjectKey(key); ok && k.Kind == kind {
			out = append(out, key)
		}
	}
	return out
}

func (h *Health) checkPods(t *model.Transition, ex excuses, fs *findingSet) {
	prevOperatorUIDs := map[string]bool{}
	if t.Prev != nil {
		for _, key := range objectsOfKind(t.Prev, "Pod") {
			if p := t.Prev.Objects[key]; h.isOperator(p) && uidOf(p) != "" {
				prevOperatorUIDs[uidOf(p)] = true
			}
		}
	}
	currOperatorUIDs := map[string]bool{}
	var operatorKeys []string
	for _, key := range objectsOfKind(t.Curr, "Pod") {
		pod := t.Curr.Objects[key]
		k, _ := model.ParseObjectKey(key)
		op := h.isOperator(pod)
		if op {
			currOperatorUIDs[uidOf(pod)] = true
			operatorKeys = append(operatorKeys, key)
		}
		var prev model.Object
		if t.Prev != nil {
			prev = t.Prev.Objects[key]
			if prev != nil && uidOf(prev) != uidOf(pod) {
				prev = nil // re-created: its counts start from zero
			}
		}
		prevRestarts := map[string]int{}
		for _, cs := range containerStatuses(prev) {
			prevRestarts[cs.name] = cs.restarts
		}
		excused := ex.covers(k.Name, op)
		for _, cs := range containerStatuses(pod) {
			delta := cs.restarts - prevRestarts[cs.name]
			crash := cs.waiting == "CrashLoopBackOff"
			if delta <= 0 && !crash {
				continue
			}
			if excused && (!crash || ex.active) {
				continue
			}
			ev := model.Evidence{Object: key, Path: cs.path + ".restartCount", Actual: cs.restarts}
			var details []string
			if delta > 0 {
				details = append(details, fmt.Sprintf("restartCount %d → %d", cs.restarts-delta, cs.restarts))
			}
			if cs.waiting != "" {
				details = append(details, "waiting: "+strings.TrimSpace(cs.waiting+" "+truncate(cs.message, 200)))
			}
			if cs.last != "" {
				details = append(details, "last terminated: "+cs.last)
			}
			ev.Detail = strings.Join(details, "; ")
			what := "restarted " + times(delta)
			if crash {
				what = "is crash-looping (CrashLoopBackOff)"
				if delta > 0 {
					what = fmt.Sprintf("is crash-looping (CrashLoopBackOff, restarted %s)", times(delta))
				}
			}
			if op {
				fs.add(model.Finding{
					Signature: model.Signature(NameHealth, "operator-restart"),
					Summary:   fmt.Sprintf("the operator restarted: container %s of pod %s %s", cs.name, k.Name, what),
					Evidence:  []model.Evidence{ev},
				})
				continue
			}
			stem := nameStem(pod, k.Name)
			fs.add(model.Finding{
				Signature: model.Signature(NameHealth, "container-restart", "Pod", stem, cs.name),
				Summary:   fmt.Sprintf("container %s of pod %s %s", cs.name, k.Name, what),
				Evidence:  []model.Evidence{ev},
			})
		}
	}
	if len(prevOperatorUIDs) > 0 && len(operatorKeys) > 0 && !ex.operator {
		survived := false
		for uid := range currOperatorUIDs {
			if prevOperatorUIDs[uid] {
				survived = true
			}
		}
		if !survived {
			fs.add(model.Finding{
				Severity:  model.SeverityWarning,
				Signature: model.Signature(NameHealth, "operator-replaced"),
				Summary:   "the operator's pod was replaced during the step (no fault targeted it)",
				Evidence:  []model.Evidence{{Object: operatorKeys[0], Detail: "no operator pod of the previous state is left"}},
			})
		}
	}
}

// controllerOf returns the kind and name of an object's controller owner.
func controllerOf(o model.Object) (kind, name string) {
	md := mapAt(o, "metadata")
	refs, _ := md["ownerReferences"].([]any)
	for _, r := range refs {
		m, _ := r.(map[string]any)
		if c, _ := m["controller"].(bool); c {
			kind, _ = m["kind"].(string)
			name, _ = m["name"].(string)
			return kind, name
		}
	}
	return "", ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func intAt(o model.Object, def int, keys ...string) int {
	m := mapAt(o, keys[:len(keys)-1]...)
	if n, ok := jsonv.AsFloat(m[keys[len(keys)-1]]); ok {
		return int(n)
	}
	return def
}

// checkWorkloads reports workloads and standalone pods that are not ready, and
// returns their summaries (for the timeout finding).
func (h *Health) checkWorkloads(t *model.Transition, ex excuses, fs *findingSet) []string {
	if ex.active {
		return nil
	}
	s := t.Curr
	var summaries []string
	// pods by controller "Kind/name"
	podsOf := map[string][]string{}
	rsOwner := map[string]string{} // ReplicaSet name -> Deployment name
	for _, key := range objectsOfKind(s, "ReplicaSet") {
		k, _ := model.ParseObjectKey(key)
		if ck, cn := controllerOf(s.Objects[key]); ck == "Deployment" {
			rsOwner[k.Namespace+"/"+k.Name] = cn
		}
	}
	var standalone []string
	for _, key := range objectsOfKind(s, "Pod") {
		k, _ := model.ParseObjectKey(key)
		ck, cn := controllerOf(s.Objects[key])
		switch ck {
		case "ReplicaSet":
			if d, ok := rsOwner[k.Namespace+"/"+cn]; ok {
				podsOf["Deployment/"+k.Namespace+"/"+d] = append(podsOf["Deployment/"+k.Namespace+"/"+d], key)
			} else {
				podsOf["ReplicaSet/"+k.Namespace+"/"+cn] = append(podsOf["ReplicaSet/"+k.Namespace+"/"+cn], key)
			}
		case "StatefulSet", "DaemonSet", "Job":
			podsOf[ck+"/"+k.Namespace+"/"+cn] = append(podsOf[ck+"/"+k.Namespace+"/"+cn], key)
		default:
			standalone = append(standalone, key)
		}
	}
	report := func(key, kind string, obj model.Object, what string, evidence []model.Evidence) {
		k, _ := model.ParseObjectKey(key)
		stem := nameStem(obj, k.Name)
		sum := fmt.Sprintf("%s %s is not ready after convergence: %s", kind, k.Name, what)
		summaries = append(summaries, sum)
		evidence = append(evidence, h.warningEvents(s, key, podsOf[kind+"/"+k.Namespace+"/"+k.Name])...)
		fs.add(model.Finding{
			Signature: model.Signature(NameHealth, "not-ready", kind, stem),
			Summary:   sum,
			Evidence:  evidence,
		})
	}
	podEvidence := func(keys []string) []model.Evidence {
		var out []model.Evidence
		for _, pk := range keys {
			for _, p := range readiness.Check("", "Pod", s.Objects[pk]) {
				if p.Short {
					out = append(out, model.Evidence{Object: pk, Path: p.Field, Expected: p.Want, Detail: p.Detail})
				}
			}
		}
		return out
	}
	for _, kind := range []string{"StatefulSet", "Deployment", "ReplicaSet", "DaemonSet", "Job", "Pod"} {
		keys := objectsOfKind(s, kind)
		if kind == "Pod" {
			keys = standalone
		}
		for _, key := range keys {
			obj := s.Objects[key]
			if kind == "ReplicaSet" {
				if ck, _ := controllerOf(obj); ck != "" {
					continue // judged through its Deployment
				}
			}
			k, _ := model.ParseObjectKey(key)
			var problems []string
			var ev []model.Evidence
			for _, p := range readiness.Check(k.Group, kind, obj) {
				if !p.Short {
					continue // a rollout still in progress: convergence waited for it
				}
				what := p.Message
				if kind == "Pod" {
					what = p.Detail // a standalone pod: its phase, Ready reason and waiting containers
				}
				problems = append(problems, what)
				ev = append(ev, model.Evidence{Object: key, Path: p.Field, Expected: p.Want, Actual: p.Got, Detail: p.Detail})
			}
			if len(problems) == 0 {
				continue
			}
			if kind != "Pod" && kind != "Job" {
				ev = append(ev, podEvidence(podsOf[kind+"/"+k.Namespace+"/"+k.Name])...)
			}
			report(key, kind, obj, strings.Join(problems, ", "), ev)
		}
	}
	return summaries
}

// warningEvents returns up to three Warning events about an object or its pods.
func (h *Health) warningEvents(s *model.Snapshot, key string, pods []string) []model.Evidence {
	about := map[string]bool{key: true}
	for _, p := range pods {
		about[p] = true
	}
	var out []model.Evidence
	seen := map[string]bool{}
	for _, e := range s.Events {
		if e.Type != "Warning" || !about[e.Object] {
			continue
		}
		d := e.Reason + ": " + truncate(e.Message, 300)
		if seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, model.Evidence{Object: e.Object, Detail: "event " + d})
		if len(out) == 3 {
			break
		}
	}
	return out
}

func (h *Health) checkCR(t *model.Transition, fs *findingSet) {
	cr := t.Curr.CRObject()
	if cr == nil {
		return
	}
	status := mapAt(cr, "status")
	gen := intAt(cr, 0, "metadata", "generation")
	conds, _ := status["conditions"].([]any)
	for i, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		st, _ := m["status"].(string)
		bad, ok := h.failConds[typ]
		if !ok || st != bad {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		detail := strings.TrimSpace(reason + ": " + msg)
		if og := intAt(m, 0, "observedGeneration"); og > 0 && gen > 0 && og < gen {
			detail += fmt.Sprintf(" (stale: observedGeneration %d < generation %d)", og, gen)
		}
		fs.add(model.Finding{
			Signature: model.Signature(NameHealth, "condition", typ, st, reason),
			Summary:   fmt.Sprintf("the %s reports condition %s=%s (%s)", stringAt(cr, "kind"), typ, st, orDefault(reason, "no reason")),
			Evidence: []model.Evidence{{
				Object: t.Curr.CR, Path: fmt.Sprintf("status.conditions[%d].status", i),
				Expected: oppositeStatus(bad), Actual: st, Detail: truncate(detail, 500),
			}},
		})
	}
	if phase, _ := status["phase"].(string); h.failPhases[phase] {
		fs.add(model.Finding{
			Signature: model.Signature(NameHealth, "phase", phase),
			Summary:   fmt.Sprintf("the %s reports phase %s", stringAt(cr, "kind"), phase),
			Evidence:  []model.Evidence{{Object: t.Curr.CR, Path: "status.phase", Actual: phase}},
		})
	}
}

func oppositeStatus(s string) string {
	switch s {
	case "True":
		return "False"
	case "False":
		return "True"
	}
	return "not " + s
}

func (h *Health) timeout(t *model.Transition, notReady []string, fs *findingSet) {
	st := t.Step
	var parts []string
	for _, c := range st.Changed {
		parts = append(parts, "changed:"+GeneralizePath(c))
	}
	for _, f := range st.Faults {
		parts = append(parts, "fault:"+f.Kind)
	}
	sort.Strings(parts)
	what := string(st.Kind)
	if len(st.Changed) > 0 {
		what += " changing " + strings.Join(limitStrings(st.Changed, 5), ", ")
	}
	kind, summary, end := "timeout", "convergence timeout: the system kept changing or never became ready after ", "no convergence before the timeout"
	if st.Stuck {
		kind, summary, end = "stuck", "stuck: nothing readiness depends on changed for the stuck window after ", "no progress towards readiness for the stuck window"
	}
	ev := []model.Evidence{{Detail: fmt.Sprintf("started %s, %s", st.Started.Format("15:04:05.000"), end)}}
	if cr := t.Curr.CRObject(); cr != nil {
		status := mapAt(cr, "status")
		if phase, _ := status["phase"].(string); phase != "" {
			ev = append(ev, model.Evidence{Object: t.Curr.CR, Path: "status.phase", Actual: phase})
		}
		gen, og := intAt(cr, 0, "metadata", "generation"), intAt(cr, 0, "status", "observedGeneration")
		if gen > 0 && og < gen {
			ev = append(ev, model.Evidence{Object: t.Curr.CR, Path: "status.observedGeneration", Expected: gen, Actual: og})
		}
	}
	for _, s := range notReady {
		ev = append(ev, model.Evidence{Detail: s})
	}
	fs.add(model.Finding{
		Signature: model.Signature(NameHealth, append([]string{kind, string(st.Kind)}, parts...)...),
		Summary:   summary + what,
		Evidence:  ev,
	})
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func limitStrings(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string(nil), s[:n]...), fmt.Sprintf("… (%d more)", len(s)-n))
}

// Log scanning.

var (
	panicRE     = regexp.MustCompile(`\bpanic: |Observed a panic`)
	fatalRE     = regexp.MustCompile(`\bfatal error: `)
	goroutineRE = regexp.MustCompile(`goroutine \d+ \[running\]`)
)

type logEvent struct {
	kind    string // "panic", "fatal" or "log"
	message string // for the summary
	sigMsg  string // normalized, for the signature
	frame   string // first frame outside the runtime and recovery code
	lines   []string
	stack   bool // a goroutine header was seen
	pattern string
}

func (h *Health) checkLog(log, ns string, fs *findingSet) {
	for _, e := range scanLog(log, h.patterns) {
		e.sigMsg = normMessage(e.message, ns)
		detail := strings.Join(limitLines(e.lines, 16), "\n")
		var f model.Finding
		switch e.kind {
		case "log":
			f = model.Finding{
				Signature: model.Signature(NameHealth, "log", e.pattern, e.sigMsg),
				Summary:   "operator log: " + truncate(e.message, 200),
			}
		default:
			what := "panicked"
			if e.kind == "fatal" {
				what = "hit a fatal error"
			}
			sum := fmt.Sprintf("the operator %s: %s", what, truncate(e.message, 200))
			if e.frame != "" {
				sum += " (in " + e.frame + ")"
			}
			f = model.Finding{Signature: model.Signature(NameHealth, e.kind, e.sigMsg, e.frame), Summary: sum}
		}
		f.Evidence = []model.Evidence{{Detail: "operator log:\n" + detail}}
		fs.add(f)
	}
}

func limitLines(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(append([]string(nil), l[:n]...), fmt.Sprintf("… (%d more lines)", len(l)-n))
}

// scanLog finds panics, fatal errors and pattern matches in an operator log.
func scanLog(log string, patterns []*regexp.Regexp) []logEvent {
	if log == "" {
		return nil
	}
	var out []logEvent
	var cur *logEvent
	closeEv := func() {
		if cur != nil {
			if cur.frame == "" {
				cur.frame = topFrame(cur.lines)
			}
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimRight(line, "\r")
		isPanic, isFatal := panicRE.MatchString(line), fatalRE.MatchString(line)
		if isPanic || isFatal {
			if cur != nil && !cur.stack && len(cur.lines) < 8 {
				cur.lines = append(cur.lines, line) // "panic: x [recovered]\n\tpanic: x"
				continue
			}
			closeEv()
			kind := "panic"
			if isFatal && !isPanic {
				kind = "fatal"
			}
			msg, stack := logMessage(line)
			cur = &logEvent{kind: kind, message: msg, lines: []string{line}}
			if stack != "" {
				cur.lines = append(cur.lines, strings.Split(stack, "\n")...)
				cur.stack = true
				cur.frame = topFrame(cur.lines)
				closeEv()
			}
			continue
		}
		if goroutineRE.MatchString(line) {
			if cur == nil {
				cur = &logEvent{kind: "panic", message: strings.TrimSpace(line)}
			} else if cur.stack {
				// another goroutine's stack of the same dump
				cur.lines = append(cur.lines, line)
				continue
			}
			cur.stack = true
			cur.lines = append(cur.lines, line)
			continue
		}
		if cur != nil {
			// Before the goroutine header: a few lines ("[signal ...]", a blank
			// line); after it: the frames, up to a blank line.
			switch {
			case !cur.stack && len(cur.lines) < 4,
				cur.stack && strings.TrimSpace(line) != "" && len(cur.lines) < 200:
				cur.lines = append(cur.lines, line)
				continue
			}
			closeEv()
		}
		for _, re := range patterns {
			if re.MatchString(line) {
				msg, _ := logMessage(line)
				out = append(out, logEvent{kind: "log", message: msg, lines: []string{line}, pattern: re.String()})
				break
			}
		}
	}
	closeEv()
	return out
}

// logMessage extracts the message of a log line: for a JSON line, its panic,
// error or msg field (and its stacktrace); otherwise the text from "panic: " or
// "fatal error: " on, or the line.
func logMessage(line string) (msg, stack string) {
	t := strings.TrimSpace(line)
	if i := strings.IndexByte(t, '{'); i >= 0 && strings.HasSuffix(t, "}") {
		var m map[string]any
		if json.Unmarshal([]byte(t[i:]), &m) == nil {
			for _, k := range []string{"panic", "error", "err", "msg", "message"} {
				if s, ok := m[k].(string); ok && s != "" {
					msg = s
					break
				}
			}
			stack, _ = m["stacktrace"].(string)
			if msg != "" {
				return msg, stack
			}
		}
	}
	for _, p := range []string{"panic: ", "fatal error: "} {
		if i := strings.Index(t, p); i >= 0 {
			return strings.TrimSuffix(strings.TrimSpace(t[i+len(p):]), " [recovered]"), ""
		}
	}
	return t, ""
}

// topFrame returns the first function of a goroutine stack that is not the
// runtime's, a panic handler's or a recovering deferred function, without its
// arguments.
func topFrame(lines []string) string {
	in := false
	for _, l := range lines {
		if goroutineRE.MatchString(l) {
			in = true
			continue
		}
		if !in || l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, " ") {
			continue
		}
		if strings.HasPrefix(l, "created by ") {
			return ""
		}
		fn := l
		if i := strings.LastIndexByte(fn, '('); i > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:i]
		}
		switch {
		case strings.HasPrefix(fn, "panic"), strings.HasPrefix(fn, "runtime."), strings.HasPrefix(fn, "runtime/debug."),
			strings.Contains(fn, "/util/runtime."), strings.Contains(fn, "controller-runtime/pkg/internal/controller.") && strings.Contains(fn, ".func"):
			continue
		}
		return fn
	}
	return ""
}
