package machine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// roleFile is the ClusterRole the operator is deployed with (generated from the
// controller's RBAC markers).
const roleFile = "../../config/rbac/role.yaml"

var loadRole = sync.OnceValues(func() (*rbacv1.ClusterRole, error) {
	b, err := os.ReadFile(roleFile)
	if err != nil {
		return nil, err
	}
	var r rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", roleFile, err)
	}
	return &r, nil
})

// apiGroupOf is the API group of a kind the operator touches.
func apiGroupOf(kind string) string {
	switch kind {
	case "StatefulSet":
		return "apps"
	case "PodDisruptionBudget":
		return "policy"
	case "ValkeyCluster", "ValkeyBackup":
		return "valkey.gauntlet.dev"
	}
	return ""
}

// rbacCheck returns why the operator's ClusterRole forbids req ("" when it
// allows it, or when req is no API request).
func rbacCheck(req Request) string {
	verbs := map[Kind]string{Get: "get", List: "list", Create: "create", Update: "update", UpdateStatus: "update", Delete: "delete"}
	verb, ok := verbs[req.Kind]
	if !ok {
		return ""
	}
	var obj any = req.Object
	if req.Kind == List {
		obj = req.List
	}
	kind := kindOf(obj)
	role, err := loadRole()
	if err != nil {
		return fmt.Sprintf("RBAC: cannot read the operator's role: %v", err)
	}
	resource := strings.ToLower(kind) + "s"
	if req.Kind == UpdateStatus {
		resource += "/status"
	}
	group := apiGroupOf(kind)
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return ""
		}
	}
	return fmt.Sprintf("RBAC: the operator's ClusterRole does not allow %s on %s (group %q): add it to the controller's +kubebuilder:rbac markers and run operator/hack/generate.sh", verb, resource, group)
}

func TestRBACCheck(t *testing.T) {
	if why := rbacCheck(Request{Kind: Get, Object: newCluster(1)}); why != "" {
		t.Errorf("get valkeyclusters: %s", why)
	}
	if why := rbacCheck(Request{Kind: Delete, Object: newCluster(1)}); why == "" {
		t.Error("delete valkeyclusters allowed; the operator must not delete its own custom resources")
	}
}
