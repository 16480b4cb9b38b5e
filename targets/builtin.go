package targets

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/gauntlet-dev/gauntlet/monitors"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// BuiltinNames lists the built-in targets.
var BuiltinNames = []string{"valkey"}

// Builtin returns a built-in target by name, reading its files from the
// Gauntlet repository at repoRoot (the folder holding go.mod).
func Builtin(repoRoot, name string) (*Target, error) {
	if repoRoot == "" {
		return nil, fmt.Errorf("built-in target %s: its files live in the Gauntlet repository, which was not found above the working directory or the gauntlet binary: run from inside the repository or pass --repo DIR", name)
	}
	switch name {
	case "valkey":
		return Valkey(repoRoot)
	}
	return nil, fmt.Errorf("no built-in target %q: built-in targets are %v; or pass a target file", name, BuiltinNames)
}

// Valkey is the bundled Valkey operator: its CRD, the sample ValkeyCluster as
// seed, operator/config/default as deploy manifests (CRDs, RBAC, Deployment),
// the operator pods' selector, and value pools for images.
func Valkey(repoRoot string) (*Target, error) {
	cfg := filepath.Join(repoRoot, "operator", "config")
	t := &Target{
		Name:     "valkey",
		Source:   "builtin:valkey",
		CRDFiles: []string{filepath.Join(cfg, "crd", "bases", "valkey.gauntlet.dev_valkeyclusters.yaml")},
		Kind:     "ValkeyCluster",
		Version:  "v1alpha1",
		Deploy: []DeployStep{{
			Manifests: filepath.Join(cfg, "default"),
			Operator:  true,
			Wait: []WaitCondition{
				{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "valkeyclusters.valkey.gauntlet.dev", Condition: "Established", Timeout: time.Minute},
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "valkey-operator-system", Name: "valkey-operator", Timeout: 3 * time.Minute},
			},
		}},
		Operator: Operator{
			Image:     "ghcr.io/gauntlet-dev/valkey-operator:dev",
			Namespace: "valkey-operator-system",
			Labels:    map[string]string{"app.kubernetes.io/name": "valkey-operator"},
		},
		// Which pod is primary, and the last failover, are history by design: a roll or a failover
		// moves the role, so a rollback or a fresh run may find it elsewhere. (System state and
		// split brain judge the role from the servers themselves.)
		IgnoreFields: []string{
			`Pod/*/metadata.labels["valkey.gauntlet.dev/role"]`,
			"ValkeyCluster/*/status.primary",
			"ValkeyCluster/*/status.lastFailoverReason",
			"ValkeyCluster/*/status.lastFailoverTime",
			"ValkeyCluster/*/status.conditions[*].message",
		},
		// Claims of removed pods are kept (spec.persistence.whenScaled: Retain): history, not a bug.
		DifferentialMasks: []string{"PersistentVolumeClaim/data-*"},
		// spec.restoreFrom names a ValkeyBackup: one that does not exist makes the step a misoperation.
		References: []Reference{{Path: "spec.restoreFrom.backupName", Kind: "ValkeyBackup", APIVersion: "valkey.gauntlet.dev/v1alpha1"}},
		// The password Secret the auth test cases refer to exists in every test namespace.
		Fixtures: []string{filepath.Join(cfg, "samples", "password-secret.yaml")},
		Values: map[string][]any{
			"spec.image":                    {"valkey/valkey:8.0", "valkey/valkey:8.1"},
			"spec.auth.passwordSecret.name": {"valkey-password"},
			"spec.auth.passwordSecret.key":  {"password"},
		},
		// ROLE, INFO replication and CONFIG GET of every pod, and a client writing unique keys
		// with WAIT through the client Service (the system-state, availability and durability oracles).
		SystemMonitor: monitors.NewValkeyMonitor(monitors.ValkeyMonitorOptions{}),
		Workload:      monitors.NewValkeyWorkload(monitors.ValkeyWorkloadOptions{}),
		OracleConfig: oracles.Config{
			// Operator timings leave no trace in any object.
			// The key inside the password Secret leaves no trace in any object (its value does).
			Skip:          []string{"spec.failover", "spec.auth.passwordSecret.key"},
			MapProperties: []string{"spec.config", "spec.service.annotations", "spec.scheduling.nodeSelector"},
			FailureConditions: map[string]string{
				"Ready": "False", "Available": "False", "Degraded": "True", "Failed": "True",
				"PrimaryAvailable": "False", "ConfigApplied": "False",
			},
			FailurePhases: []string{"Failed", "Error", "Degraded", "Unavailable"},
		},
	}
	examples := []string{filepath.Join(cfg, "samples", "valkeycluster-tuned.yaml")}
	if err := t.loadSeedAndExamples(filepath.Join(cfg, "samples", "valkeycluster.yaml"), examples); err != nil {
		return nil, fmt.Errorf("built-in target valkey (repository at %s): %w", repoRoot, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("built-in target valkey (repository at %s): %w", repoRoot, err)
	}
	return t, nil
}
