// Package semantic infers what CRD properties mean. Object sub-schemas are matched structurally
// against Kubernetes core types (ResourceRequirements, Affinity, PodSecurityContext, ...) whose
// shapes are derived by reflection from the k8s.io/api Go types themselves, and primitives get name
// hints (replicas, image, version, storage size, toggles).
package semantic

import (
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kind is the JSON shape of a Go type.
type Kind uint8

// Shape kinds.
const (
	KindAny Kind = iota
	KindObject
	KindArray
	KindMap
	KindString
	KindInteger
	KindNumber
	KindBoolean
	KindQuantity
	KindIntOrString
	KindTime
)

// Shape is the JSON structure of a Go API type: object fields by JSON name, element shapes of
// arrays and maps, and the Go type it came from.
type Shape struct {
	Kind   Kind
	Fields map[string]*Shape
	// Required lists the fields whose JSON tag has no omitempty: the API server requires them
	// (a container's name, a topology spread constraint's maxSkew, a selector requirement's key).
	Required map[string]bool
	Elem     *Shape
	// GoType is the qualified name, e.g. "k8s.io/api/core/v1.Affinity" (empty for builtins).
	GoType string
}

var (
	quantityType = reflect.TypeOf(resource.Quantity{})
	intstrType   = reflect.TypeOf(intstr.IntOrString{})
	timeType     = reflect.TypeOf(metav1.Time{})
	microType    = reflect.TypeOf(metav1.MicroTime{})
	durationType = reflect.TypeOf(metav1.Duration{})
	rawExtType   = reflect.TypeOf(runtime.RawExtension{})
	bytesType    = reflect.TypeOf([]byte(nil))
)

// shaper derives shapes by reflection, memoised per type.
type shaper struct {
	memo map[reflect.Type]*Shape
}

func qualified(t reflect.Type) string {
	if t.Name() == "" || t.PkgPath() == "" {
		return ""
	}
	return t.PkgPath() + "." + t.Name()
}

func (s *shaper) shape(t reflect.Type) *Shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if sh, ok := s.memo[t]; ok {
		return sh
	}
	switch t {
	case quantityType:
		return &Shape{Kind: KindQuantity, GoType: qualified(t)}
	case intstrType:
		return &Shape{Kind: KindIntOrString, GoType: qualified(t)}
	case timeType, microType:
		return &Shape{Kind: KindTime, GoType: qualified(t)}
	case durationType:
		return &Shape{Kind: KindString, GoType: qualified(t)}
	case rawExtType:
		return &Shape{Kind: KindAny, GoType: qualified(t)}
	case bytesType:
		return &Shape{Kind: KindString}
	}
	switch t.Kind() {
	case reflect.String:
		return &Shape{Kind: KindString, GoType: qualified(t)}
	case reflect.Bool:
		return &Shape{Kind: KindBoolean}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Shape{Kind: KindInteger, GoType: qualified(t)}
	case reflect.Float32, reflect.Float64:
		return &Shape{Kind: KindNumber}
	case reflect.Slice, reflect.Array:
		sh := &Shape{Kind: KindArray, GoType: qualified(t)}
		s.memo[t] = sh
		sh.Elem = s.shape(t.Elem())
		return sh
	case reflect.Map:
		sh := &Shape{Kind: KindMap, GoType: qualified(t)}
		s.memo[t] = sh
		sh.Elem = s.shape(t.Elem())
		return sh
	case reflect.Struct:
		sh := &Shape{Kind: KindObject, Fields: map[string]*Shape{}, Required: map[string]bool{}, GoType: qualified(t)}
		s.memo[t] = sh // recursive types see the (filling) shape
		s.addFields(sh, t)
		return sh
	case reflect.Interface:
		return &Shape{Kind: KindAny}
	}
	return &Shape{Kind: KindAny}
}

func (s *shaper) addFields(sh *Shape, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				s.addFields(sh, ft)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		sh.Fields[name] = s.shape(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			sh.Required[name] = true
		}
	}
}

// entry is a catalogue type a sub-schema may match on its own.
type entry struct {
	name  string
	shape *Shape
}

// Catalog holds the shapes of the Kubernetes types inference matches against. It is immutable after
// NewCatalog and safe for concurrent use.
type Catalog struct {
	entries []entry
}

// NewCatalog derives the shapes of the catalogue types by reflection. Types are listed from the most
// to the least specific; ties in similarity go to the earlier one. Types that are ambiguous on their
// own (VolumeResourceRequirements vs ResourceRequirements, ...) are only reached by descending from
// a matched parent and are not listed.
func NewCatalog() *Catalog {
	s := &shaper{memo: map[reflect.Type]*Shape{}}
	types := []any{
		corev1.PodTemplateSpec{},
		corev1.PodSpec{},
		corev1.Container{},
		corev1.ServiceSpec{},
		appsv1.StatefulSetSpec{},
		appsv1.DeploymentSpec{},
		corev1.PersistentVolumeClaim{},
		corev1.PersistentVolumeClaimSpec{},
		corev1.Affinity{},
		corev1.NodeAffinity{},
		corev1.PodAffinity{},
		corev1.PodAntiAffinity{},
		corev1.PodAffinityTerm{},
		corev1.WeightedPodAffinityTerm{},
		corev1.NodeSelectorTerm{},
		corev1.NodeSelectorRequirement{},
		corev1.PreferredSchedulingTerm{},
		corev1.TopologySpreadConstraint{},
		corev1.Toleration{},
		corev1.PodSecurityContext{},
		corev1.SecurityContext{},
		corev1.Capabilities{},
		corev1.SELinuxOptions{},
		corev1.SeccompProfile{},
		corev1.WindowsSecurityContextOptions{},
		corev1.Probe{},
		corev1.Lifecycle{},
		corev1.LifecycleHandler{},
		corev1.HTTPGetAction{},
		corev1.TCPSocketAction{},
		corev1.ExecAction{},
		corev1.GRPCAction{},
		corev1.EnvVar{},
		corev1.EnvVarSource{},
		corev1.EnvFromSource{},
		corev1.ContainerPort{},
		corev1.ServicePort{},
		corev1.Volume{},
		corev1.VolumeMount{},
		corev1.VolumeDevice{},
		corev1.ResourceRequirements{},
		corev1.SecretKeySelector{},
		corev1.ConfigMapKeySelector{},
		corev1.ObjectFieldSelector{},
		corev1.ResourceFieldSelector{},
		corev1.KeyToPath{},
		corev1.PodDNSConfig{},
		corev1.PodDNSConfigOption{},
		corev1.HostAlias{},
		corev1.Sysctl{},
		corev1.TypedLocalObjectReference{},
		corev1.ObjectReference{},
		metav1.LabelSelector{},
		metav1.LabelSelectorRequirement{},
		metav1.ObjectMeta{},
		appsv1.StatefulSetUpdateStrategy{},
		appsv1.RollingUpdateStatefulSetStrategy{},
		appsv1.DeploymentStrategy{},
		appsv1.RollingUpdateDeployment{},
		policyv1.PodDisruptionBudgetSpec{},
	}
	c := &Catalog{}
	for _, v := range types {
		t := reflect.TypeOf(v)
		c.entries = append(c.entries, entry{name: qualified(t), shape: s.shape(t)})
	}
	return c
}

// Types lists the qualified names of the catalogue types.
func (c *Catalog) Types() []string {
	out := make([]string, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e.name)
	}
	return out
}

// FieldShape returns the shape at field (a Semantic.Field path such as
// "template.spec.containers[*].env[*]") inside the catalogue type root, or nil.
func (c *Catalog) FieldShape(root, field string) *Shape {
	sh := c.Shape(root)
	if field == "" || sh == nil {
		return sh
	}
	for _, seg := range strings.Split(field, ".") {
		name := strings.TrimSuffix(strings.TrimSuffix(seg, "[*]"), "{*}")
		if sh == nil || sh.Fields == nil {
			return nil
		}
		sh = sh.Fields[name]
		for rest := seg[len(name):]; sh != nil && rest != ""; rest = rest[3:] {
			sh = sh.Elem
		}
	}
	return sh
}

// Shape returns the shape of a catalogue type by qualified name, or nil.
func (c *Catalog) Shape(name string) *Shape {
	for _, e := range c.entries {
		if e.name == name {
			return e.shape
		}
	}
	return nil
}
