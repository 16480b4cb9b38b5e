// Package inputgen turns an operator's CRD and a seed CR into the test cases a campaign executes:
// changes of desired state that the API server accepts, that exercise real scenarios, and whose
// predicates are satisfied.
//
// The pipeline:
//
//   - crd (sub-package) loads CRDs strictly (several per file, several versions per CRD) and
//     models the chosen version's schema as a property tree with every constraint.
//   - Semantic inference maps sub-schemas to Kubernetes core types, whose shapes come from the
//     k8s.io/api Go types by reflection (ResourceRequirements, Affinity, PodSecurityContext, ...),
//     and gives primitives name hints (replicas, image, version, storage size, toggles).
//   - A Pool collects candidate values from the target's example CRs, the target itself and,
//     when configured, a language model (FillPoolFromLLM; answers cached in a committed file).
//   - Generator.Plan draws, for every property, primitive test cases by type and constraint and
//     semantic scenarios (scale up then down, unsatisfiable affinity, storage shrink, ...), each
//     labelled Valid or Misoperation. Test cases below an enabled-style toggle, or below a
//     sub-tree a target declared a Dependency for, carry preconditions and a setup.
//   - Every candidate state is checked by LocalValidator, which runs the API server's own code
//     (pruning, defaulting, OpenAPI schema validation, list types, embedded resources, CEL rules
//     with transition rules); invalid candidates are re-drawn, repaired or dropped and counted.
//     DryRunValidator asks a real API server instead when a cluster is at hand.
//   - Core-typed values (a container, an affinity, a claim template, a label selector, …) are
//     judged the way the API server will once the operator renders them: with a CoreValidator
//     (Options.CoreValidator; cluster/apicheck dry-runs on its own API server), each value a
//     valid candidate introduces is wrapped in the smallest real object that carries it (a Pod, a
//     PersistentVolumeClaim, a Service, a PodDisruptionBudget, a Deployment or StatefulSet) and
//     dry-run created. A refusal is repaired from the server's causes (a required field set, a
//     forbidden one removed), else the candidate is drawn again, else the test case becomes a
//     misoperation whose description gives the server's reason. Verdicts are cached.
//   - A seed fixes every choice (math/rand/v2 PCG sources derived per property and generator), so
//     a plan replays exactly. The Plan lists every property with the test cases that change it.
//
// RunGen is the entry point of `gauntlet gen`: it writes plan.json and one YAML file of desired
// states per test case, and prints coverage.
package inputgen
