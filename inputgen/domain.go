package inputgen

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
)

// domain is what a string (or int-or-string) property means beyond its schema: inferred from the
// core type it maps to, its format, its name and its description. Values drawn for a property of
// a domain are of that domain (a cron schedule, not "gauntlet-xxxxx"), and values mined from the
// seed go only to properties of the same meaning.
type domain uint8

const (
	domNone domain = iota
	// domCron is a cron schedule ("0 3 * * *").
	domCron
	// domURL is an absolute http(s) URL.
	domURL
	// domDuration is a duration in Go's form ("1m30s") or the single-unit form Kubernetes and
	// Prometheus CRDs use ("30s", "72h").
	domDuration
	// domVersion is a version of the operand, in the seed's own form.
	domVersion
	// domImage is a container image reference.
	domImage
	// domDNSLabel is the name of a list item, container, volume or Service (RFC 1123 label).
	domDNSLabel
	// domDNSSubdomain is the name of a referenced object (Secret, ConfigMap, claim, class).
	domDNSSubdomain
	// domEnvName is an environment variable's name (C identifier).
	domEnvName
	// domPortName is a named port (IANA service name).
	domPortName
	// domPort is a port by number or name (int-or-string).
	domPort
	// domAPIVersion is a Kubernetes apiVersion ("v1", "apps/v1").
	domAPIVersion
	// domIntString is a string holding an integer, as every value seen for the property does
	// (a timeout of "10000" milliseconds).
	domIntString
	// domIP is an IP address (a host alias, a name server, an external IP).
	domIP
	// domAbsPath is an absolute file path (a mount path, an NFS export, a host path).
	domAbsPath
	// domHostPort is a host:port pair (an iSCSI portal, a Quobyte registry).
	domHostPort
	// domIQN is an iSCSI qualified name.
	domIQN
)

var domainNames = [...]string{"", "cron", "url", "duration", "version", "image", "dns-label", "dns-subdomain", "env-name", "port-name", "port", "api-version", "int-string", "ip", "abs-path", "host-port", "iqn"}

func (d domain) String() string {
	if int(d) < len(domainNames) {
		return domainNames[d]
	}
	return fmt.Sprintf("domain(%d)", d)
}

var (
	cronNameRE     = regexp.MustCompile(`(?i)(^|[a-z])(schedule|cron|cronschedule|cronexpression)$`)
	urlNameRE      = regexp.MustCompile(`(?i)(^|[a-z])(url|uri|endpoint|endpointurl|endpointuri|webhookurl)$`)
	durationNameRE = regexp.MustCompile(`(?i)(^|[a-z])(timeout|interval|period|duration|delay|ttl|retention|backoff|deadline|frequency|maxage|gracePeriod)$`)
	cronDescRE     = regexp.MustCompile(`(?i)\bcron\b|crontab`)
	durationDescRE = regexp.MustCompile(`(?i)\bduration\b|\b[0-9]+(ms|s|m|h)\b`)
	refNameRE      = regexp.MustCompile(`(?i)^(secret|configmap|serviceaccount|storageclass|claim|pvc|priorityclass|issuer|certificate|tlssecret|credentials?secret|passwordsecret)name$`)
	versionTokRE   = regexp.MustCompile(`\bv?[0-9]+\.[0-9]+(\.[0-9]+)?([-+][0-9A-Za-z.]+)?\b`)
	versionFormRE  = regexp.MustCompile(`^([^0-9]*)([0-9]+(?:\.[0-9]+)*)(.*)$`)
	apiVersionRE   = regexp.MustCompile(`^([a-z0-9]([a-z0-9.-]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$`)
	cronFieldRE    = regexp.MustCompile(`^[0-9*/,?LW#A-Za-z-]+$`)
	promDurationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	durationUnitRE = regexp.MustCompile(`[a-zµ]+`)
	intStringRE    = regexp.MustCompile(`^-?[0-9]+$`)
	versionLikeRE  = regexp.MustCompile(`^v?[0-9]+\.[0-9]+(\.[0-9]+)*$`)
)

// dropWildcards removes the [*] and {*} of a semantic field path.
var dropWildcards = strings.NewReplacer("[*]", "", "{*}", "")

// containerLists are the fields whose items are containers.
var containerLists = map[string]bool{"": true, "containers": true, "initContainers": true, "ephemeralContainers": true, "container": true, "sidecars": true}

// coreField returns, for a property inside a structurally matched core type, the last segment of
// its field in the type and the field (or, at the top, the type) that owns it, with "[*]"/"{*}"
// dropped: "env" and "name" for containers[*].env[*].name.
func coreField(p *crd.Property) (owner, name string, ok bool) {
	if p.Semantic == nil || p.Semantic.Root == "" || p.Semantic.Field == "" {
		return "", "", false
	}
	segs := strings.Split(dropWildcards.Replace(p.Semantic.Field), ".")
	name = segs[len(segs)-1]
	if len(segs) > 1 {
		owner = segs[len(segs)-2]
	} else {
		t := p.Semantic.Type
		if i := strings.IndexByte(t, '#'); i >= 0 {
			t = t[:i]
		}
		owner = strings.ToLower(t[strings.LastIndex(t, ".")+1:])
	}
	return owner, name, true
}

// domainOf returns p's domain as inferDomain infers it from the core type it maps to, its
// format, its name and its description (domNone when nothing says more than the schema).
func (g *Generator) domainOf(p *crd.Property) domain {
	d, _ := g.inferDomain(p)
	return d
}

// inferredDomain is what inferDomain returns for one property.
type inferredDomain struct {
	d    domain
	sure bool
}

// inferDomains infers the domain of every property of s once (after semantic annotation, which
// it reads): draws ask for them again and again.
func inferDomains(s *crd.Schema) map[*crd.Property]inferredDomain {
	out := make(map[*crd.Property]inferredDomain, len(s.Properties()))
	for _, p := range s.Properties() {
		d, sure := inferDomain(p)
		out[p] = inferredDomain{d, sure}
	}
	return out
}

// inferDomain returns inferDomain(p), from the generator's table when p is one of its schema's
// properties.
func (g *Generator) inferDomain(p *crd.Property) (domain, bool) {
	if v, ok := g.domains[p]; ok {
		return v.d, v.sure
	}
	return inferDomain(p)
}

// inferDomain returns p's domain and whether a core type or a format says it (else it comes from
// the name or the description alone, which the seed's own value may contradict).
func inferDomain(p *crd.Property) (domain, bool) {
	if d, ok := coreDomain(p); ok {
		return d, true
	}
	switch strings.ReplaceAll(p.Format, "-", "") {
	case "uri", "url":
		return domURL, true
	case "duration":
		return domDuration, true
	}
	return nameDomain(p), false
}

// coreDomain returns the domain of a field of a core type Kubernetes validates, and false for
// fields the core type leaves free (those fall back to their names).
func coreDomain(p *crd.Property) (domain, bool) {
	owner, name, ok := coreField(p)
	if !ok {
		return domNone, false
	}
	isString := p.Type == crd.TypeString && len(p.Enum) == 0
	switch {
	case p.IntOrString && (name == "port" || name == "targetPort"):
		return domPort, true
	case !isString:
		return domNone, true
	case name == "apiVersion":
		return domAPIVersion, true
	case name == "image":
		if containerLists[owner] || owner == "container" || owner == "ephemeralcontainer" {
			return domImage, true
		}
		// A Ceph RBD image or similar: not a container image.
		return domNone, true
	case name == "name":
		switch owner {
		case "env", "envvar":
			return domEnvName, true
		case "ports", "containerport", "serviceport":
			return domPortName, true
		case "containers", "initContainers", "ephemeralContainers", "container", "ephemeralcontainer",
			"volumes", "volume", "volumeMounts", "volumemount", "volumeDevices":
			return domDNSLabel, true
		case "imagePullSecrets", "configMap", "secret", "configMapRef", "configMapKeyRef", "secretRef", "secretKeyRef",
			"nodePublishSecretRef", "controllerPublishSecretRef", "nodeStageSecretRef", "dataSource", "dataSourceRef",
			"localobjectreference", "secretkeyselector", "configmapkeyselector":
			return domDNSSubdomain, true
		}
		// Header names, DNS options, resource claims: free text to the core type.
		return domNone, true
	case name == "secretName" || name == "claimName" || name == "serviceAccountName" || name == "storageClassName" || name == "priorityClassName":
		return domDNSSubdomain, true
	case name == "ip" && owner == "hostAliases", name == "nameservers", name == "externalIPs", name == "loadBalancerIP":
		return domIP, true
	case name == "mountPath" || name == "devicePath" || (name == "path" && (owner == "nfs" || owner == "hostPath" || owner == "local")):
		return domAbsPath, true
	case name == "targetPortal" || name == "portals" || (name == "registry" && owner == "quobyte"):
		return domHostPort, true
	case owner == "iscsi" && (name == "iqn" || name == "initiatorName"):
		return domIQN, true
	case name == "serviceName" || name == "subdomain":
		return domDNSLabel, true
	}
	return domNone, false
}

// nameDomain infers a domain from p's name, hint and description.
func nameDomain(p *crd.Property) domain {
	name := p.Path.Last()
	if p.IntOrString && (name == "port" || name == "targetPort" || strings.HasSuffix(name, "Port")) {
		return domPort
	}
	if p.Type != crd.TypeString || len(p.Enum) > 0 {
		return domNone
	}
	hint := ""
	if p.Semantic != nil {
		hint = p.Semantic.Hint
	}
	switch {
	case name == "apiVersion":
		return domAPIVersion
	case hint == semantic.HintImage:
		return domImage
	case hint == semantic.HintVersion:
		return domVersion
	case cronNameRE.MatchString(name) || (strings.Contains(strings.ToLower(name), "schedule") && cronDescRE.MatchString(p.Description)):
		return domCron
	case urlNameRE.MatchString(name):
		return domURL
	case durationNameRE.MatchString(name) || (strings.Contains(strings.ToLower(p.Description), "duration") && durationDescRE.MatchString(p.Description) && !strings.Contains(strings.ToLower(name), "name")):
		return domDuration
	case name == "name":
		return domDNSLabel
	case refNameRE.MatchString(name):
		return domDNSSubdomain
	}
	return domNone
}

// domain returns p's domain, unless the values the pool holds for p itself (the seed's, the
// examples', the target's) contradict a domain inferred from the name alone.
func (c *caseCtx) domain(p *crd.Property) domain {
	d, sure := c.g.inferDomain(p)
	if sure {
		return d
	}
	if d == domNone {
		return c.valueForm(p)
	}
	for _, pv := range c.g.pool.Values(p.Path.String()) {
		if s, ok := pv.Value.(string); ok && !domainAccepts(d, s) {
			return c.valueForm(p)
		}
	}
	if s, ok := p.Default.(string); ok && p.HasDefault && s != "" && !domainAccepts(d, s) {
		return c.valueForm(p)
	}
	return d
}

// valueForm returns the domain the values seen for a free string property share (the seed's,
// the examples', the target's and the default): domIntString when all hold integers.
func (c *caseCtx) valueForm(p *crd.Property) domain {
	if p.Type != crd.TypeString || len(p.Enum) > 0 {
		return domNone
	}
	n := 0
	for _, pv := range c.g.pool.Values(p.Path.String()) {
		s, ok := pv.Value.(string)
		if !ok || !intStringRE.MatchString(s) {
			return domNone
		}
		n++
	}
	if p.HasDefault {
		s, ok := p.Default.(string)
		if !ok || !intStringRE.MatchString(s) {
			return domNone
		}
		n++
	}
	if n == 0 {
		return domNone
	}
	return domIntString
}

// likeValue returns a value in the form of old (an integer, a boolean, a duration, a version, a
// quantity), different from it; false when old has no form it knows.
func (c *caseCtx) likeValue(old string) (string, bool) {
	var opts []string
	switch {
	case old == "true" || old == "false":
		opts = []string{map[string]string{"true": "false", "false": "true"}[old]}
	case intStringRE.MatchString(old):
		opts = intStringValues(old)
	case domainAccepts(domDuration, old) && strings.ContainsAny(old, "smhdwy"):
		opts = durationValues([]string{old})
	case versionLikeRE.MatchString(old):
		opts = versionValues("", []string{old})
	default:
		if q, err := resource.ParseQuantity(old); err == nil && strings.IndexFunc(old, unicode.IsLetter) > 0 {
			if v, err := scaleQuantity(q.String(), 2, 1); err == nil {
				opts = []string{v}
			}
		}
	}
	var out []string
	for _, v := range opts {
		if v != old {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return "", false
	}
	return out[c.r.IntN(len(out))], true
}

// intStringValues returns integers near n's (double, half, next) as strings.
func intStringValues(n string) []string {
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return nil
	}
	if v == 0 {
		return []string{"1", "10"}
	}
	out := []string{strconv.FormatInt(v+1, 10)}
	if v < 1<<40 && v > -(1<<40) {
		out = append(out, strconv.FormatInt(v*2, 10))
	}
	if v/2 != 0 {
		out = append(out, strconv.FormatInt(v/2, 10))
	}
	return out
}

// domainAccepts reports whether v is a value of domain d.
func domainAccepts(d domain, v any) bool {
	if d == domPort {
		if n, ok := v.(int64); ok {
			return n >= 1 && n <= 65535
		}
		if n, ok := v.(float64); ok {
			return n >= 1 && n <= 65535 && n == float64(int64(n))
		}
		if n, ok := v.(int); ok {
			return n >= 1 && n <= 65535
		}
	}
	s, ok := v.(string)
	if !ok {
		return d == domNone
	}
	switch d {
	case domCron:
		return isCron(s)
	case domURL:
		u, err := url.Parse(s)
		return err == nil && u.Scheme != "" && u.Host != ""
	case domDuration:
		if _, err := time.ParseDuration(s); err == nil {
			return true
		}
		return promDurationRE.MatchString(s)
	case domVersion:
		return versionFormRE.MatchString(s) && strings.ContainsAny(s, "0123456789") && !strings.ContainsAny(s, " \t/:")
	case domImage:
		return s != "" && !strings.ContainsAny(s, " \t\n") && strings.ToLower(s[:1]) == s[:1]
	case domDNSLabel:
		return len(validation.IsDNS1123Label(s)) == 0
	case domDNSSubdomain:
		return len(validation.IsDNS1123Subdomain(s)) == 0
	case domEnvName:
		return len(validation.IsEnvVarName(s)) == 0 && len(validation.IsCIdentifier(s)) == 0
	case domPortName, domPort:
		return len(validation.IsValidPortName(s)) == 0
	case domAPIVersion:
		return apiVersionRE.MatchString(s)
	case domIntString:
		return intStringRE.MatchString(s)
	case domIP:
		return net.ParseIP(s) != nil
	case domAbsPath:
		return strings.HasPrefix(s, "/") && !strings.Contains(s, "..")
	case domHostPort:
		_, port, err := net.SplitHostPort(s)
		return err == nil && port != ""
	case domIQN:
		return strings.HasPrefix(s, "iqn.") || strings.HasPrefix(s, "eui.") || strings.HasPrefix(s, "naa.")
	}
	return true
}

func isCron(s string) bool {
	switch s {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
		return true
	}
	f := strings.Fields(s)
	if len(f) != 5 && len(f) != 6 {
		return false
	}
	for _, x := range f {
		if !cronFieldRE.MatchString(x) {
			return false
		}
	}
	return true
}

// isNameDomain reports whether d names an object or an item (never empty).
func isNameDomain(d domain) bool {
	switch d {
	case domDNSLabel, domDNSSubdomain, domEnvName, domPortName:
		return true
	}
	return false
}

// meaning is the key under which a property's mined values may be reused for other properties:
// two properties share values only when their keys are equal (a seccomp profile's type does not
// take a backup's type, a volume's name does not take an environment variable's).
func (g *Generator) meaning(p *crd.Property) string {
	d := g.domainOf(p)
	if d == domImage {
		return "image"
	}
	if p.Semantic != nil && p.Semantic.Root != "" && p.Semantic.Type != "" {
		if !strings.Contains(p.Semantic.Type, "#") {
			// A named Go type of the Kubernetes API (SeccompProfileType, HostPathType).
			return d.String() + "|type:" + p.Semantic.Type
		}
		owner, name, _ := coreField(p)
		return d.String() + "|core:" + singular(owner) + "." + name
	}
	name := p.Path.Last()
	return d.String() + "|field:" + ownerName(p) + "." + name
}

// ownerName is the name of the nearest field above p's own name ("volumes" for
// spec.volumes[*].name).
func ownerName(p *crd.Property) string {
	seen := false
	for i := len(p.Path) - 1; i >= 0; i-- {
		if p.Path[i].Kind != crd.Field {
			continue
		}
		if seen {
			return p.Path[i].Key
		}
		seen = true
	}
	return ""
}

// singular folds the owners the core types name differently into one (containers and container,
// initContainers and ephemeralcontainer).
func singular(owner string) string {
	o := strings.ToLower(owner)
	switch o {
	case "initcontainers", "ephemeralcontainers", "ephemeralcontainer", "sidecars":
		return "container"
	case "envvar":
		return "env"
	case "containerport":
		return "ports"
	}
	return strings.TrimSuffix(o, "s")
}

// domainValues returns values of domain d for p, most natural first: shaped like the values the
// pool holds for p (the seed's form) and, for versions, from the list the description gives.
// Images come only from the pool (candidates): nil.
func (c *caseCtx) domainValues(p *crd.Property, d domain) []string {
	var seen []string
	for _, pv := range c.g.pool.Values(p.Path.String()) {
		if s, ok := pv.Value.(string); ok {
			seen = append(seen, s)
		}
	}
	if s, ok := p.Default.(string); ok && p.HasDefault && s != "" {
		seen = append(seen, s)
	}
	switch d {
	case domCron:
		return []string{"0 3 * * *", "*/15 * * * *", "30 2 * * 0", "0 */6 * * *", "15 1 1 * *"}
	case domURL:
		scheme, path := "https", ""
		for _, s := range seen {
			if u, err := url.Parse(s); err == nil && u.Scheme != "" {
				scheme, path = u.Scheme, u.EscapedPath()
				break
			}
		}
		return []string{scheme + "://" + c.word(6) + ".example.com" + path}
	case domDuration:
		return durationValues(seen)
	case domVersion:
		return versionValues(p.Description, seen)
	case domImage:
		return nil
	case domDNSLabel, domDNSSubdomain:
		n := "gauntlet-" + c.word(5)
		if p.MaxLength != nil && *p.MaxLength < int64(len(n)) && *p.MaxLength > 0 {
			n = c.word(int(*p.MaxLength))
		}
		return []string{n}
	case domEnvName:
		return []string{"GAUNTLET_" + strings.ToUpper(c.word(5))}
	case domPortName:
		return []string{"gt-" + c.word(5)}
	case domAPIVersion:
		return []string{"v1"}
	case domIntString:
		if len(seen) > 0 {
			return intStringValues(seen[0])
		}
	case domIP:
		return []string{fmt.Sprintf("10.%d.%d.%d", c.r.IntN(256), c.r.IntN(256), 1+c.r.IntN(254))}
	case domAbsPath:
		return []string{"/gauntlet/" + c.word(5)}
	case domHostPort:
		return []string{fmt.Sprintf("10.0.%d.%d:3260", c.r.IntN(256), 1+c.r.IntN(254))}
	case domIQN:
		return []string{"iqn.2001-04.dev.gauntlet:" + c.word(5)}
	}
	return nil
}

// durationLadder is the durations drawn, in increasing order.
var durationLadder = []time.Duration{
	10 * time.Second, 30 * time.Second, 45 * time.Second, time.Minute, 90 * time.Second, 2 * time.Minute,
	5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 168 * time.Hour,
}

// durationValues returns durations near the seed's (within a factor of 4, else the whole ladder),
// in the seed's form: Go's ("1m30s", "1h0m0s") when a seen value has several units, else one unit
// ("90s", "72h").
func durationValues(seen []string) []string {
	goForm := false
	var ref time.Duration
	for _, s := range seen {
		d, err := time.ParseDuration(s)
		if err != nil {
			continue
		}
		ref = d
		if units := durationUnitRE.FindAllString(s, -1); len(units) > 1 {
			goForm = true
		}
		break
	}
	var out []string
	for _, d := range durationLadder {
		if ref > 0 && (d*4 < ref || d > ref*4) {
			continue
		}
		if goForm {
			out = append(out, d.String())
		} else {
			out = append(out, oneUnit(d))
		}
	}
	return out
}

// oneUnit renders d with its largest exact unit ("90s", "5m", "72h").
func oneUnit(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// versionForm is a version's prefix ("v"), number of numeric parts and suffix ("-management").
type versionForm struct {
	prefix string
	parts  []int
	suffix string
}

func parseVersion(s string) (versionForm, bool) {
	m := versionFormRE.FindStringSubmatch(s)
	if m == nil {
		return versionForm{}, false
	}
	var parts []int
	for _, x := range strings.Split(m[2], ".") {
		n, err := strconv.Atoi(x)
		if err != nil {
			return versionForm{}, false
		}
		parts = append(parts, n)
	}
	return versionForm{prefix: m[1], parts: parts, suffix: m[3]}, true
}

func (v versionForm) String() string {
	s := make([]string, len(v.parts))
	for i, n := range v.parts {
		s[i] = strconv.Itoa(n)
	}
	return v.prefix + strings.Join(s, ".") + v.suffix
}

func (v versionForm) sameForm(w versionForm) bool {
	return v.prefix == w.prefix && len(v.parts) == len(w.parts)
}

// versionValues returns versions for a property: those its description lists (in the seed's form
// when there is a seed value), else neighbours of the seed's version in its form (the next and
// previous patch, the previous minor), else nil.
func versionValues(desc string, seen []string) []string {
	var ref *versionForm
	for _, s := range seen {
		if v, ok := parseVersion(s); ok {
			ref = &v
			break
		}
	}
	var listed []string
	for _, tok := range versionTokRE.FindAllString(desc, -1) {
		v, ok := parseVersion(tok)
		if !ok || (ref != nil && !v.sameForm(*ref)) || containsString(listed, tok) {
			continue
		}
		listed = append(listed, tok)
	}
	if len(listed) > 0 {
		return listed
	}
	if ref == nil {
		return nil
	}
	var out []string
	last := len(ref.parts) - 1
	bump := func(i, delta int) {
		v := versionForm{prefix: ref.prefix, parts: append([]int(nil), ref.parts...), suffix: ref.suffix}
		v.parts[i] += delta
		if v.parts[i] < 0 {
			return
		}
		for j := i + 1; j <= last; j++ {
			v.parts[j] = 0
		}
		out = append(out, v.String())
	}
	bump(last, 1)
	bump(last, -1)
	if last > 0 {
		bump(last-1, -1)
	}
	return out
}

// related returns the values the pool recorded for other properties of p's meaning.
func (c *caseCtx) related(p *crd.Property) []any {
	key := c.g.meaning(p)
	var names []string
	if c.g.domainOf(p) != domImage {
		names = []string{p.Path.Last()}
	}
	self := p.Path.String()
	vals := c.g.pool.Related(key, names, func(path string) bool {
		if path == self {
			return false
		}
		src := c.g.schema.Lookup(path)
		return src != nil && isLeafType(src) && c.g.meaning(src) == key
	})
	if c.g.domainOf(p) == domImage {
		vals = sameProgram(p, vals)
	}
	return vals
}

// sameProgram keeps, of the images mined for other properties, those of the
// repository p's own default names: an image names a program, and a sidecar's
// image property given the main container's image runs the wrong program (a
// Valkey server as the metrics exporter). Without a default every image is
// kept.
func sameProgram(p *crd.Property, vals []any) []any {
	def, ok := p.Default.(string)
	if !p.HasDefault || !ok {
		return vals
	}
	want, ok := imageRepo(def)
	if !ok {
		return vals
	}
	var out []any
	for _, v := range vals {
		if s, ok := v.(string); ok {
			if repo, ok := imageRepo(s); ok && repo == want {
				out = append(out, v)
			}
		}
	}
	return out
}

// imageRepo is the repository an image reference names (normalized: "valkey/valkey:8.0" and
// "docker.io/valkey/valkey:8.1" name one).
func imageRepo(v string) (string, bool) {
	r, err := reference.ParseNormalizedNamed(v)
	if err != nil {
		return "", false
	}
	return r.Name(), true
}

// domainString draws a string of domain d for p that its schema accepts, different from avoid;
// false when there is none.
func (c *caseCtx) domainString(p *crd.Property, d domain, avoid any) (string, bool) {
	var opts []string
	for _, v := range c.domainValues(p, d) {
		if (avoid == nil || v != avoid) && c.g.fits(p, v) && domainAccepts(d, v) {
			opts = append(opts, v)
		}
	}
	if len(opts) == 0 {
		return "", false
	}
	return opts[c.r.IntN(len(opts))], true
}

// port draws a port number for an int-or-string port within p's bounds.
func (c *caseCtx) port(p *crd.Property, avoid any) (any, error) {
	lo, hi := int64(1024), int64(9999)
	if p.Minimum != nil {
		lo = max(1, int64(*p.Minimum))
	}
	if p.Maximum != nil {
		hi = min(65535, int64(*p.Maximum))
	}
	for i := 0; i < 16 && lo <= hi; i++ {
		v := lo + c.r.Int64N(hi-lo+1)
		if avoid == nil || !domainEquals(v, avoid) {
			return v, nil
		}
	}
	return nil, errNoValue
}

func domainEquals(n int64, v any) bool {
	switch x := v.(type) {
	case int64:
		return x == n
	case int:
		return int64(x) == n
	case float64:
		return x == float64(n)
	}
	return false
}

// portName draws a named port for an int-or-string port: one the seed's (or examples') containers
// declare, since a probe or Service naming a port no container has never connects.
func (c *caseCtx) portName(p *crd.Property, avoid any) (any, error) {
	names := c.g.pool.Related("port-names", []string{"name"}, func(path string) bool {
		src := c.g.schema.Lookup(path)
		return src != nil && c.g.domainOf(src) == domPortName
	})
	var opts []any
	for _, v := range names {
		if s, ok := v.(string); ok && s != avoid && c.g.fits(p, s) && domainAccepts(domPortName, s) {
			opts = append(opts, s)
		}
	}
	if len(opts) == 0 {
		return nil, errSkip
	}
	return opts[c.r.IntN(len(opts))], nil
}

// fallbackImage is the image a container gets when neither the seed, the examples nor the target
// offer one: a real public image (the embedded cluster runs busybox with the host's shell tools),
// never a made-up reference that cannot be pulled.
const fallbackImage = "busybox:1.36"

// isReferenceName reports whether f, of domain d, names the object a core type refers to (a
// ConfigMap volume's name, a Secret key selector's name): Kubernetes requires it though the CRD
// may not.
func isReferenceName(f *crd.Property, d domain) bool {
	if d != domDNSSubdomain {
		return false
	}
	_, name, ok := coreField(f)
	// Not a class or an account: naming one that does not exist breaks the pod.
	return ok && (name == "name" || name == "secretName" || name == "claimName")
}
