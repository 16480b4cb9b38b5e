package oracles

import (
	"errors"
	"fmt"
	"github.com/google/cel-go/cel"
	"math"
	"regexp"
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// Oracle names, as they appear in findings.
const (
	NameHealth       = "health"
	NameConsistency  = "consistency"
	NameDifferential = "differential"
	NameRecovery     = "recovery"
	NameStability    = "stability"
	NameSystemState  = "system-state"
	NameSplitBrain   = "split-brain"
	NameAvailability = "availability"
	NameDurability   = "durability"
)

// Defaults of the OAT-layer oracles' settings (see Config).
const (
	// DefaultSystemConfigPath is where a desired state declares the managed
	// system's configuration: a map of configuration key to value.
	DefaultSystemConfigPath = "spec.config"
	// DefaultRoleLabel is the pod label the bundled Valkey operator publishes a
	// member's role with (its client Service selects DefaultRolePrimaryValue).
	DefaultRoleLabel = "valkey.gauntlet.dev/role"
	// DefaultRolePrimaryValue is the role label's value on the primary.
	DefaultRolePrimaryValue = "primary"
	// DefaultMinAvailability is the least success rate of workload requests
	// during a planned operation (an apply, recreate or rollback step without
	// faults). Transitions on a test cluster last a few seconds: one planned
	// switchover, plus the time clients take to follow the Service's endpoints
	// (1–1.5 s), costs up to a quarter of such a transition's requests (77.6% was
	// measured on a clean two-pod roll). Below half, the service was down for
	// most of the change: every pod restarted at once, the primary restarted
	// before failing over, a failover stuck waiting.
	DefaultMinAvailability = 0.5
	// MinAvailabilityRequests is the least number of workload requests a
	// transition must have for its availability to be judged: with fewer, one
	// failed request moves the rate by more than 10 points, so a figure says
	// nothing (the rate is still returned by Availability).
	MinAvailabilityRequests = 10
)

// Mapping tells the consistency oracle where a CR property lands in the state,
// overriding its search: the property's desired value must be found at Field of
// the objects of Kind (whose name matches the Name glob) in the state reached.
//
// Property is a property path pattern; a mapping also covers the properties
// below it, whose remaining path is appended to Field (spec.resources →
// spec.template.spec.containers[0].resources covers spec.resources.limits.cpu).
// When Field holds a string (a configuration file in a ConfigMap), the property's
// last key is looked up in it as a "key value" line instead.
type Mapping struct {
	Property string `json:"property"`
	Kind     string `json:"kind"`
	// Name is a glob on object names; empty means any object of Kind.
	Name  string `json:"name,omitempty"`
	Field string `json:"field"`
	// Expect, when set, is a CEL expression computing the value Field must hold
	// from the property's value, named value, when the operator derives one from
	// the other (CloudNativePG's startup probe: failureThreshold =
	// "value <= 10 ? 1 : (value + 9) / 10" for spec.startDelay with a 10 s period).
	// Numbers are integers when whole.
	Expect string `json:"expect,omitempty"`
}

// Config configures the built-in oracles. The zero value is usable: every nil
// list or map takes the documented default.
type Config struct {
	// OperatorSelector selects the operator's pods by label (all labels must
	// match); their restarts are reported as operator restarts. Empty: no pod is
	// treated as the operator's (its log is still scanned).
	OperatorSelector map[string]string `json:"operatorSelector,omitempty"`
	// FailureConditions maps a CR status condition type to the status that
	// reports a failure. Nil: DefaultFailureConditions.
	FailureConditions map[string]string `json:"failureConditions,omitempty"`
	// FailurePhases are values of the CR's status.phase that report a failure.
	// Nil: DefaultFailurePhases.
	FailurePhases []string `json:"failurePhases,omitempty"`
	// LogPatterns are extra regular expressions; operator log lines matching one
	// are reported (panics and fatal errors always are).
	LogPatterns []string `json:"logPatterns,omitempty"`

	// Mappings override the consistency oracle's search for some properties.
	Mappings []Mapping `json:"mappings,omitempty"`
	// Skip lists property path patterns the consistency oracle does not judge
	// (properties with no trace in the objects, such as operator timings; a
	// pattern also covers the properties below it). The system-state oracle
	// leaves out the configuration keys they cover.
	Skip []string `json:"skip,omitempty"`
	// Defaults maps property path patterns to the operator's effective value
	// while the property is unset: setting it to that value, or removing it
	// while it holds that value, needs no change of the state (CloudNativePG's
	// affinity.enablePodAntiAffinity: "the operator will define pods
	// anti-affinity unless this field is explicitly set to false"). Campaigns
	// add the defaults the CRD's schema and descriptions state.
	Defaults map[string]any `json:"defaults,omitempty"`
	// SkipRemoval lists property path patterns whose removal the consistency
	// oracle does not judge: the operator applies it only at a later event
	// (cert-manager keeps a certificate's duration until the next issuance
	// when spec.duration is removed; setting it re-issues at once and is judged).
	SkipRemoval []string `json:"skipRemoval,omitempty"`
	// MapProperties lists map-valued properties whose keys are user data
	// (spec.config, spec.nodeSelector): keys are generalized to {*} in signatures.
	MapProperties []string `json:"mapProperties,omitempty"`

	// Masks are extra masks (see Mask) for the differential, recovery and
	// stability oracles, on top of DefaultMasks and the learned Transition.Masks.
	Masks []string `json:"masks,omitempty"`
	// IgnoreKinds are kinds the state oracles leave out. Nil: DefaultIgnoreKinds.
	IgnoreKinds []string `json:"ignoreKinds,omitempty"`
	// TolerateExtra lists objects ("Kind/name-glob") that may exist in the state
	// reached and not in the reference (differential, recovery) without a finding:
	// what Kubernetes keeps on purpose. Nil: DefaultTolerateExtra.
	TolerateExtra []string `json:"tolerateExtra,omitempty"`

	// SystemConfigPath is the field path of the desired state's configuration map
	// (key → value) that the system-state oracle compares with the effective
	// configuration a monitor read from every member. Empty: DefaultSystemConfigPath.
	SystemConfigPath string `json:"systemConfigPath,omitempty"`
	// RoleLabel is the pod label an operator publishes members' roles with, and
	// RolePrimaryValue its value on the primary: the split-brain oracle reports two
	// pods labelled primary at once. Empty: DefaultRoleLabel, DefaultRolePrimaryValue.
	RoleLabel        string `json:"roleLabel,omitempty"`
	RolePrimaryValue string `json:"rolePrimaryValue,omitempty"`
	// DisableServiceSplitBrain turns off the split-brain oracle's check that the
	// client Service never selects two pods at once (on by default).
	DisableServiceSplitBrain bool `json:"disableServiceSplitBrain,omitempty"`
	// MinAvailability is the success rate of workload requests below which a
	// planned operation (an apply, recreate or rollback step without faults) is
	// a finding, between 0 and 1. Zero: DefaultMinAvailability; negative: never.
	MinAvailability float64 `json:"minAvailability,omitempty"`
	// MinAvailabilityUnderFault is the success rate below which a step with
	// injected faults is a finding, between 0 and 1. Zero (the default): never,
	// the rate is only recorded (see Availability).
	MinAvailabilityUnderFault float64 `json:"minAvailabilityUnderFault,omitempty"`
	// DisableReadVisibility turns off the durability oracle's check that a read
	// sees every write acknowledged before it started (on by default).
	DisableReadVisibility bool `json:"disableReadVisibility,omitempty"`

	// Custom oracles (a target's Go functions, see Func) are appended by Default.
	Custom []Oracle `json:"-"`
}

// DefaultFailureConditions: Ready or Available False, Degraded or Failed True.
func DefaultFailureConditions() map[string]string {
	return map[string]string{"Ready": "False", "Available": "False", "Degraded": "True", "Failed": "True"}
}

// DefaultFailurePhases: Failed and Error.
func DefaultFailurePhases() []string { return []string{"Failed", "Error"} }

// DefaultTolerateExtra: PersistentVolumeClaims, which StatefulSets retain after
// scaling in unless told otherwise.
func DefaultTolerateExtra() []string { return []string{"PersistentVolumeClaim/*"} }

// Validate reports every setting that does not parse, naming it.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.LogPatterns {
		if _, err := regexp.Compile(p); err != nil {
			errs = append(errs, fmt.Errorf("oracles: log pattern %q: %w", p, err))
		}
	}
	for _, p := range append(append([]string(nil), c.Skip...), c.SkipRemoval...) {
		if _, err := jsonv.ParsePath(p); err != nil {
			errs = append(errs, fmt.Errorf("oracles: skip: %w", err))
		}
	}
	for p := range c.Defaults {
		if _, err := jsonv.ParsePath(p); err != nil {
			errs = append(errs, fmt.Errorf("oracles: default: %w", err))
		}
	}
	for _, p := range c.MapProperties {
		if _, err := jsonv.ParsePath(p); err != nil {
			errs = append(errs, fmt.Errorf("oracles: map property: %w", err))
		}
	}
	for i, m := range c.Mappings {
		if _, err := m.compile(); err != nil {
			errs = append(errs, fmt.Errorf("oracles: mapping %d: %w", i, err))
		}
	}
	if err := ValidateMasks(c.Masks); err != nil {
		errs = append(errs, fmt.Errorf("oracles: masks: %w", err))
	}
	if c.SystemConfigPath != "" {
		if _, err := jsonv.ParsePath(c.SystemConfigPath); err != nil {
			errs = append(errs, fmt.Errorf("oracles: system config path: %w", err))
		}
	}
	if math.IsNaN(c.MinAvailability) || c.MinAvailability > 1 {
		errs = append(errs, fmt.Errorf("oracles: min availability %v: want a rate up to 1 (0 for the default %v, negative to never alarm)", c.MinAvailability, DefaultMinAvailability))
	}
	if math.IsNaN(c.MinAvailabilityUnderFault) || c.MinAvailabilityUnderFault < 0 || c.MinAvailabilityUnderFault > 1 {
		errs = append(errs, fmt.Errorf("oracles: min availability under fault %v: want a rate between 0 (never alarm) and 1", c.MinAvailabilityUnderFault))
	}
	for _, t := range c.TolerateExtra {
		r, err := parseMask(t)
		if err == nil && !r.whole {
			err = fmt.Errorf("%q names fields, not objects: write Kind/name-glob", t)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("oracles: tolerate extra: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Default returns the built-in oracles configured by cfg — health, consistency,
// differential, recovery, stability, and the OAT-layer system-state, split-brain,
// availability and durability (which do nothing on transitions without monitor
// samples or workload histories), roll safety and the stale view (nothing
// without a fault of the operator's view) — followed by cfg.Custom. Settings that do
// not parse are ignored (check them with Config.Validate first). The built-in
// oracles keep no state between calls: one set serves every worker concurrently.
func Default(cfg Config) []Oracle {
	out := []Oracle{
		NewHealth(cfg),
		NewConsistency(cfg),
		NewDifferential(cfg),
		NewRecovery(cfg),
		NewStability(cfg),
		NewSystemState(cfg),
		NewSplitBrain(cfg),
		NewAvailability(cfg),
		NewDurability(cfg),
		NewRollSafety(cfg),
		StaleView{},
	}
	return append(out, cfg.Custom...)
}

type compiledMapping struct {
	prop   jsonv.Path
	kind   string
	name   string
	field  jsonv.Path
	src    Mapping
	expect cel.Program // nil: the property's own value
}

// expected is the value the mapped field must hold for the property value v.
func (m compiledMapping) expected(v any) (any, error) {
	if m.expect == nil {
		return v, nil
	}
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		v = int64(f)
	}
	out, _, err := m.expect.Eval(map[string]any{"value": v})
	if err != nil {
		return nil, fmt.Errorf("mapping %s: expect %q with value %v: %w", m.src.Property, m.src.Expect, v, err)
	}
	return out.Value(), nil
}

func (m Mapping) compile() (compiledMapping, error) {
	var cm compiledMapping
	if m.Property == "" || m.Kind == "" || m.Field == "" {
		return cm, fmt.Errorf("property, kind and field are required (got %+v)", m)
	}
	p, err := jsonv.ParsePath(m.Property)
	if err != nil {
		return cm, err
	}
	f, err := jsonv.ParsePath(m.Field)
	if err != nil {
		return cm, err
	}
	if m.Name != "" {
		if _, err := parseMask(m.Kind + "/" + m.Name); err != nil {
			return cm, fmt.Errorf("name glob %q: %w", m.Name, err)
		}
	}
	cm = compiledMapping{prop: p, kind: m.Kind, name: m.Name, field: f, src: m}
	if m.Expect != "" {
		env, err := cel.NewEnv(cel.Variable("value", cel.DynType))
		if err != nil {
			return cm, fmt.Errorf("expect: %w", err)
		}
		ast, iss := env.Compile(m.Expect)
		if iss.Err() != nil {
			return cm, fmt.Errorf("expect %q is not a CEL expression over value: %w", m.Expect, iss.Err())
		}
		if cm.expect, err = env.Program(ast); err != nil {
			return cm, fmt.Errorf("expect %q: %w", m.Expect, err)
		}
	}
	return cm, nil
}

func compilePaths(ps []string) []jsonv.Path {
	var out []jsonv.Path
	for _, p := range ps {
		if fp, err := jsonv.ParsePath(p); err == nil {
			out = append(out, fp)
		}
	}
	return out
}

var (
	genRE    = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{5,10}\b`)
	uuidRE   = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	hexRE    = regexp.MustCompile(`0x[0-9a-fA-F]+`)
	digitsRE = regexp.MustCompile(`[0-9]+`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

// normMessage strips what varies from run to run out of a message used in a
// signature: the test namespace, uuids, generated name suffixes, hex addresses,
// numbers; and bounds its length.
func normMessage(s, ns string) string {
	s = replaceWord(s, ns, nsPlaceholder)
	s = uuidRE.ReplaceAllString(s, "<uuid>")
	s = genRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "2456789") { // a generated suffix or template hash
			return "-*"
		}
		return m
	})
	s = hexRE.ReplaceAllString(s, "<addr>")
	s = digitsRE.ReplaceAllString(s, "N")
	s = strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
	return truncate(s, 160)
}

// maxEvidence bounds the evidence of one finding.
const maxEvidence = 25
