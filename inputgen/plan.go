package inputgen

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// PlanFormatVersion is bumped when the plan's JSON layout changes incompatibly.
const PlanFormatVersion = 1

// Plan is everything a campaign needs to exercise a CRD: the seed state, every test case, and per
// property the test cases that change it.
type Plan struct {
	FormatVersion int    `json:"formatVersion"`
	CRD           string `json:"crd"`
	Group         string `json:"group"`
	Version       string `json:"version"`
	Kind          string `json:"kind"`
	// Seed is the random seed the plan was generated with.
	Seed int64 `json:"seed"`
	// Base is the seed CR as declared (minus fields the API server prunes): every test case's
	// changes are relative to it when run from the seed.
	Base map[string]any `json:"base"`
	// Stats summarises coverage, labels and validation.
	Stats Stats `json:"stats"`
	// Properties lists every property with the test cases that cover it.
	Properties []PropertyCoverage `json:"properties"`
	// TestCases in a stable order.
	TestCases []*TestCase `json:"testCases"`
	// Dropped lists generators that never produced a valid candidate, with the last reason.
	Dropped []Dropped `json:"dropped,omitempty"`
	// SeedWarnings lists what the seed checks reported: fields the schema does not declare
	// (dropped, with Options.Lenient) and values the schema allows but scenarios cannot use
	// meaningfully (a negative replica count, a port above 65535, a negative quantity).
	SeedWarnings []string `json:"seedWarnings,omitempty"`
	// PodCapacity is the number of operand pods the test cluster is assumed to hold; test cases
	// whose Pods exceed it are misoperations, held back to the end of the breadth order.
	PodCapacity int `json:"podCapacity,omitempty"`
	// PodFields says how pods are estimated from the schema's replica-like fields, e.g.
	// "spec.nodes × (1 + spec.replicas)"; SeedPods is the estimate for the seed.
	PodFields []string `json:"podFields,omitempty"`
	SeedPods  int      `json:"seedPods,omitempty"`
	// SemanticRoots lists the sub-schemas matched to Kubernetes core types.
	SemanticRoots []semantic.RootMatch `json:"semanticRoots,omitempty"`

	states map[string][]map[string]any
}

// Stats summarises a plan.
type Stats struct {
	// Properties is the number of properties (every schema node below the root except apiVersion,
	// kind, metadata and status, counting array items "[*]" and map values "{*}").
	Properties int `json:"properties"`
	// Covered counts properties changed by at least one kept test case.
	Covered int `json:"covered"`
	// Pinned counts properties no valid desired state can change (required, with a single
	// allowed value); they are listed with a reason and left out of Coverage.
	Pinned int `json:"pinned"`
	// Coverage is Covered/(Properties-Pinned).
	Coverage float64 `json:"coverage"`
	// Effective counts properties whose effective value (an absent one being its default) at
	// least one kept test case changes: setting a default, or a value already in effect, does
	// not count.
	Effective int `json:"effective"`
	// BeyondCapacity counts test cases asking for more pods than PodCapacity.
	BeyondCapacity int `json:"beyondCapacity,omitempty"`
	// SemanticMapped counts properties with an inferred meaning; SemanticShare is its share.
	SemanticMapped int     `json:"semanticMapped"`
	SemanticShare  float64 `json:"semanticShare"`
	TestCases      int     `json:"testCases"`
	Valid          int     `json:"valid"`
	Misoperation   int     `json:"misoperation"`
	// Recreate counts test cases that only apply to a new object.
	Recreate int `json:"recreate"`
	// Redrawn counts candidates rejected by validation (or unusable) and drawn again.
	Redrawn int `json:"redrawn"`
	// Repaired counts candidates made valid by removing an optional field a CEL rule forbids.
	Repaired int `json:"repaired"`
	// Dropped counts test cases given up after every draw was invalid.
	Dropped int `json:"dropped"`
	// RefsRepaired counts valid test cases whose states named something the object does not
	// declare (a volume mount's volume, a container's resource claim, a probe's named port) and
	// were made to name a declared one, declare it, or drop the reference.
	RefsRepaired int `json:"refsRepaired,omitempty"`
	// RefsMisoperation counts test cases labelled misoperations because such a reference dangles
	// and no in-object change can satisfy it (e.g. a resource claim where the schema has no
	// pod-level resourceClaims).
	RefsMisoperation int `json:"refsMisoperation,omitempty"`
	// RuleGuards counts the guards read from x-kubernetes-validations rules (a field only valid
	// when another has a value) turned into dependencies: the guard is set first, as a setup
	// state. RuleGuardsUnsolved counts guards found but not usable (declared inside a list, a
	// condition with no known setup value).
	RuleGuards         int `json:"ruleGuards,omitempty"`
	RuleGuardsUnsolved int `json:"ruleGuardsUnsolved,omitempty"`
	// UncoveredByRule counts uncovered properties whose last candidate a validation rule of the
	// property or an ancestor refused: rules the generator does not solve.
	UncoveredByRule int `json:"uncoveredByRule,omitempty"`
	// Core counts the API server's verdicts on core-typed values (nil when generation ran
	// without a CoreValidator).
	Core *CoreStats `json:"core,omitempty"`
}

// PropertyCoverage lists the test cases that change one property.
type PropertyCoverage struct {
	Path string `json:"path"`
	Type string `json:"type"`
	// Hint and SemanticType are the inferred meaning, if any.
	Hint         string `json:"hint,omitempty"`
	SemanticType string `json:"semanticType,omitempty"`
	// Targeted are the test cases generated for this property.
	Targeted []string `json:"targeted,omitempty"`
	// AlsoChangedBy lists (up to ten) other test cases that change the property's value.
	AlsoChangedBy []string `json:"alsoChangedBy,omitempty"`
	// CoveredBy is the total number of test cases that change the property.
	CoveredBy int  `json:"coveredBy"`
	Covered   bool `json:"covered"`
	// Effective is true when a test case changes the property's effective value.
	Effective bool `json:"effective,omitempty"`
	// Pinned is true when no valid desired state can change the property.
	Pinned bool `json:"pinned,omitempty"`
	// Reason explains why an uncovered property has no test case.
	Reason string `json:"reason,omitempty"`
}

// States returns the desired states a test case declares from the seed (setup first when its
// preconditions do not hold on the seed, then one per step).
func (p *Plan) States(id string) []map[string]any {
	st := p.states[id]
	out := make([]map[string]any, len(st))
	for i, s := range st {
		out[i] = jsonv.CopyMap(s)
	}
	return out
}

// TestCase returns the test case with the given ID, or nil.
func (p *Plan) TestCase(id string) *TestCase {
	for _, tc := range p.TestCases {
		if tc.ID == id {
			return tc
		}
	}
	return nil
}

// WriteJSON writes the plan as indented JSON.
func (p *Plan) WriteJSON(w io.Writer) error {
	p.FormatVersion = PlanFormatVersion
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	return nil
}

// ReadPlan decodes a plan written by WriteJSON. States are rebuilt by applying each test case to
// the base.
func ReadPlan(r io.Reader) (*Plan, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("decode plan: %w", err)
	}
	if p.FormatVersion != PlanFormatVersion {
		return nil, fmt.Errorf("plan format version %d is not supported (want %d): regenerate the plan", p.FormatVersion, PlanFormatVersion)
	}
	normalizeNumbers(p.Base)
	for _, tc := range p.TestCases {
		for i := range tc.Setup {
			tc.Setup[i].Value = jsonv.Normalize(tc.Setup[i].Value)
		}
		for j := range tc.Steps {
			for i := range tc.Steps[j].Changes {
				tc.Steps[j].Changes[i].Value = jsonv.Normalize(tc.Steps[j].Changes[i].Value)
			}
		}
		for i := range tc.Preconditions {
			tc.Preconditions[i].Value = jsonv.Normalize(tc.Preconditions[i].Value)
			tc.Preconditions[i].Default = jsonv.Normalize(tc.Preconditions[i].Default)
		}
	}
	p.states = map[string][]map[string]any{}
	for _, tc := range p.TestCases {
		st, err := tc.Apply(p.Base)
		if err != nil {
			return nil, fmt.Errorf("rebuild states: %w", err)
		}
		p.states[tc.ID] = st
	}
	return &p, nil
}

// ReadPlanFile reads a plan from a file.
func ReadPlanFile(path string) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open plan: %w", err)
	}
	defer f.Close()
	return ReadPlan(f)
}

func normalizeNumbers(m map[string]any) {
	for k, v := range m {
		m[k] = jsonv.Normalize(v)
	}
}

// writeValue writes v as compact JSON (map keys sorted).
func (p *Plan) writeValue(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
