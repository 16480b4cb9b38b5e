package oracles

import (
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Values inside objects are JSON-shaped: map[string]any, []any, string, bool,
// nil and numbers (float64 from encoding/json, int64 from the unstructured
// converter, json.Number when decoded with UseNumber).

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// scalarString renders a primitive as the string a Kubernetes object or a
// configuration file would hold it in; ok is false for structures and nil.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	}
	if f, ok := jsonv.AsFloat(v); ok {
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return strconv.FormatInt(int64(f), 10), true
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}

// equivalent reports whether a desired primitive d and an observed primitive v
// mean the same: equal, or equal after Kubernetes quantity normalization
// ("1Gi" == "1073741824" == "1024Mi"), as an int-or-string ("3" == 3), as the
// string form of a number or bool, as equal Go durations ("1m" == "60s"), or
// as one version with and without its leading "v" ("v0.25.1" == "0.25.1").
func equivalent(d, v any) bool {
	if jsonv.Equal(d, v) {
		return true
	}
	ds, ok1 := scalarString(d)
	vs, ok2 := scalarString(v)
	if !ok1 || !ok2 {
		return false
	}
	if ds == vs || sameVersion(ds, vs) {
		return true
	}
	if _, isBool := d.(bool); isBool {
		return strings.EqualFold(ds, vs)
	}
	if _, isBool := v.(bool); isBool {
		return strings.EqualFold(ds, vs)
	}
	if fd, err := strconv.ParseFloat(ds, 64); err == nil {
		if fv, err := strconv.ParseFloat(vs, 64); err == nil {
			return fd == fv
		}
	}
	if qd, ok := quantity(ds); ok {
		if qv, ok := quantity(vs); ok {
			return qd.Cmp(qv) == 0
		}
	}
	if dd, ok := duration(ds); ok {
		if dv, ok := duration(vs); ok {
			return dd == dv
		}
	}
	return false
}

// versionPattern is a dotted version with an optional leading "v" and an
// optional pre-release or build suffix: "v0.25.1", "1.36", "v2.0.0-rc.1".
// At least one dot is needed, so that "v1" (an apiVersion) is no version.
var versionPattern = regexp.MustCompile(`^[vV]?[0-9]+(\.[0-9]+)+([-+][0-9A-Za-z.+-]+)?$`)

// sameVersion reports whether a and b are the same version, one written with
// a leading "v" and the other without: operators publish a property
// "version: v0.25.1" as the image tag ":v0.25.1" and as the label
// "app.kubernetes.io/version: 0.25.1" (the Prometheus operator, untuned).
func sameVersion(a, b string) bool {
	if !versionPattern.MatchString(a) || !versionPattern.MatchString(b) {
		return false
	}
	return strings.TrimLeft(a, "vV") == strings.TrimLeft(b, "vV")
}

// imageTag returns the tag of an image reference ("quay.io/x/y:v0.25.1",
// "y:1.36@sha256:…"); ok is false for a string that is not one (spaces, no
// tag, a registry port without a tag).
func imageTag(s string) (string, bool) {
	if s == "" || len(s) > 512 || strings.ContainsAny(s, " \t\n=,") {
		return "", false
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || strings.ContainsRune(s[i+1:], '/') {
		return "", false
	}
	tag := s[i+1:]
	if !imageTagPattern.MatchString(tag) {
		return "", false
	}
	return tag, true
}

// imageTagPattern is the grammar of an image tag (distribution/reference).
var imageTagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// taggedWith reports whether an observed string v is an image reference whose
// tag is the desired version d (with or without its leading "v"): an
// operator's version property is reflected by the operand's image.
func taggedWith(d, v any) bool {
	ds, ok := d.(string)
	if !ok || !versionPattern.MatchString(ds) {
		return false
	}
	vs, ok := v.(string)
	if !ok {
		return false
	}
	tag, ok := imageTag(vs)
	return ok && (tag == ds || sameVersion(tag, ds))
}

func quantity(s string) (resource.Quantity, bool) {
	if s == "" || len(s) > 40 {
		return resource.Quantity{}, false
	}
	c := s[0]
	if !(c >= '0' && c <= '9') && c != '.' && c != '+' && c != '-' {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, false
	}
	return q, true
}

func duration(s string) (time.Duration, bool) {
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' }) < 0 {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// contains reports whether observed value v reflects desired value d: equivalent
// primitives; for a map, every key of d is in v with a value that reflects it
// (v may hold more: server defaults, operator additions); for a list, every
// element of d is reflected by some element of v; a distinctive string is
// also reflected by a flag holding it (flagHolds).
func contains(d, v any) bool {
	switch x := d.(type) {
	case map[string]any:
		y, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range x {
			vv, ok := y[k]
			if !ok {
				if isEmpty(dv) {
					continue
				}
				return false
			}
			if !contains(dv, vv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := v.([]any)
		if !ok {
			return false
		}
		for _, de := range x {
			found := false
			for _, ve := range y {
				if contains(de, ve) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case nil:
		return v == nil
	}
	if _, ok := v.(map[string]any); ok {
		return false
	}
	if _, ok := v.([]any); ok {
		return false
	}
	return equivalent(d, v) || flagHolds(d, v)
}

// isEmpty: nil, "", an empty map or list.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// isStructure: a map or a list.
func isStructure(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// weak values (booleans, small integers, empty or one-character strings) match
// many unrelated fields by coincidence: they count only where names agree.
func weak(v any) bool {
	switch x := v.(type) {
	case bool, nil:
		return true
	case string:
		if len(x) <= 1 {
			return true
		}
		switch strings.ToLower(x) {
		case "true", "false", "yes", "no", "on", "off":
			return true
		}
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return math.Abs(f) <= 10
		}
		return false
	}
	if f, ok := jsonv.AsFloat(v); ok {
		return math.Abs(f) <= 10
	}
	return false
}

// configLine parses one line of a configuration file or command line: "key
// value", "key=value", "key: value", "--key=value". ok is false for comments
// and lines without a value separator.
func configLine(line string) (key, value string, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' || line[0] == ';' {
		return "", "", false
	}
	line = strings.TrimLeft(line, "-")
	i := strings.IndexAny(line, " \t=:")
	if i <= 0 {
		return "", "", false
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t")
	if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ":") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	return key, unquote(strings.TrimSpace(rest)), true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s[1:len(s)-1], `"`, `\"`) + `"`); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}

// lineValue returns the value a text gives to key, comparing keys in any case
// and with or without '-' and '_' (log-level, log_level, logLevel): from a line "key value" (key=value, key: value,
// --key=value; the last line wins, as in valkey.conf), or else from a command
// line inside the text ("... --key value ...", "... --key=value ..."). ok is
// false when the text does not set key.
func lineValue(text, key string) (string, bool) {
	nk := normName(key)
	if key == "" || !strings.Contains(normName(text), nk) {
		return "", false
	}
	var val string
	found := false
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := configLine(line)
		if ok && normName(k) == nk {
			val, found = v, true
		}
	}
	if found {
		return val, true
	}
	return flagValue(strings.Fields(text), key)
}

// flagValue finds "--key value" or "--key=value" (one or two dashes, or none)
// in command-line arguments; the last occurrence wins. The flag's name matches
// key in any case and with or without '-' and '_' between words, as operators
// turn a field into a flag (CloudNativePG's spec.logLevel: --log-level=info),
// with or without a dotted component prefix (flagNamed).
func flagValue(args []string, key string) (string, bool) {
	nk := normName(key)
	var val string
	found := false
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		name, v, hasValue := strings.Cut(a, "=")
		switch {
		case hasValue && name != "" && flagNamed(name, nk):
			val, found = unquote(v), true
		case !hasValue && flagNamed(a, nk) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			val, found = unquote(args[i+1]), true
		}
	}
	return val, found
}

// flagNamed reports whether a flag's name stands for the normalised key nk:
// the whole name, the name without its dots (--cluster.peer-timeout for
// clusterPeerTimeout), or its last dotted part (--web.external-url for
// externalUrl, --data.retention for retention), as operators prefix flags with
// the component they configure.
func flagNamed(name, nk string) bool {
	if normName(name) == nk {
		return true
	}
	i := strings.LastIndexByte(name, '.')
	return i >= 0 && (normName(strings.ReplaceAll(name, ".", "")) == nk || normName(name[i+1:]) == nk)
}

// argsValue looks key up in a list of strings (container args or command).
func argsValue(v any, key string) (string, bool) {
	l, ok := v.([]any)
	if !ok || len(l) == 0 || key == "" {
		return "", false
	}
	args := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return "", false
		}
		args = append(args, s)
	}
	return flagValue(args, key)
}

// normName lowercases a field name and drops '-' and '_' for name affinity.
// It is on the consistency oracle's hot path (every state string and argument
// against every changed property), so it builds the result in one pass rather
// than through a strings.Replacer made per call.
func normName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r != '-' && r != '_' {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// affinity counts how many trailing field names of a property path and a state
// field path agree (after normName); the last names may also end with one another.
func affinity(prop, field jsonv.Path) int {
	pf, ff := prop.Keys(), field.Keys()
	n := 0
	for i, j := len(pf)-1, len(ff)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		a, b := normName(pf[i]), normName(ff[j])
		if a == b || (n == 0 && a != "" && b != "" && (wordSuffix(pf[i], b) || wordSuffix(ff[j], a))) {
			n++
			continue
		}
		break
	}
	return n
}

// wordSuffix reports whether the field name long ends with the normalised
// name short starting at a word of long: "tlsSecretName" ends with
// "secretname" and "name", but "resources" does not end with "sources"
// (CloudNativePG seed 1 named a PVC's spec.resources as overruling
// projectedVolumeTemplate.sources).
func wordSuffix(long, short string) bool {
	if short == "" || !strings.HasSuffix(normName(long), short) {
		return false
	}
	// Walk back over the last len(short) name characters of long.
	p, left := len(long), len(short)
	for p > 0 && left > 0 {
		p--
		if c := long[p]; c != '-' && c != '_' {
			left--
		}
	}
	if p == 0 {
		return true
	}
	prev, c := long[p-1], long[p]
	upper := func(b byte) bool { return b >= 'A' && b <= 'Z' }
	// A capital after a lower-case letter, or the last capital of an acronym
	// before a lower-case letter ("TLSName").
	nextLower := p+1 < len(long) && long[p+1] >= 'a' && long[p+1] <= 'z'
	return prev == '-' || prev == '_' || (upper(c) && (!upper(prev) || nextLower))
}

// render renders a value compactly for summaries.
func render(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(truncate(s, 80))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return truncate(string(b), 120)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// distinctive reports whether a desired string is unlikely to appear by
// coincidence: five characters or more, a letter among them, not a boolean
// word (a generated name "gauntlet-xowbr", a host name).
func distinctive(s string) bool {
	return len(s) >= 5 && !weak(s) && strings.IndexFunc(s, unicode.IsLetter) >= 0
}

// flagHolds reports whether an observed string v is a command-line flag
// ("--cluster.peer=gauntlet-xowbr") whose value is the distinctive desired
// string d, whatever the flag's name: operators pass a list property on as
// repeated flags named after the operand's option, not the property
// (the Prometheus operator's additionalPeers as --cluster.peer).
func flagHolds(d, v any) bool {
	ds, ok := d.(string)
	if !ok || !distinctive(ds) {
		return false
	}
	vs, ok := v.(string)
	if !ok || !strings.HasPrefix(vs, "-") {
		return false
	}
	name, val, ok := strings.Cut(strings.TrimLeft(vs, "-"), "=")
	return ok && name != "" && unquote(val) == ds
}

// nameValueFlags reports whether a desired item {name: N, value: V} (value
// optional), or a list of such items, is rendered in the argument list args
// as flags --N=V (or "--N V", or --N alone for an item without a value):
// pass-through argument lists (the Prometheus operator's additionalArgs).
func nameValueFlags(d any, args []string) bool {
	items, ok := d.([]any)
	if !ok {
		items = []any{d}
	}
	if len(items) == 0 {
		return false
	}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return false
		}
		name, _ := m["name"].(string)
		if name == "" || len(m) > 2 || (len(m) == 2 && m["value"] == nil) {
			return false
		}
		val, hasVal := m["value"]
		if !hasVal {
			if !slices.ContainsFunc(args, func(a string) bool {
				return strings.HasPrefix(a, "-") && normName(strings.TrimLeft(a, "-")) == normName(name)
			}) {
				return false
			}
			continue
		}
		got, found := exactFlagValue(args, name)
		if !found || !equivalent(val, got) {
			return false
		}
	}
	return true
}

// exactFlagValue is flagValue for a flag's whole name only (any spelling).
func exactFlagValue(args []string, name string) (string, bool) {
	nk := normName(name)
	var val string
	found := false
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		n, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case hasValue && normName(n) == nk:
			val, found = unquote(v), true
		case !hasValue && normName(n) == nk && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			val, found = unquote(args[i+1]), true
		}
	}
	return val, found
}

// stringList returns v as a list of strings (container args, a command).
func stringList(v any) ([]string, bool) {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}
