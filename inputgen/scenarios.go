package inputgen

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Core type names semantic scenarios key on.
const (
	typeAffinity           = "k8s.io/api/core/v1.Affinity"
	typeResources          = "k8s.io/api/core/v1.ResourceRequirements"
	typeVolumeResources    = "k8s.io/api/core/v1.VolumeResourceRequirements"
	typePodSecurityContext = "k8s.io/api/core/v1.PodSecurityContext"
	typeSecurityContext    = "k8s.io/api/core/v1.SecurityContext"
)

// scenariosFor lists the semantic scenarios that apply to p.
func (g *Generator) scenariosFor(p *crd.Property) []namedGen {
	s := p.Semantic
	if s == nil {
		return nil
	}
	var out []namedGen
	switch {
	case s.Hint == semantic.HintReplicas && p.Type == crd.TypeInteger:
		out = append(out,
			namedGen{"replicas/scale-up-down", genScaleUpDown},
			namedGen{"replicas/scale-down-up", genScaleDownUp},
			namedGen{"replicas/beyond-capacity", genBeyondCapacity},
		)
	case s.Hint == semantic.HintStorageSize:
		out = append(out, storageScenarios(false)...)
	case s.Hint == semantic.HintImage || s.Hint == semantic.HintVersion:
		prefix := s.Hint
		out = append(out,
			namedGen{prefix + "/upgrade", func(c *caseCtx) (*draft, error) { return genVersionMove(c, prefix+"/upgrade", true) }},
			namedGen{prefix + "/downgrade", func(c *caseCtx) (*draft, error) { return genVersionMove(c, prefix+"/downgrade", false) }},
		)
	}
	switch s.Type {
	case typeAffinity:
		out = append(out,
			namedGen{"affinity/colocate", genAffinityColocate},
			namedGen{"affinity/spread", genAffinitySpread},
			namedGen{"affinity/unsatisfiable", genAffinityUnsatisfiable},
		)
	case typeResources:
		out = append(out,
			namedGen{"resources/raise", func(c *caseCtx) (*draft, error) { return genResources(c, "raise") }},
			namedGen{"resources/lower", func(c *caseCtx) (*draft, error) { return genResources(c, "lower") }},
			namedGen{"resources/requests-above-limits", func(c *caseCtx) (*draft, error) { return genResources(c, "above") }},
		)
	case typePodSecurityContext, typeSecurityContext:
		out = append(out,
			namedGen{"security-context/privileged", func(c *caseCtx) (*draft, error) { return genSecurity(c, true) }},
			namedGen{"security-context/restricted", func(c *caseCtx) (*draft, error) { return genSecurity(c, false) }},
		)
	}
	if p.IsMap() && p.Name() == "requests" && p.Parent != nil && p.Parent.Semantic != nil && p.Parent.Semantic.Type == typeVolumeResources {
		out = append(out, storageScenarios(true)...)
	}
	return out
}

// --- replicas ---

// replicaBase returns the effective replica count and the schema's bounds.
func replicaBase(c *caseCtx, eff any) (base, lo, hi int64, bounded bool) {
	lo, hi = intBounds(c.p)
	bounded = c.p.Maximum != nil
	if !bounded {
		hi = 1 << 31
	}
	if n, ok := jsonv.AsInt(eff); ok {
		base = n
	} else {
		base = max(lo, 1)
		if base > hi {
			base = lo
		}
	}
	return base, lo, hi, bounded
}

// twoSteps draws a state where p = first, then one where p = second.
func (c *caseCtx) twoSteps(first, second func(eff any) (any, error)) ([]map[string]any, []any, error) {
	s1 := jsonv.CopyMap(c.start)
	ptr, _, _, eff, err := c.locate(s1)
	if err != nil {
		return nil, nil, err
	}
	v1, err := first(eff)
	if err != nil {
		return nil, nil, err
	}
	if err := jsonv.Set(s1, ptr, v1); err != nil {
		return nil, nil, err
	}
	v2, err := second(eff)
	if err != nil {
		return nil, nil, err
	}
	s2 := jsonv.CopyMap(s1)
	if err := jsonv.Set(s2, ptr, v2); err != nil {
		return nil, nil, err
	}
	return []map[string]any{s1, s2}, []any{v1, v2}, nil
}

func genScaleUpDown(c *caseCtx) (*draft, error) {
	var base int64
	steps, vals, err := c.twoSteps(func(eff any) (any, error) {
		b, _, hi, _ := replicaBase(c, eff)
		base = b
		up := min(b+2, hi)
		if up <= b {
			return nil, errSkip
		}
		return up, nil
	}, func(any) (any, error) { return base, nil })
	if err != nil {
		return nil, err
	}
	return &draft{label: Valid, steps: steps,
		description: fmt.Sprintf("scale %s up from %d to %v, then back down to %d", c.p.Path, base, vals[0], base),
		stepDescs:   []string{fmt.Sprintf("scale up to %v", vals[0]), fmt.Sprintf("scale down to %d", base)},
	}, nil
}

func genScaleDownUp(c *caseCtx) (*draft, error) {
	var base int64
	steps, vals, err := c.twoSteps(func(eff any) (any, error) {
		b, lo, _, _ := replicaBase(c, eff)
		base = b
		down := max(lo, 1)
		if down >= b {
			return nil, errSkip
		}
		return down, nil
	}, func(any) (any, error) { return base, nil })
	if err != nil {
		return nil, err
	}
	return &draft{label: Valid, steps: steps,
		description: fmt.Sprintf("scale %s down from %d to %v, then back up to %d", c.p.Path, base, vals[0], base),
		stepDescs:   []string{fmt.Sprintf("scale down to %v", vals[0]), fmt.Sprintf("scale up to %d", base)},
	}, nil
}

// beyondCapacity is a replica count no small test cluster holds.
const beyondCapacity = 1000

func genBeyondCapacity(c *caseCtx) (*draft, error) {
	var target int64
	st, _, err := c.setValue(func(eff any, _ bool) (any, error) {
		b, _, hi, bounded := replicaBase(c, eff)
		target = beyondCapacity
		if bounded {
			if hi < 20 {
				return nil, errSkip
			}
			target = min(hi, beyondCapacity)
		}
		if target <= b {
			return nil, errSkip
		}
		return target, nil
	})
	if err != nil {
		return nil, err
	}
	return single(Misoperation, fmt.Sprintf("scale %s to %d, beyond the cluster's capacity", c.p.Path, target), st), nil
}

// --- storage ---

func storageScenarios(requestsMap bool) []namedGen {
	return []namedGen{
		{"storage/grow", func(c *caseCtx) (*draft, error) { return genStorage(c, "grow", requestsMap) }},
		{"storage/shrink", func(c *caseCtx) (*draft, error) { return genStorage(c, "shrink", requestsMap) }},
		{"storage/exceed", func(c *caseCtx) (*draft, error) { return genStorage(c, "exceed", requestsMap) }},
	}
}

// exceedStorage is more storage than any test node offers.
const exceedStorage = "64Ti"

// genStorage grows, shrinks or over-asks a storage size. When no size is set yet, it first sets
// one (two steps), so the move is always from an explicit size.
func genStorage(c *caseCtx, mode string, requestsMap bool) (*draft, error) {
	s0 := jsonv.CopyMap(c.start)
	ptr, _, had, eff, err := c.locate(s0)
	if err != nil {
		return nil, err
	}
	if requestsMap {
		m, _ := eff.(map[string]any)
		if !had {
			if err := jsonv.Set(s0, ptr, map[string]any{}); err != nil {
				return nil, err
			}
		}
		ptr += "/storage"
		eff, had = nil, false
		if v, ok := m["storage"]; ok {
			eff, had = v, true
		}
	}
	asInt := c.p.Type == crd.TypeInteger
	format := func(q string) any {
		if asInt {
			qq, err := resource.ParseQuantity(q)
			if err == nil {
				return qq.Value()
			}
		}
		return q
	}
	var steps []map[string]any
	var descs []string
	from := eff
	if from == nil {
		from = format("2Gi")
		if mode == "grow" {
			from = format("1Gi")
		}
		s1 := jsonv.CopyMap(s0)
		if err := jsonv.Set(s1, ptr, from); err != nil {
			return nil, err
		}
		steps = append(steps, s1)
		descs = append(descs, fmt.Sprintf("set storage to %v", from))
	}
	var to any
	label := Valid
	switch mode {
	case "grow":
		q, err := scaleQuantity(from, 2, 1)
		if err != nil {
			return nil, err
		}
		to = format(q)
	case "shrink":
		q, err := scaleQuantity(from, 1, 2)
		if err != nil {
			return nil, err
		}
		to = format(q)
		label = Misoperation
	case "exceed":
		to = format(exceedStorage)
		label = Misoperation
	}
	if jsonv.Equal(to, from) {
		return nil, errSkip
	}
	prev := s0
	if len(steps) > 0 {
		prev = steps[0]
	}
	s2 := jsonv.CopyMap(prev)
	if err := jsonv.Set(s2, ptr, to); err != nil {
		return nil, err
	}
	steps = append(steps, s2)
	descs = append(descs, fmt.Sprintf("%s storage from %v to %v", mode, from, to))
	desc := map[string]string{
		"grow":   "grow storage %s from %v to %v",
		"shrink": "shrink storage %s from %v to %v (volumes cannot shrink)",
		"exceed": "ask %s for more storage than available: %v to %v",
	}[mode]
	_ = had
	return &draft{label: label, steps: steps, stepDescs: descs, description: fmt.Sprintf(desc, ptr, from, to)}, nil
}

// --- affinity ---

func (c *caseCtx) podLabels() map[string]any {
	out := map[string]any{}
	if len(c.g.opts.PodLabels) > 0 {
		for k, v := range c.g.opts.PodLabels {
			out[k] = v
		}
		return out
	}
	name, _ := jsonv.Get(c.g.base, "/metadata/name")
	if s, ok := name.(string); ok && s != "" {
		out["app.kubernetes.io/instance"] = s
	} else {
		out["app.kubernetes.io/instance"] = "gauntlet"
	}
	return out
}

// setObject replaces the object at p with v (dropping fields the schema lacks) in one step.
func (c *caseCtx) setObject(gen string, label Label, desc string, build func(cur map[string]any) map[string]any) (*draft, error) {
	st := jsonv.CopyMap(c.start)
	ptr, cur, _, _, err := c.locate(st)
	if err != nil {
		return nil, err
	}
	m, _ := cur.(map[string]any)
	m = jsonv.CopyMap(m)
	if m == nil {
		m = map[string]any{}
	}
	v := build(m)
	if cur != nil && jsonv.Equal(v, cur) {
		return nil, errSkip
	}
	if err := jsonv.Set(st, ptr, v); err != nil {
		return nil, err
	}
	return single(label, desc, st), nil
}

func podTerm(labels map[string]any) map[string]any {
	return map[string]any{
		"labelSelector": map[string]any{"matchLabels": labels},
		"topologyKey":   "kubernetes.io/hostname",
	}
}

func genAffinityColocate(c *caseCtx) (*draft, error) {
	if c.p.Field("podAffinity") == nil {
		return nil, errSkip
	}
	return c.setObject("affinity/colocate", Valid, fmt.Sprintf("require all pods of the cluster on one node through %s.podAffinity", c.p.Path), func(m map[string]any) map[string]any {
		delete(m, "podAntiAffinity")
		m["podAffinity"] = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{podTerm(c.podLabels())}}
		return m
	})
}

func genAffinitySpread(c *caseCtx) (*draft, error) {
	if c.p.Field("podAntiAffinity") == nil {
		return nil, errSkip
	}
	return c.setObject("affinity/spread", Valid, fmt.Sprintf("require one pod per node through %s.podAntiAffinity", c.p.Path), func(m map[string]any) map[string]any {
		delete(m, "podAffinity")
		m["podAntiAffinity"] = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{podTerm(c.podLabels())}}
		return m
	})
}

func genAffinityUnsatisfiable(c *caseCtx) (*draft, error) {
	if c.p.Field("nodeAffinity") == nil {
		return nil, errSkip
	}
	return c.setObject("affinity/unsatisfiable", Misoperation, fmt.Sprintf("require a node label no node has through %s.nodeAffinity", c.p.Path), func(m map[string]any) map[string]any {
		m["nodeAffinity"] = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{
				"key": "gauntlet.dev/unsatisfiable", "operator": "In", "values": []any{"true"},
			}}}},
		}}
		return m
	})
}

// --- resources ---

var resourceBaseline = map[string]string{"cpu": "250m", "memory": "256Mi"}

func genResources(c *caseCtx, mode string) (*draft, error) {
	hasReq, hasLim := c.p.Field("requests") != nil, c.p.Field("limits") != nil
	if !hasReq && !hasLim {
		return nil, errSkip
	}
	label := Valid
	var desc string
	switch mode {
	case "raise":
		desc = fmt.Sprintf("raise cpu and memory of %s", c.p.Path)
	case "lower":
		desc = fmt.Sprintf("lower cpu and memory of %s", c.p.Path)
	case "above":
		if !hasReq || !hasLim {
			return nil, errSkip
		}
		label = Misoperation
		desc = fmt.Sprintf("set requests above limits in %s", c.p.Path)
	}
	var ferr error
	d, err := c.setObject("resources/"+mode, label, desc, func(m map[string]any) map[string]any {
		req, _ := m["requests"].(map[string]any)
		lim, _ := m["limits"].(map[string]any)
		req, lim = jsonv.CopyMap(req), jsonv.CopyMap(lim)
		if req == nil {
			req = map[string]any{}
		}
		if lim == nil {
			lim = map[string]any{}
		}
		for _, res := range []string{"cpu", "memory"} {
			cur := any(resourceBaseline[res])
			if v, ok := req[res]; ok {
				cur = v
			} else if v, ok := lim[res]; ok {
				cur = v
			}
			var nr, nl string
			var err error
			switch mode {
			case "raise":
				nr, err = scaleQuantity(cur, 2, 1)
				if err == nil {
					nl, err = scaleQuantity(cur, 4, 1)
					if l, ok := lim[res]; ok {
						if ql, e := scaleQuantity(l, 2, 1); e == nil && greater(ql, nl) {
							nl = ql
						}
					}
				}
			case "lower":
				nr, err = scaleQuantity(cur, 1, 2)
				if err == nil {
					nl = nr
					if l, ok := lim[res]; ok {
						if ql, e := scaleQuantity(l, 1, 2); e == nil && greater(ql, nr) {
							nl = ql
						}
					}
				}
			case "above":
				nl = resourceBaseline[res]
				nr, err = scaleQuantity(nl, 2, 1)
			}
			if err != nil {
				ferr = err
				continue
			}
			if hasReq {
				req[res] = nr
			}
			if hasLim {
				lim[res] = nl
			}
		}
		if hasReq {
			m["requests"] = req
		}
		if hasLim {
			m["limits"] = lim
		}
		return m
	})
	if ferr != nil {
		return nil, ferr
	}
	return d, err
}

func greater(a, b string) bool {
	qa, e1 := resource.ParseQuantity(a)
	qb, e2 := resource.ParseQuantity(b)
	return e1 == nil && e2 == nil && qa.Cmp(qb) > 0
}

// --- security context ---

func genSecurity(c *caseCtx, privileged bool) (*draft, error) {
	pod := c.p.Semantic.Type == typePodSecurityContext
	var want map[string]any
	switch {
	case pod && privileged:
		want = map[string]any{"runAsUser": int64(0), "runAsGroup": int64(0), "runAsNonRoot": false, "fsGroup": int64(0)}
	case pod:
		want = map[string]any{"runAsNonRoot": true, "runAsUser": int64(1000), "runAsGroup": int64(1000), "fsGroup": int64(1000),
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	case privileged:
		want = map[string]any{"privileged": true, "allowPrivilegeEscalation": true, "runAsUser": int64(0), "runAsNonRoot": false,
			"readOnlyRootFilesystem": false, "capabilities": map[string]any{"add": []any{"NET_ADMIN", "SYS_ADMIN"}}}
	default:
		want = map[string]any{"privileged": false, "allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": int64(1000),
			"runAsGroup": int64(1000), "readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []any{"ALL"}},
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	}
	name, desc := "security-context/restricted", fmt.Sprintf("restrict %s (non-root, no escalation, dropped capabilities, RuntimeDefault seccomp)", c.p.Path)
	if privileged {
		name, desc = "security-context/privileged", fmt.Sprintf("run as root with privileges through %s", c.p.Path)
	}
	applied := 0
	d, err := c.setObject(name, Valid, desc, func(m map[string]any) map[string]any {
		for k, v := range want {
			f := c.p.Field(k)
			if f == nil {
				continue
			}
			if sub, ok := v.(map[string]any); ok {
				filtered := map[string]any{}
				for sk, sv := range sub {
					if f.Field(sk) != nil {
						filtered[sk] = sv
					}
				}
				if len(filtered) == 0 {
					continue
				}
				v = filtered
			}
			m[k] = v
			applied++
		}
		return m
	})
	if err == nil && applied == 0 {
		return nil, errSkip
	}
	return d, err
}

// --- image and version ---

var numberRE = regexp.MustCompile(`\d+`)

// versionOf splits an image reference or version string into repository and numeric version.
func versionOf(v string, image bool) (repo string, nums []int, ok bool) {
	tag := v
	if image {
		r, err := reference.Parse(v)
		if err != nil {
			return v, nil, false
		}
		t, ok := r.(reference.NamedTagged)
		if !ok {
			return v, nil, false
		}
		repo, tag = t.Name(), t.Tag()
	}
	for _, m := range numberRE.FindAllString(tag, 6) {
		n, err := strconv.Atoi(m)
		if err != nil {
			return repo, nil, false
		}
		nums = append(nums, n)
	}
	return repo, nums, len(nums) > 0
}

func compareVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// genVersionMove upgrades or downgrades an image or version to the nearest value the pool lists.
func genVersionMove(c *caseCtx, name string, up bool) (*draft, error) {
	image := c.p.Semantic.Hint == semantic.HintImage
	type cand struct {
		v    string
		repo string
		nums []int
	}
	var cands []cand
	seen := map[string]bool{}
	for _, v := range c.candidates(c.p) {
		s, ok := v.(string)
		if !ok || seen[s] {
			continue
		}
		seen[s] = true
		if repo, nums, ok := versionOf(s, image); ok {
			cands = append(cands, cand{s, repo, nums})
		}
	}
	if len(cands) < 2 && !(len(cands) == 1) {
		return nil, errSkip
	}
	sort.SliceStable(cands, func(i, j int) bool { return compareVersions(cands[i].nums, cands[j].nums) < 0 })
	s0 := jsonv.CopyMap(c.start)
	ptr, _, _, eff, err := c.locate(s0)
	if err != nil {
		return nil, err
	}
	var steps []map[string]any
	var descs []string
	curS, _ := eff.(string)
	curRepo, curNums, ok := versionOf(curS, image)
	if !ok {
		// No usable current value: start from the lowest (upgrade) or highest (downgrade) listed.
		if len(cands) < 2 {
			return nil, errSkip
		}
		start := cands[0]
		if !up {
			start = cands[len(cands)-1]
		}
		s1 := jsonv.CopyMap(s0)
		if err := jsonv.Set(s1, ptr, start.v); err != nil {
			return nil, err
		}
		steps = append(steps, s1)
		descs = append(descs, "set "+start.v)
		curS, curRepo, curNums = start.v, start.repo, start.nums
	}
	var pick *cand
	for i := range cands {
		k := cands[i]
		if image && k.repo != curRepo {
			continue
		}
		cmp := compareVersions(k.nums, curNums)
		if up && cmp > 0 && (pick == nil || compareVersions(k.nums, pick.nums) < 0) {
			pick = &cands[i]
		}
		if !up && cmp < 0 && (pick == nil || compareVersions(k.nums, pick.nums) > 0) {
			pick = &cands[i]
		}
	}
	if pick == nil {
		return nil, errSkip
	}
	prev := s0
	if len(steps) > 0 {
		prev = steps[0]
	}
	s2 := jsonv.CopyMap(prev)
	if err := jsonv.Set(s2, ptr, pick.v); err != nil {
		return nil, err
	}
	steps = append(steps, s2)
	verb := "upgrade"
	if !up {
		verb = "downgrade"
	}
	descs = append(descs, fmt.Sprintf("%s to %s", verb, pick.v))
	return &draft{label: Valid, steps: steps, stepDescs: descs,
		description: fmt.Sprintf("%s %s from %s to %s", verb, c.p.Path, curS, pick.v)}, nil
}
