package backends

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"
	"github.com/gauntlet-dev/gauntlet/internal/testing/testio"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

func TestMain(m *testing.M) {
	if Init() {
		return
	}
	os.Exit(m.Run())
}

// TestE2EKubeconfigBackEnd runs a short clean campaign of the bundled Valkey
// operator with --backend kubeconfig on an embedded cluster that the campaign
// reaches only through a copy of its kubeconfig: steps run, no alarm, pod kills
// go through the API while the kinds that need a chaos tool are reported as not
// injected, and when the campaign ends the cluster is as it was (no test
// namespace, no operator, no CRD) and still runs.
func TestE2EKubeconfigBackEnd(t *testing.T) {
	testenv.NeedE2E(t, ControlPlaneBinDir())
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := operatorbin.Find(root)
	if err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	log := slog.New(slog.NewTextHandler(testio.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	state := t.TempDir()

	// The existing cluster: an embedded one, started here.
	emb, err := Open(ctx, Local, Options{StateRoot: state, OperatorBinary: bin, Nodes: 1, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	c, err := emb.Create(ctx, "gk-"+hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatalf("embedded cluster: %v", err)
	}
	defer func() {
		if err := c.Delete(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("delete the embedded cluster: %v", err)
		}
	}()
	kcfg, err := os.ReadFile(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(k, kcfg, 0o600); err != nil {
		t.Fatal(err)
	}

	existing, err := Open(ctx, Kubeconfig, Options{Kubeconfig: k, StateRoot: state, Log: log, OperatorBinary: bin, BundledOperatorImage: "ignored: the cluster pulls its own"})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := targets.Valkey(root)
	if err != nil {
		t.Fatal(err)
	}
	tg.Seed["spec"] = map[string]any{"replicas": int64(1), "image": "valkey/valkey:8.1", "config": map[string]any{"maxmemory": "100mb"}}
	tg.Properties = []string{"spec.replicas", "spec.config"}
	cases := map[string]bool{"spec.replicas#replicas/scale-up-down": true, "spec.config#config/add-key": true}
	out := filepath.Join(t.TempDir(), "results")
	cfg := campaign.Config{Target: tg, Provider: existing, Workers: 1, Seed: 7, OutDir: out, Progress: testio.LogWriter(t), Stability: time.Second,
		NoMinimize: true, Budget: 2 * time.Minute, Logger: log,
		Faults:     &campaign.FaultOptions{Kinds: []string{campaign.FaultPodKill, campaign.FaultContainerCrash}, Every: 1},
		CaseFilter: func(tc *inputgen.TestCase) bool { return cases[tc.ID] }}
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("done %d of %d planned steps (stopped: %q); fault kinds %v; not injected %v", res.Done, res.Planned, res.Stopped, res.FaultKinds, res.UnsupportedFaults)
	if res.Done == 0 {
		t.Error("no desired-state step ran")
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on the clean operator: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
	}
	if !slices.Equal(res.FaultKinds, []string{campaign.FaultPodKill}) {
		t.Errorf("fault kinds drawn %v; want [%s] (pod kill through the API: the cluster has no Chaos Mesh)", res.FaultKinds, campaign.FaultPodKill)
	}
	var killed []string
	for _, st := range res.Steps {
		for _, f := range st.Faults {
			if f.Kind == campaign.FaultPodKill && f.Unsupported == "" {
				killed = append(killed, strings.Join(f.Targets, ","))
			}
		}
	}
	t.Logf("pods killed through the API: %v", killed)
	if len(killed) == 0 {
		t.Error("no pod kill was injected")
	}
	if len(res.UnsupportedFaults) != 1 || !strings.HasPrefix(res.UnsupportedFaults[0], campaign.FaultContainerCrash+":") {
		t.Errorf("not injected %v; want %s reported", res.UnsupportedFaults, campaign.FaultContainerCrash)
	}

	// The cluster is as it was, and runs.
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the cluster no longer answers after the campaign: %v", err)
	}
	for _, ns := range nss.Items {
		if ns.Labels["gauntlet.dev/campaign"] != "" || ns.Name == tg.Operator.Namespace {
			t.Errorf("namespace %s (%s) is left after the campaign", ns.Name, ns.Status.Phase)
		}
	}
	if _, err := cs.Discovery().ServerResourcesForGroupVersion("valkey.gauntlet.dev/v1alpha1"); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's API valkey.gauntlet.dev/v1alpha1 is still served after the campaign (err %v)", err)
	}
	if infos, err := existing.List(ctx); err != nil || len(infos) != 0 {
		t.Errorf("views still recorded after the campaign: %+v (%v)", infos, err)
	}
}
