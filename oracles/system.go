package oracles

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// SystemState checks S ⊨ D inside the managed system (docs/architecture.md §3, "system
// state"), on the system monitor's reading at snapshot time (Curr.System) of a
// step that converged:
//
//   - every member is reachable (one finding lists those that are not, with the
//     monitor's error);
//   - the effective configuration of every reachable member equals the desired
//     state's configuration map (Config.SystemConfigPath): one finding per key
//     whose value differs on some member, one per key the server does not know
//     (the monitor's Member.Config lacks it: CONFIG GET returned nothing). Values
//     are compared as strings with the servers' well-known equivalences: memory
//     sizes ("100mb" is reported as "104857600"; ParseSize), enum words in any
//     case, notify-keyspace-events flags in any order, client-output-buffer-limit
//     classes; members whose configuration was not read (nil Config) are skipped,
//     and so are keys under a Config.Skip pattern (keys a server reports in
//     its own way that no rule here knows);
//   - exactly one reachable member reports the primary role (none, or several
//     with their pods, is a finding), and no member reports a role other than
//     primary or replica;
//   - every reachable replica follows the primary (the host of Member.Follows is
//     the primary's address host, its pod name or a DNS name under it; ports are
//     compared too when several members share a host) with its link up;
//   - the client Service (SystemSample.Service, when monitored) selects exactly
//     the primary's pod;
//   - the primary stays the same member through the stability window (the System
//     readings of Transition.Stability): a failover after convergence, with D
//     unchanged, is a reconciliation that did not settle.
//
// Timed-out steps are not judged (health reports the timeout). Faults (docs/architecture.md
// §2, OAT's fault strategies): while a persistent fault is still in place, the
// members it targets are left out (a fault that targets a role rather than a
// pod leaves every member out, and nothing is judged); once every fault of the
// step was removed, what their effect left behind (a member still unreachable,
// no primary, a replica left unlinked) is what Eventually Stable Reconciliation
// forbids: the findings say so, list the faults, and their signatures carry the
// fault kinds. No separate oracle repeats these checks for fault steps.
//
// Create it with NewSystemState.
type SystemState struct {
	configPath jsonv.Path
	skip       []jsonv.Path
}

// NewSystemState returns the system-state oracle configured by cfg.
func NewSystemState(cfg Config) *SystemState {
	p, err := jsonv.ParsePath(orDefault(cfg.SystemConfigPath, DefaultSystemConfigPath))
	if err != nil {
		p = jsonv.MustPath(DefaultSystemConfigPath)
	}
	return &SystemState{configPath: p, skip: compilePaths(cfg.Skip)}
}

// Name is "system-state".
func (s *SystemState) Name() string { return NameSystemState }

// Check judges t.Curr.System (and the System readings of t.Stability).
func (s *SystemState) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Curr == nil || t.Curr.System == nil || ctx.Err() != nil {
		return nil
	}
	if t.Step != nil && t.Step.Unconverged() {
		return nil
	}
	fc := newFaultContext(t.Step)
	if fc.all {
		return nil
	}
	j := &systemJudge{
		fs:   newFindingSet(NameSystemState),
		fc:   fc,
		pods: podKeys(t.Curr),
		smp:  t.Curr.System,
	}
	var reachable []model.Member
	var unreachable []model.Member
	for _, m := range j.smp.Members {
		if fc.pods[m.Pod] {
			continue
		}
		switch {
		case m.Reachable:
			reachable = append(reachable, m)
		case m.Unreachable == model.UnreachableNoCredentials:
			// Not dialled: the desired state names a Secret that does not
			// exist, so the monitor had nothing to connect with (a step the
			// campaign labels a misoperation); nothing is known of the server.
		default:
			unreachable = append(unreachable, m)
		}
	}
	j.unreachable(unreachable, len(j.smp.Members))
	s.config(t, j, reachable)
	primary, ok := j.topology(reachable)
	if ok {
		j.service(primary)
		j.settled(t, primary)
	}
	return j.fs.list()
}

// systemJudge collects the findings of one system-state check.
type systemJudge struct {
	fs   *findingSet
	fc   faultContext
	pods map[string]string // "Pod/name" and "Service/name" → object key in Curr
	smp  *model.SystemSample
}

// add stamps a finding with the fault context: after removed faults, the
// summary says so, the evidence lists the faults and the signature their kinds.
func (j *systemJudge) add(f model.Finding, parts ...string) {
	if len(j.fc.removed) > 0 {
		f.Summary += " after the step's faults were removed (" + j.fc.what() + ")"
		parts = append(parts, j.fc.kinds()...)
		f.Evidence = append(f.Evidence, j.fc.evidence()...)
	}
	f.Signature = model.Signature(NameSystemState, parts...)
	j.fs.add(f)
}

func (j *systemJudge) memberEvidence(m model.Member, path string, expected, actual any, detail string) model.Evidence {
	return model.Evidence{Object: j.pods["Pod/"+m.Pod], Path: path, Expected: expected, Actual: actual, Detail: detail}
}

func (j *systemJudge) unreachable(ms []model.Member, total int) {
	if len(ms) == 0 {
		return
	}
	var names []string
	var ev []model.Evidence
	for _, m := range ms {
		names = append(names, m.Pod)
		ev = append(ev, j.memberEvidence(m, "", nil, nil, fmt.Sprintf("%s at %s: %s", m.Pod, orDefault(m.Address, "no address"), orDefault(m.Error, "unreachable"))))
	}
	j.add(model.Finding{
		Summary:  fmt.Sprintf("%d of %d members unreachable after convergence: %s", len(ms), total, strings.Join(limitStrings(names, 5), ", ")),
		Evidence: ev,
	}, "unreachable")
}

// config compares every reachable member's effective configuration with the
// desired state's configuration map.
func (s *SystemState) config(t *model.Transition, j *systemJudge, members []model.Member) {
	desired := t.Desired
	if desired == nil && t.Step != nil {
		desired = t.Step.Desired
	}
	raw, ok := jsonv.GetPath(desired, s.configPath)
	if !ok {
		return
	}
	want, ok := raw.(map[string]any)
	if !ok || len(want) == 0 {
		return
	}
	for _, key := range sortedKeys(want) {
		w, ok := scalarString(want[key])
		if !ok {
			continue // a structure or null: not a configuration value
		}
		kp := s.configPath.Child(key)
		if s.skipped(kp) {
			continue
		}
		path := kp.String()
		var wrong, unknown []model.Evidence
		var wrongPods, unknownPods []string
		actual := map[string]bool{}
		for _, m := range members {
			if m.Config == nil {
				continue
			}
			got, found := configValue(m.Config, key)
			switch {
			case !found:
				unknown = append(unknown, j.memberEvidence(m, path, w, nil, fmt.Sprintf("%s: CONFIG GET %s returned nothing", m.Pod, key)))
				unknownPods = append(unknownPods, m.Pod)
			case !configEquivalent(key, w, got):
				wrong = append(wrong, j.memberEvidence(m, path, w, got, fmt.Sprintf("%s: CONFIG GET %s is %q", m.Pod, key, got)))
				wrongPods = append(wrongPods, m.Pod)
				actual[got] = true
			}
		}
		if len(wrong) > 0 {
			vals := sortedKeys(actual)
			j.add(model.Finding{
				Summary:  fmt.Sprintf("effective config %s is %s on %s, want %q (%s)", key, quoteAll(limitStrings(vals, 3)), memberList(wrongPods, len(members)), w, path),
				Evidence: wrong,
			}, "config-mismatch", path)
		}
		if len(unknown) > 0 {
			j.add(model.Finding{
				Summary:  fmt.Sprintf("config key %s (%s) is unknown to the server on %s: CONFIG GET returned nothing", key, path, memberList(unknownPods, len(members))),
				Evidence: unknown,
			}, "config-unknown-key", path)
		}
	}
}

func (s *SystemState) skipped(p jsonv.Path) bool {
	for _, pat := range s.skip {
		if jsonv.Match(pat, p, true) {
			return true
		}
	}
	return false
}

// configValue looks key up in a member's configuration, exactly first, then
// ignoring case (servers' configuration keys are case-insensitive).
func configValue(cfg map[string]string, key string) (string, bool) {
	if v, ok := cfg[key]; ok {
		return v, true
	}
	for _, k := range sortedKeys(cfg) {
		if strings.EqualFold(k, key) {
			return cfg[k], true
		}
	}
	return "", false
}

// topology checks the roles of the reachable members; ok is true with the one
// primary when there is exactly one.
func (j *systemJudge) topology(members []model.Member) (primary model.Member, ok bool) {
	if len(members) == 0 {
		return model.Member{}, false
	}
	var prims, replicas, odd []model.Member
	for _, m := range members {
		switch m.Role {
		case model.RolePrimary:
			prims = append(prims, m)
		case model.RoleReplica:
			replicas = append(replicas, m)
		default:
			odd = append(odd, m)
		}
	}
	if len(odd) > 0 {
		var ev []model.Evidence
		var names []string
		for _, m := range odd {
			names = append(names, m.Pod)
			ev = append(ev, j.memberEvidence(m, "role", "primary or replica", orDefault(m.Role, "none"), fmt.Sprintf("%s at %s reports role %q", m.Pod, m.Address, m.Role)))
		}
		j.add(model.Finding{
			Summary:  fmt.Sprintf("members reporting no replication role after convergence: %s", memberList(names, len(members))),
			Evidence: ev,
		}, "role-unknown")
	}
	switch len(prims) {
	case 0:
		var ev []model.Evidence
		for _, m := range members {
			ev = append(ev, j.memberEvidence(m, "role", model.RolePrimary, orDefault(m.Role, "none"), describeMember(m)))
		}
		j.add(model.Finding{
			Summary:  fmt.Sprintf("no primary after convergence: none of the %s reports the primary role", plural(len(members), "reachable member")),
			Evidence: ev,
		}, "no-primary")
		return model.Member{}, false
	case 1:
	default:
		var names []string
		var ev []model.Evidence
		for _, m := range prims {
			names = append(names, m.Pod)
			ev = append(ev, j.memberEvidence(m, "role", nil, model.RolePrimary, describeMember(m)))
		}
		j.add(model.Finding{
			Summary:  fmt.Sprintf("%d primaries after convergence: %s report the primary role", len(prims), andList(names)),
			Evidence: ev,
		}, "several-primaries")
		return model.Member{}, false
	}
	p := prims[0]
	var other, down []model.Evidence
	var otherPods, downPods []string
	for _, r := range replicas {
		switch {
		case !follows(r.Follows, p, j.smp.Members):
			otherPods = append(otherPods, r.Pod)
			other = append(other, j.memberEvidence(r, "follows", p.Address, orDefault(r.Follows, "nothing"),
				fmt.Sprintf("%s replicates from %s, not from the primary %s at %s", r.Pod, orDefault(r.Follows, "nothing"), p.Pod, p.Address)))
		case !r.LinkUp:
			downPods = append(downPods, r.Pod)
			down = append(down, j.memberEvidence(r, "linkUp", true, false,
				fmt.Sprintf("%s follows the primary %s (%s) but its replication link is down (offset %d, primary's %d)", r.Pod, p.Pod, r.Follows, r.Offset, p.Offset)))
		}
	}
	if len(other) > 0 {
		j.add(model.Finding{
			Summary:  fmt.Sprintf("replicas not following the primary %s after convergence: %s", p.Pod, memberList(otherPods, len(replicas))),
			Evidence: other,
		}, "replica-not-following-primary")
	}
	if len(down) > 0 {
		j.add(model.Finding{
			Summary:  fmt.Sprintf("replication link to the primary %s down after convergence: %s", p.Pod, memberList(downPods, len(replicas))),
			Evidence: down,
		}, "replica-link-down")
	}
	return p, true
}

// service checks that the client Service selects exactly the primary.
func (j *systemJudge) service(p model.Member) {
	if j.smp.Service == "" {
		return
	}
	selected := podNames(j.smp.Selected)
	hasPrimary := slices.Contains(selected, p.Pod)
	var extra []string
	for _, s := range selected {
		if s != p.Pod {
			extra = append(extra, s)
		}
	}
	if hasPrimary && len(extra) == 0 {
		return
	}
	var parts []string
	if !hasPrimary {
		parts = append(parts, "service-misses-primary")
	}
	if len(extra) > 0 {
		parts = append(parts, "service-selects-non-primary")
	}
	sel := "no pod"
	if len(selected) > 0 {
		sel = strings.Join(selected, ", ")
	}
	var why string
	switch {
	case !hasPrimary && len(extra) > 0:
		why = fmt.Sprintf("client Service %s selects %s instead of the primary %s", j.smp.Service, sel, p.Pod)
	case !hasPrimary:
		why = fmt.Sprintf("client Service %s selects no pod; the primary is %s", j.smp.Service, p.Pod)
	default:
		why = fmt.Sprintf("client Service %s selects %s besides the primary %s", j.smp.Service, strings.Join(extra, ", "), p.Pod)
	}
	ev := []model.Evidence{{
		Object: serviceKey(j.pods, j.smp.Service), Path: "endpoints", Expected: []string{p.Pod}, Actual: selected,
		Detail: why,
	}}
	for _, m := range j.smp.Members {
		if slices.Contains(extra, m.Pod) {
			ev = append(ev, j.memberEvidence(m, "role", nil, orDefault(m.Role, "none"), describeMember(m)))
		}
	}
	j.add(model.Finding{
		Summary:  fmt.Sprintf("client Service %s selects %s after convergence, want exactly the primary %s", j.smp.Service, sel, p.Pod),
		Evidence: ev,
	}, parts...)
}

// settled checks that the primary stays the same through the stability window.
func (j *systemJudge) settled(t *model.Transition, p model.Member) {
	seq := []string{p.Pod}
	var when []time.Time
	changes := 0
	for _, st := range t.Stability {
		if st == nil || st.System == nil {
			continue
		}
		var names []string
		for _, m := range st.System.Primaries() {
			if !j.fc.pods[m.Pod] {
				names = append(names, m.Pod)
			}
		}
		sort.Strings(names)
		cur := strings.Join(names, "+")
		if cur == "" {
			cur = "none"
		}
		if cur != seq[len(seq)-1] {
			changes++
			seq = append(seq, cur)
			when = append(when, st.System.Taken)
		}
	}
	if changes == 0 {
		return
	}
	ev := []model.Evidence{{
		Path: "primary", Expected: p.Pod, Actual: seq[len(seq)-1],
		Detail: fmt.Sprintf("primary at convergence %s, then %s (first change in the reading taken %s)", p.Pod, strings.Join(limitStrings(seq[1:], 8), " → "), when[0].Format("15:04:05.000")),
	}}
	j.add(model.Finding{
		Summary:  fmt.Sprintf("the primary did not stay put after convergence: %s (changed %s during the stability window)", strings.Join(limitStrings(seq, 8), " → "), times(changes)),
		Evidence: ev,
	}, "primary-changed-after-convergence")
}

// faultContext is what a step's faults mean for the system state reached.
type faultContext struct {
	// all: a persistent fault still in place targets a role, not a pod.
	all bool
	// pods: pods a persistent fault still in place targets.
	pods map[string]bool
	// removed: the step's injected faults when every one of them was removed.
	removed []model.Fault
}

func newFaultContext(s *model.Step) faultContext {
	fc := faultContext{pods: map[string]bool{}}
	if s == nil {
		return fc
	}
	var injected []model.Fault
	active := false
	for _, f := range s.Faults {
		if f.Unsupported != "" {
			continue
		}
		injected = append(injected, f)
		if !f.Persistent || !f.Removed.IsZero() {
			continue
		}
		active = true
		if strings.HasPrefix(f.Kind, "operator") && len(f.Targets) == 0 {
			continue // the operator's own fault leaves the members alone
		}
		for _, tg := range f.Targets {
			switch {
			case tg == "operator":
			case isPodTarget(tg):
				fc.pods[tg[strings.LastIndexByte(tg, '/')+1:]] = true
			default:
				fc.all = true
			}
		}
		if len(f.Targets) == 0 {
			fc.all = true
		}
	}
	if !active {
		fc.removed = injected
	}
	return fc
}

// isPodTarget tells a pod name (possibly namespace/name) from a role such as
// "primary" (the same rule as Health's excuses).
func isPodTarget(tg string) bool {
	return strings.Contains(tg, "/") || strings.Contains(tg, "-") || strings.ContainsAny(tg, "0123456789")
}

func (fc faultContext) kinds() []string {
	var out []string
	for _, f := range fc.removed {
		k := "fault:" + f.Kind
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func (fc faultContext) what() string {
	var out []string
	for _, f := range fc.removed {
		w := f.Kind
		if len(f.Targets) > 0 {
			w += " " + strings.Join(f.Targets, ",")
		}
		out = append(out, w)
	}
	return strings.Join(limitStrings(out, 3), "; ")
}

func (fc faultContext) evidence() []model.Evidence {
	var out []model.Evidence
	for _, f := range fc.removed {
		d := fmt.Sprintf("fault %s on %s injected %s", f.Kind, orDefault(strings.Join(f.Targets, ","), "the system"), f.Injected.Format("15:04:05.000"))
		if !f.Removed.IsZero() {
			d += ", removed " + f.Removed.Format("15:04:05.000")
		}
		out = append(out, model.Evidence{Detail: d})
	}
	return out
}

// follows reports whether a replica's Follows address (host:port as the server
// reports it) designates member p: the host is p's address host (IP addresses
// compared as IPs), p's pod name, or a DNS name under it (cache-0.cache-headless…).
// When several members share p's address host, the ports must agree too.
func follows(addr string, p model.Member, members []model.Member) bool {
	fh, fp := splitHostPort(addr)
	if fh == "" {
		return false
	}
	lh := strings.ToLower(fh)
	pod := strings.ToLower(p.Pod)
	if pod != "" && (lh == pod || strings.HasPrefix(lh, pod+".")) {
		return true
	}
	ph, pp := splitHostPort(p.Address)
	if ph == "" || !sameHost(fh, ph) {
		return false
	}
	for _, m := range members {
		if m.Pod == p.Pod {
			continue
		}
		if mh, _ := splitHostPort(m.Address); mh != "" && sameHost(mh, ph) {
			return fp != "" && fp == pp // a shared host: only the port tells members apart
		}
	}
	return true
}

func splitHostPort(a string) (host, port string) {
	a = strings.TrimSpace(a)
	if h, p, err := net.SplitHostPort(a); err == nil {
		return h, p
	}
	return strings.Trim(a, "[]"), ""
}

func sameHost(a, b string) bool {
	if ia, ib := net.ParseIP(a), net.ParseIP(b); ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}

// describeMember renders what a monitor saw of a member.
func describeMember(m model.Member) string {
	if !m.Reachable {
		return fmt.Sprintf("%s at %s: unreachable: %s", m.Pod, orDefault(m.Address, "no address"), orDefault(m.Error, "no answer"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s: role %s", m.Pod, orDefault(m.Address, "no address"), orDefault(m.Role, "none"))
	switch m.Role {
	case model.RolePrimary:
		fmt.Fprintf(&b, ", %s connected, offset %d", plural(m.Replicas, "replica"), m.Offset)
	case model.RoleReplica:
		link := "down"
		if m.LinkUp {
			link = "up"
		}
		fmt.Fprintf(&b, " of %s, link %s, offset %d", orDefault(m.Follows, "nothing"), link, m.Offset)
	}
	return b.String()
}

// podKeys maps "Pod/name" and "Service/name" to the objects' keys in s.
func podKeys(s *model.Snapshot) map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for key := range s.Objects {
		if k, ok := model.ParseObjectKey(key); ok && (k.Kind == "Pod" || k.Kind == "Service") && k.Group == "" {
			out[k.Kind+"/"+k.Name] = key
		}
	}
	return out
}

func serviceKey(keys map[string]string, name string) string { return keys["Service/"+name] }

// podNames strips namespaces ("ns/name" → "name"), sorted, without duplicates.
func podNames(l []string) []string {
	var out []string
	for _, s := range l {
		n := s[strings.LastIndexByte(s, '/')+1:]
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// memberList renders "cache-1", "cache-1 (1 of 3 members)" or "2 of 3 members (cache-1, cache-2)".
func memberList(pods []string, of int) string {
	if len(pods) == 1 && of <= 1 {
		return pods[0]
	}
	if len(pods) == 1 {
		return fmt.Sprintf("%s (1 of %d members)", pods[0], of)
	}
	return fmt.Sprintf("%d of %d members (%s)", len(pods), of, strings.Join(limitStrings(pods, 5), ", "))
}

func quoteAll(l []string) string {
	out := make([]string, len(l))
	for i, s := range l {
		if strings.HasPrefix(s, "…") {
			out[i] = s
			continue
		}
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, " or ")
}
