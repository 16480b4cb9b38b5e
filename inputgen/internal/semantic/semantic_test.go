package semantic

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
)

const quantity = `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], pattern: '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'}`

var testCRD = testcrds.CRD("Thing", `
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              clusterSize: {type: integer}
              image: {type: string}
              imagePullPolicy: {type: string}
              version: {type: string}
              apiVersion: {type: string}
              enabled: {type: boolean}
              tlsEnabled: {type: boolean}
              port: {type: integer}
              config: {type: object, x-kubernetes-preserve-unknown-fields: true}
              pair:
                type: object
                properties:
                  name: {type: string}
                  value: {type: string}
              persistence:
                type: object
                properties:
                  size: `+quantity+`
              resources:
                type: object
                properties:
                  limits: {type: object, additionalProperties: `+quantity+`}
                  requests: {type: object, additionalProperties: `+quantity+`}
              affinity:
                type: object
                properties:
                  nodeAffinity:
                    type: object
                    properties:
                      requiredDuringSchedulingIgnoredDuringExecution:
                        type: object
                        properties:
                          nodeSelectorTerms:
                            type: array
                            items:
                              type: object
                              properties:
                                matchExpressions:
                                  type: array
                                  items:
                                    type: object
                                    properties:
                                      key: {type: string}
                                      operator: {type: string}
                                      values: {type: array, items: {type: string}}
                  podAntiAffinity:
                    type: object
                    properties:
                      preferredDuringSchedulingIgnoredDuringExecution:
                        type: array
                        items:
                          type: object
                          properties:
                            weight: {type: integer}
                            podAffinityTerm:
                              type: object
                              properties:
                                topologyKey: {type: string}
                  custom: {type: string}
              tolerations:
                type: array
                items:
                  type: object
                  properties:
                    key: {type: string}
                    operator: {type: string}
                    effect: {type: string}
                    tolerationSeconds: {type: integer}
              securityContext:
                type: object
                properties:
                  runAsUser: {type: integer}
                  runAsNonRoot: {type: boolean}
                  fsGroup: {type: integer}
                  seccompProfile: {type: object, properties: {type: {type: string}}}
              volumeClaimTemplate:
                type: object
                properties:
                  accessModes: {type: array, items: {type: string}}
                  storageClassName: {type: string}
                  resources:
                    type: object
                    properties:
                      requests: {type: object, additionalProperties: `+quantity+`}
              probe:
                type: object
                properties:
                  httpGet: {type: object, properties: {path: {type: string}, port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}}}
                  periodSeconds: {type: integer}
                  failureThreshold: {type: integer}
              selector:
                type: object
                properties:
                  matchLabels: {type: object, additionalProperties: {type: string}}
              env:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
                    value: {type: string}
                    valueFrom:
                      type: object
                      properties:
                        secretKeyRef: {type: object, properties: {name: {type: string}, key: {type: string}}}
`)

func annotated(t *testing.T) (*crd.Schema, Result) {
	t.Helper()
	crds, err := crd.Parse([]byte(testCRD))
	if err != nil {
		t.Fatal(err)
	}
	s, err := crd.NewSchema(crds[0], "")
	if err != nil {
		t.Fatal(err)
	}
	return s, Annotate(NewCatalog(), s)
}

func TestStructuralMatches(t *testing.T) {
	s, res := annotated(t)
	tests := []struct {
		path, typ, field string
	}{
		{"spec.resources", "k8s.io/api/core/v1.ResourceRequirements", ""},
		{"spec.resources.limits", "k8s.io/api/core/v1.ResourceList", "limits"},
		{"spec.resources.limits{*}", "k8s.io/apimachinery/pkg/api/resource.Quantity", "limits{*}"},
		{"spec.affinity", "k8s.io/api/core/v1.Affinity", ""},
		{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[*].matchExpressions[*].operator",
			"k8s.io/api/core/v1.NodeSelectorOperator", "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[*].matchExpressions[*].operator"},
		{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[*]", "k8s.io/api/core/v1.WeightedPodAffinityTerm", "podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[*]"},
		{"spec.tolerations[*]", "k8s.io/api/core/v1.Toleration", ""},
		{"spec.tolerations[*].effect", "k8s.io/api/core/v1.TaintEffect", "effect"},
		{"spec.securityContext", "k8s.io/api/core/v1.PodSecurityContext", ""},
		{"spec.volumeClaimTemplate", "k8s.io/api/core/v1.PersistentVolumeClaimSpec", ""},
		{"spec.volumeClaimTemplate.resources", "k8s.io/api/core/v1.VolumeResourceRequirements", "resources"},
		{"spec.probe", "k8s.io/api/core/v1.Probe", ""},
		{"spec.probe.httpGet.port", "k8s.io/apimachinery/pkg/util/intstr.IntOrString", "httpGet.port"},
		{"spec.selector", "k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelector", ""},
		{"spec.env[*]", "k8s.io/api/core/v1.EnvVar", ""},
		{"spec.env[*].valueFrom.secretKeyRef", "k8s.io/api/core/v1.SecretKeySelector", "valueFrom.secretKeyRef"},
	}
	for _, tt := range tests {
		p := s.Lookup(tt.path)
		if p == nil {
			t.Fatalf("no property %s", tt.path)
		}
		if p.Semantic == nil || p.Semantic.Type != tt.typ || p.Semantic.Field != tt.field {
			t.Errorf("%s: semantic %+v, want type %s field %q", tt.path, p.Semantic, tt.typ, tt.field)
		}
	}
	// A field the core type lacks keeps no structural mapping.
	if p := s.Lookup("spec.affinity.custom"); p.Semantic != nil && p.Semantic.Root != "" {
		t.Errorf("spec.affinity.custom mapped to %+v", p.Semantic)
	}
	// Generic two-field objects are not mapped on their own.
	if p := s.Lookup("spec.pair"); p.Semantic != nil && p.Semantic.Root != "" {
		t.Errorf("spec.pair mapped to %+v", p.Semantic)
	}
	if res.Total != len(s.Properties()) || res.Mapped == 0 || res.Share() <= 0 || res.Share() > 1 {
		t.Errorf("result %+v", res)
	}
	if len(res.Roots) == 0 {
		t.Error("no roots reported")
	}
}

func TestHints(t *testing.T) {
	s, _ := annotated(t)
	tests := []struct{ path, hint string }{
		{"spec.replicas", HintReplicas},
		{"spec.clusterSize", HintReplicas},
		{"spec.image", HintImage},
		{"spec.imagePullPolicy", ""},
		{"spec.version", HintVersion},
		{"spec.apiVersion", ""},
		{"spec.enabled", HintToggle},
		{"spec.tlsEnabled", HintToggle},
		{"spec.port", HintPort},
		{"spec.config", HintConfig},
		{"spec.persistence.size", HintStorageSize},
		{"spec.resources.limits{*}", HintQuantity},
	}
	for _, tt := range tests {
		p := s.Lookup(tt.path)
		got := ""
		if p.Semantic != nil {
			got = p.Semantic.Hint
		}
		if got != tt.hint {
			t.Errorf("%s: hint %q, want %q", tt.path, got, tt.hint)
		}
	}
}

func TestShapesFromReflection(t *testing.T) {
	c := NewCatalog()
	rr := c.Shape("k8s.io/api/core/v1.ResourceRequirements")
	if rr == nil {
		t.Fatal("ResourceRequirements not in catalogue")
	}
	for _, f := range []string{"limits", "requests", "claims"} {
		if rr.Fields[f] == nil {
			t.Errorf("ResourceRequirements lacks %s", f)
		}
	}
	if rr.Fields["limits"].Kind != KindMap || rr.Fields["limits"].Elem.Kind != KindQuantity {
		t.Errorf("limits shape = %+v", rr.Fields["limits"])
	}
	// Inline fields (TypeMeta, ObjectMeta) are flattened by their JSON tags.
	pvc := c.Shape("k8s.io/api/core/v1.PersistentVolumeClaim")
	for _, f := range []string{"apiVersion", "kind", "metadata", "spec"} {
		if pvc.Fields[f] == nil {
			t.Errorf("PersistentVolumeClaim lacks %s", f)
		}
	}
	if pvc.Fields["metadata"].Fields["creationTimestamp"].Kind != KindTime {
		t.Error("metav1.Time not recognised")
	}
	if len(c.Types()) < 40 {
		t.Errorf("catalogue has %d types", len(c.Types()))
	}
}
