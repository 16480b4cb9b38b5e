package targets

import (
	"reflect"
	"testing"
)

func TestReferencesIn(t *testing.T) {
	tg := &Target{References: []Reference{{Path: "spec.backup.target", Kind: "PersistentVolumeClaim"}}}
	tests := []struct {
		name string
		d    map[string]any
		want []Ref
	}{
		{"none", map[string]any{"spec": map[string]any{"replicas": int64(3), "name": "x"}}, nil},
		{"secret key selector", map[string]any{"spec": map[string]any{"auth": map[string]any{"passwordSecret": map[string]any{"name": "pw", "key": "password"}}}},
			[]Ref{{Path: "spec.auth.passwordSecret.name", APIVersion: "v1", Kind: "Secret", Name: "pw", Key: "password", KeyPath: "spec.auth.passwordSecret.key"}}},
		{"secretName and configMapRef", map[string]any{"spec": map[string]any{
			"tls":  map[string]any{"secretName": "certs"},
			"conf": map[string]any{"configMapRef": map[string]any{"name": "cm"}},
		}}, []Ref{
			{Path: "spec.conf.configMapRef.name", APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
			{Path: "spec.tls.secretName", APIVersion: "v1", Kind: "Secret", Name: "certs"},
		}},
		{"list items keep their index", map[string]any{"spec": map[string]any{"env": []any{
			map[string]any{"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s1", "key": "k"}}},
		}}}, []Ref{{Path: "spec.env[0].valueFrom.secretKeyRef.name", APIVersion: "v1", Kind: "Secret", Name: "s1", Key: "k", KeyPath: "spec.env[0].valueFrom.secretKeyRef.key"}}},
		{"plural holders are not references", map[string]any{"spec": map[string]any{"imagePullSecrets": []any{map[string]any{"name": "reg"}}}}, nil},
		{"declared", map[string]any{"spec": map[string]any{"backup": map[string]any{"target": "claim"}}},
			[]Ref{{Path: "spec.backup.target", APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "claim"}}},
		{"empty names are not references", map[string]any{"spec": map[string]any{"tls": map[string]any{"secretName": ""}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tg.ReferencesIn(tt.d); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReferencesIn = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The built-in Valkey target declares that spec.restoreFrom names a ValkeyBackup.
func TestValkeyTargetRestoreReference(t *testing.T) {
	tg := valkeyTarget(t)
	refs := tg.ReferencesIn(map[string]any{"spec": map[string]any{"restoreFrom": map[string]any{"backupName": "nightly"}}})
	if len(refs) != 1 || refs[0].Kind != "ValkeyBackup" || refs[0].Name != "nightly" || refs[0].APIVersion != "valkey.gauntlet.dev/v1alpha1" {
		t.Fatalf("references = %+v, want the ValkeyBackup nightly", refs)
	}
}

// Fields naming cluster-scoped classes are references too.
func TestReferencesInClasses(t *testing.T) {
	tg := &Target{}
	d := map[string]any{"spec": map[string]any{
		"scheduling":  map[string]any{"priorityClassName": "gauntlet-mwlxn", "runtimeClassName": "gvisor"},
		"persistence": map[string]any{"storageClassName": "fast"},
	}}
	got := tg.ReferencesIn(d)
	want := []Ref{
		{Path: "spec.persistence.storageClassName", APIVersion: "storage.k8s.io/v1", Kind: "StorageClass", Name: "fast"},
		{Path: "spec.scheduling.priorityClassName", APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass", Name: "gauntlet-mwlxn"},
		{Path: "spec.scheduling.runtimeClassName", APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass", Name: "gvisor"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReferencesIn = %+v\nwant %+v", got, want)
	}
}

// TestReferencesCreates: a path declared with creates names an object the
// operator makes (cert-manager's spec.secretName), so it is no reference even
// though its field name would be inferred as one; other inferred ones stay.
func TestReferencesCreates(t *testing.T) {
	tg := &Target{References: []Reference{{Path: "spec.secretName", Creates: true}}}
	d := map[string]any{"spec": map[string]any{"secretName": "example-tls",
		"keystores": map[string]any{"pkcs12": map[string]any{"passwordSecretRef": map[string]any{"name": "pw", "key": "password"}}}}}
	want := []Ref{{Path: "spec.keystores.pkcs12.passwordSecretRef.name", APIVersion: "v1", Kind: "Secret", Name: "pw", Key: "password", KeyPath: "spec.keystores.pkcs12.passwordSecretRef.key"}}
	if got := tg.ReferencesIn(d); !reflect.DeepEqual(got, want) {
		t.Errorf("ReferencesIn = %+v, want %+v", got, want)
	}
	if got := (&Target{}).ReferencesIn(d); len(got) != 2 {
		t.Errorf("without the declaration spec.secretName should be inferred: %+v", got)
	}
}

// TestReferencesNamed: a path declared with named names something other than
// an object (CloudNativePG's plugins, none installed in the test cluster; a
// cert-manager issuer group); a name not among the available ones is
// unavailable (seed 1 judged a plugin the cluster did not have as "not
// reflected" three times).
func TestReferencesNamed(t *testing.T) {
	tg := &Target{References: []Reference{
		{Path: "spec.plugins[].name", Named: "CNPG-I plugin"},
		{Path: "spec.issuerRef.group", Named: "issuer API group", Available: []string{"cert-manager.io"}},
	}}
	d := map[string]any{"spec": map[string]any{
		"plugins":   []any{map[string]any{"name": "barman", "enabled": true}},
		"issuerRef": map[string]any{"name": "ca", "group": "cert-manager.io"},
	}}
	want := []Ref{
		{Path: "spec.issuerRef.group", Named: "issuer API group", Name: "cert-manager.io"},
		{Path: "spec.plugins[0].name", Named: "CNPG-I plugin", Name: "barman", Unavailable: true},
	}
	if got := tg.ReferencesIn(d); !reflect.DeepEqual(got, want) {
		t.Errorf("ReferencesIn = %+v, want %+v", got, want)
	}
	d["spec"].(map[string]any)["issuerRef"].(map[string]any)["group"] = "gauntlet-x1"
	got := tg.ReferencesIn(d)
	if len(got) != 2 || !got[0].Unavailable {
		t.Errorf("an unknown issuer group is available: %+v", got)
	}
}
