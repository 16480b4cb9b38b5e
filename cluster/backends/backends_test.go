package backends

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

func TestOpenUnknownNameListsTheBackEnds(t *testing.T) {
	_, err := Open(context.Background(), "minikube", Options{})
	if err == nil {
		t.Fatal("Open(minikube) succeeded; want an error naming the known back ends")
	}
	for _, want := range append([]string{`"minikube"`}, Names()...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// writeKubeconfig writes a kubeconfig of a cluster at server (never reached).
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "kubeconfig")
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + server + "}\n" +
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestOpenEachKnownName(t *testing.T) {
	k := writeKubeconfig(t, "https://127.0.0.1:1")
	for _, name := range Names() {
		o := Options{StateRoot: t.TempDir()}
		if name == Kubeconfig {
			o.Kubeconfig = k
		}
		b, err := Open(context.Background(), name, o)
		if err != nil {
			t.Fatalf("Open(%s): %v", name, err)
		}
		if b.Name() != name {
			t.Errorf("Open(%s).Name() = %q", name, b.Name())
		}
	}
	b, err := Open(context.Background(), "", Options{})
	if err != nil || b.Name() != Default {
		t.Fatalf("Open(\"\") = %v, %v; want the default back end %s", b, err, Default)
	}
}

func TestOpenRefusesOptionsTheBackEndCannotHonour(t *testing.T) {
	_, err := Open(context.Background(), Kind, Options{MappingFile: "map.yaml", Nodes: 2})
	if err == nil || !strings.Contains(err.Error(), "image-mapping file") || !strings.Contains(err.Error(), "node count") {
		t.Fatalf("Open(kind, mapping file, nodes) = %v; want an error naming both options", err)
	}
}

func TestOpenChecksTheMappingFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "map.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n- images: [x]\n  bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), Local, Options{MappingFile: bad}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Open(local, a mapping file with an unknown field) = %v; want an error naming the field", err)
	}
}

func TestRecordedListsEveryBackEndOnAnEmptyRoot(t *testing.T) {
	root := t.TempDir()
	seen := map[string]bool{}
	for _, b := range Recorded(root, nil) {
		seen[b.Name()] = true
		infos, err := b.List(context.Background())
		if err != nil || len(infos) != 0 {
			t.Errorf("%s: List on an empty state root = %v, %v", b.Name(), infos, err)
		}
	}
	for _, n := range []string{Local, Kind} {
		if !seen[n] {
			t.Errorf("Recorded leaves out %s", n)
		}
	}
	var _ []cluster.Backend = Recorded(root, nil)
}

func TestOpenKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	if _, err := Open(context.Background(), Kubeconfig, Options{}); !errors.Is(err, cluster.ErrUnavailable) || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("Open(kubeconfig) without a kubeconfig = %v; want ErrUnavailable naming --kubeconfig", err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Open(context.Background(), Kubeconfig, Options{Kubeconfig: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(kubeconfig, a missing file) = %v; want an error naming the file", err)
	}
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "https://127.0.0.1:1"))
	if _, err := Open(context.Background(), Kubeconfig, Options{}); err != nil {
		t.Errorf("Open(kubeconfig) with $KUBECONFIG set: %v", err)
	}
	if _, err := Open(context.Background(), Kubeconfig, Options{MappingFile: "m.yaml"}); err == nil || !strings.Contains(err.Error(), "image-mapping file") {
		t.Errorf("Open(kubeconfig, an image-mapping file) = %v; want an error naming it", err)
	}
	if _, err := Open(context.Background(), Local, Options{Kubeconfig: "k"}); err == nil || !strings.Contains(err.Error(), "--backend kubeconfig") {
		t.Errorf("Open(local, a kubeconfig) = %v; want an error pointing at --backend kubeconfig", err)
	}
}

// TestKubeconfigCreateNeedsAnAnsweringCluster: a view of a cluster that does not
// answer is refused, naming the server, and nothing stays recorded.
func TestKubeconfigCreateNeedsAnAnsweringCluster(t *testing.T) {
	root := t.TempDir()
	b, err := Open(context.Background(), Kubeconfig, Options{StateRoot: root, Kubeconfig: writeKubeconfig(t, "https://127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(context.Background(), "v1"); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Create on a cluster that does not answer = %v; want an error naming its server", err)
	}
	if infos, err := b.List(context.Background()); err != nil || len(infos) != 0 {
		t.Fatalf("List after a failed Create = %v, %v; want nothing", infos, err)
	}
}
