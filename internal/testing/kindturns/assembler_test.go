package kindturns

import (
	"context"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
)

type assembling struct{ got *[]string }

func (assembling) Create(context.Context, string) (cluster.Cluster, error) { return nil, nil }

func (a assembling) WithMappedImages(_ []imagemap.Rule, required, _ []string) (cluster.Provider, error) {
	*a.got = required
	return a, nil
}

// A wrapped kind provider still takes the campaign's image mapping (the
// example operators' images were never assembled on kind without it).
func TestWithMappedImagesPassesThrough(t *testing.T) {
	var got []string
	p, ok := Provider(assembling{got: &got}).(imageAssembler)
	if !ok {
		t.Fatal("the wrapped provider hides WithMappedImages")
	}
	np, err := p.WithMappedImages(nil, []string{"quay.io/jetstack/cert-manager-controller:v1.21.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("the inner provider got %v", got)
	}
	if _, ok := np.(turns); !ok {
		t.Fatalf("the provider with images lost its turns: %T", np)
	}
}
