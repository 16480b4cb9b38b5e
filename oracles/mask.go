package oracles

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Masks.
//
// A mask names fields that vary from run to run and are left out when states are
// compared (differential, recovery, stability). Forms:
//
//	metadata.uid                     a field path (pattern) in every object
//	Pod/*/status.podIP               the path in objects of one kind whose name matches a glob
//	Pod/cache-*/status.podIP         (kind "*" is any kind; names are path.Match globs)
//	PersistentVolumeClaim/data-*     whole objects (no path): they are ignored
//	<timestamps>                     every RFC 3339 timestamp string reads as "<timestamp>"
//	acto:<regex>                     Acto's diff_ignore_fields: every field whose DeepDiff path
//	                                 matches the regular expression (searched, not anchored)
//
// An acto: mask sees each object as Acto's system state holds it: a field's path
// is root['<kind in snake case>']['<name>'] followed by ['key'] per map key and
// [i] per list index (root['stateful_set']['cache']['spec']['replicas']), so
// regexes naming only the field part (\['metadata'\]\['annotations'\]\['x'\])
// apply to every object. The regex is Go's RE2: lookaround and back references
// do not parse and are reported as bad masks.
//
// A masked field is removed with everything below it, so a field present in one
// state and absent in the other is not a difference either.

// MaskTimestamps is the mask that makes every RFC 3339 timestamp value compare equal.
const MaskTimestamps = "<timestamps>"

// MaskActoPrefix starts a mask holding one of Acto's diff_ignore_fields regexes.
const MaskActoPrefix = "acto:"

// timestampValue replaces masked timestamps.
const timestampValue = "<timestamp>"

var kindRE = regexp.MustCompile(`^(\*|[A-Z][A-Za-z0-9]*)$`)

type maskRule struct {
	kind       string // "" or "*": any
	name       string // "" or "*": any; else a glob
	path       jsonv.Path
	whole      bool // the whole object
	timestamps bool
	re         *regexp.Regexp // an acto: mask
	src        string
}

// ErrBadMask is returned for a mask that does not parse.
var ErrBadMask = errors.New("mask must be a field path, Kind/name-glob, Kind/name-glob/field-path, " + MaskActoPrefix + "<regex> or " + MaskTimestamps)

func parseMask(s string) (maskRule, error) {
	r := maskRule{src: s}
	if s == MaskTimestamps {
		r.timestamps = true
		return r, nil
	}
	if strings.TrimSpace(s) == "" {
		return r, fmt.Errorf("empty mask: %w", ErrBadMask)
	}
	if expr, ok := strings.CutPrefix(s, MaskActoPrefix); ok {
		re, err := regexp.Compile(expr)
		if err != nil {
			return r, fmt.Errorf("mask %q: Acto regex (Go RE2 syntax; rewrite lookaround or back references): %v: %w", s, err, ErrBadMask)
		}
		if expr == "" {
			return r, fmt.Errorf("mask %q: empty Acto regex: %w", s, ErrBadMask)
		}
		r.re = re
		return r, nil
	}
	rest := s
	if i := strings.IndexByte(s, '/'); i > 0 && kindRE.MatchString(s[:i]) {
		r.kind = s[:i]
		rest = s[i+1:]
		name := rest
		rest = ""
		if j := strings.IndexByte(name, '/'); j >= 0 {
			name, rest = name[:j], name[j+1:]
		}
		if name == "" {
			return r, fmt.Errorf("mask %q: empty object name (use * for any): %w", s, ErrBadMask)
		}
		if _, err := path.Match(name, ""); err != nil {
			return r, fmt.Errorf("mask %q: bad name glob: %v: %w", s, err, ErrBadMask)
		}
		r.name = name
		if rest == "" {
			r.whole = true
			return r, nil
		}
	}
	p, err := jsonv.ParsePath(rest)
	if err != nil {
		return r, fmt.Errorf("mask %q: %v: %w", s, err, ErrBadMask)
	}
	if len(p) == 0 {
		return r, fmt.Errorf("mask %q: empty field path: %w", s, ErrBadMask)
	}
	r.path = p
	return r, nil
}

// ValidateMasks checks that every mask parses. Config.Validate calls it, and a
// campaign refuses a configuration that does not validate; Mask, Diff and the
// oracles skip masks that do not parse.
func ValidateMasks(masks []string) error {
	var errs []error
	for _, m := range masks {
		if _, err := parseMask(m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func compileMasks(lists ...[]string) []maskRule {
	var out []maskRule
	seen := map[string]bool{}
	for _, l := range lists {
		for _, m := range l {
			if seen[m] {
				continue
			}
			seen[m] = true
			if r, err := parseMask(m); err == nil {
				out = append(out, r)
			}
		}
	}
	return out
}

func (r maskRule) appliesTo(kind, name string) bool {
	if r.kind != "" && r.kind != "*" && r.kind != kind {
		return false
	}
	if r.name != "" && r.name != "*" {
		ok, _ := path.Match(r.name, name)
		return ok
	}
	return true
}

// DefaultMasks are the fields that differ between two runs reaching the same
// state on any operator: object identity (uid, resourceVersion, creation time,
// managed fields, generation, owner uids), observed generations, every
// timestamp, pod placement (node, and the topology labels copied from it) and addresses, container ids and restart history,
// Service cluster IPs and node ports, bound volume names, a claim's resize
// record (status.allocatedResources and allocatedResourceStatuses: a claim grown
// to a size keeps them, one created at that size has none), a StatefulSet's
// current revision (history under OnDelete) and the namespace's root CA (its data and its
// decoded certificate). The oracles always apply them; LearnMasks finds the rest.
func DefaultMasks() []string {
	return []string{
		MaskTimestamps,
		"metadata.uid",
		"metadata.resourceVersion",
		"metadata.creationTimestamp",
		"metadata.managedFields",
		"metadata.generation",
		"metadata.selfLink",
		"metadata.ownerReferences[*].uid",
		`metadata.annotations["deployment.kubernetes.io/revision"]`,
		// Added by the Deployment controller when a rollback reuses an old ReplicaSet.
		`metadata.annotations["deployment.kubernetes.io/revision-history"]`,
		`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
		"status.observedGeneration",
		"status.conditions[*].observedGeneration",
		"status.conditions[*].lastTransitionTime",
		"status.conditions[*].lastUpdateTime",
		"status.conditions[*].lastProbeTime",
		"status.conditions[*].lastHeartbeatTime",
		"Pod/*/spec.nodeName",
		// Copied from the node the pod was bound to (PodTopologyLabelsAdmission).
		`Pod/*/metadata.labels["topology.kubernetes.io/zone"]`,
		`Pod/*/metadata.labels["topology.kubernetes.io/region"]`,
		"Pod/*/status.podIP",
		"Pod/*/status.podIPs",
		"Pod/*/status.hostIP",
		"Pod/*/status.hostIPs",
		"Pod/*/status.startTime",
		"Pod/*/status.containerStatuses[*].containerID",
		"Pod/*/status.containerStatuses[*].imageID",
		"Pod/*/status.containerStatuses[*].restartCount",
		"Pod/*/status.containerStatuses[*].lastState",
		"Pod/*/status.containerStatuses[*].state.running.startedAt",
		"Pod/*/status.initContainerStatuses[*].containerID",
		"Pod/*/status.initContainerStatuses[*].imageID",
		"Pod/*/status.initContainerStatuses[*].restartCount",
		"Pod/*/status.initContainerStatuses[*].lastState",
		"Pod/*/status.initContainerStatuses[*].state",
		// An OnDelete StatefulSet never moves currentRevision forward: it depends
		// on the history, not on the state (updateRevision and updatedReplicas do not).
		"StatefulSet/*/status.currentRevision",
		"StatefulSet/*/status.currentReplicas",
		"Service/*/spec.clusterIP",
		"Service/*/spec.clusterIPs",
		"Service/*/spec.ports[*].nodePort",
		"Service/*/spec.healthCheckNodePort",
		"Service/*/status.loadBalancer",
		"PersistentVolumeClaim/*/spec.volumeName",
		`PersistentVolumeClaim/*/metadata.annotations["volume.kubernetes.io/selected-node"]`,
		`PersistentVolumeClaim/*/metadata.annotations["volume.beta.kubernetes.io/storage-provisioner"]`,
		`PersistentVolumeClaim/*/metadata.annotations["volume.kubernetes.io/storage-provisioner"]`,
		// Written by a resize (Kubernetes' volume expansion), never by provisioning.
		"PersistentVolumeClaim/*/status.allocatedResources",
		"PersistentVolumeClaim/*/status.allocatedResourceStatuses",
		"ConfigMap/kube-root-ca.crt/data",
		// Its decoded view (the campaign adds x509view.Field from the data).
		`ConfigMap/kube-root-ca.crt/["` + x509view.Field + `"]`,
	}
}

// Mask returns a copy of obj without the masked fields (nil when a mask covers
// the whole object). Masks scoped to a kind and name use obj's kind and
// metadata.name. Masks that do not parse are ignored (see ValidateMasks).
func Mask(obj model.Object, masks []string) model.Object {
	return applyMasks(obj, compileMasks(masks))
}

func objKindName(obj model.Object) (kind, name string) {
	kind, _ = obj["kind"].(string)
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	return kind, name
}

func applyMasks(obj model.Object, rules []maskRule) model.Object {
	if obj == nil {
		return nil
	}
	kind, name := objKindName(obj)
	out := jsonv.CopyMap(obj)
	for _, r := range rules {
		if r.timestamps {
			maskTimestamps(out)
			continue
		}
		if r.re != nil {
			root := actoRoot(kind, name)
			if r.re.MatchString(root) {
				return nil
			}
			out = maskActo(out, root, r.re).(map[string]any)
			continue
		}
		if !r.appliesTo(kind, name) {
			continue
		}
		if r.whole {
			return nil
		}
		v, rm := maskIn(out, r.path)
		if rm { // "**": everything
			return nil
		}
		out = v.(map[string]any)
	}
	return out
}

// wholeMasked reports whether a rule drops the object entirely.
func wholeMasked(obj model.Object, rules []maskRule) bool {
	kind, name := objKindName(obj)
	for _, r := range rules {
		if r.whole && r.appliesTo(kind, name) || r.re != nil && r.re.MatchString(actoRoot(kind, name)) {
			return true
		}
	}
	return false
}

// actoRoot is the DeepDiff path of an object in Acto's system state:
// root['<kind in snake case>']['<name>'].
func actoRoot(kind, name string) string {
	var b strings.Builder
	for i, c := range kind {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return "root" + actoKey(b.String()) + actoKey(name)
}

// actoKey is a map key's DeepDiff path segment (Python's repr of a str).
func actoKey(k string) string {
	q := "'"
	if strings.Contains(k, "'") && !strings.Contains(k, `"`) {
		q = `"`
	}
	return "[" + q + strings.ReplaceAll(k, `\`, `\\`) + q + "]"
}

// maskActo removes from node every child whose DeepDiff path (below path)
// matches re, with everything below it.
func maskActo(node any, path string, re *regexp.Regexp) any {
	return maskChildren(node, func(c any, seg jsonv.Segment) (any, bool) {
		p := path
		if seg.Kind == jsonv.SegIndex {
			p += fmt.Sprintf("[%d]", seg.Index)
		} else {
			p += actoKey(seg.Key)
		}
		if re.MatchString(p) {
			return nil, true
		}
		return maskActo(c, p, re), false
	})
}

// maskIn removes what pat matches below node (in place where possible) and
// returns the new node; remove is true when node itself is matched.
func maskIn(node any, pat jsonv.Path) (any, bool) {
	if len(pat) == 0 {
		return nil, true
	}
	s := pat[0]
	if s.Kind == jsonv.SegDeep {
		v, rm := maskIn(node, pat[1:])
		if rm {
			return nil, true
		}
		node = v
		// The pattern without ** was tried at this level; now let ** consume one
		// more segment by descending with the full pattern.
		node = maskChildren(node, func(c any, seg jsonv.Segment) (any, bool) {
			return maskIn(c, pat)
		})
		return node, false
	}
	return maskChildren(node, func(c any, seg jsonv.Segment) (any, bool) {
		if seg.Kind == jsonv.SegKey && !s.MatchesKey(seg.Key) || seg.Kind == jsonv.SegIndex && !s.MatchesIndex(seg.Index) {
			return c, false
		}
		return maskIn(c, pat[1:])
	}), false
}

// maskChildren applies fn to each child and removes the children it reports.
func maskChildren(node any, fn func(c any, seg jsonv.Segment) (any, bool)) any {
	switch n := node.(type) {
	case map[string]any:
		for k, c := range n {
			v, rm := fn(c, jsonv.Segment{Kind: jsonv.SegKey, Key: k})
			if rm {
				delete(n, k)
			} else {
				n[k] = v
			}
		}
		return n
	case []any:
		out := n[:0:0]
		changed := false
		for i, c := range n {
			v, rm := fn(c, jsonv.Segment{Kind: jsonv.SegIndex, Index: i})
			if rm {
				changed = true
				continue
			}
			out = append(out, v)
		}
		if !changed {
			for i := range out {
				n[i] = out[i]
			}
			return n
		}
		return out
	}
	return node
}

func isTimestamp(s string) bool {
	if len(s) < 20 || len(s) > 40 || s[4] != '-' || s[10] != 'T' {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func maskTimestamps(v any) any {
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			n[k] = maskTimestamps(c)
		}
	case []any:
		for i, c := range n {
			n[i] = maskTimestamps(c)
		}
	case string:
		if isTimestamp(n) {
			return timestampValue
		}
	}
	return v
}
