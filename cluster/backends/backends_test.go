package backends

import (
	"context"
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

func TestOpenEachKnownName(t *testing.T) {
	for _, name := range Names() {
		b, err := Open(context.Background(), name, Options{StateRoot: t.TempDir()})
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
