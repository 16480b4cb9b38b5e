package campaign

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// ErrUnmappedImage is returned before any cluster starts when the target's
// deploy steps run an image that the embedded cluster's image mapping does not
// map: the operator would wait in ImagePullBackOff until the deploy timed out.
var ErrUnmappedImage = errors.New("image not mapped")

// imageMapper is implemented by providers whose clusters run images through an
// image mapping (local.Provider): the campaign hands them the target's rules
// and asks which images they could not run.
type imageMapper interface {
	WithImageRules(rules []imagemap.Rule) cluster.Provider
	UnmappedImages(imgs []string) ([]string, error)
}

// imageAssembler is implemented by providers whose clusters pull images but
// can be given images assembled from host programs where they cannot pull
// (kind.Provider on its offline node image): the campaign hands them the
// target's rules and images.
type imageAssembler interface {
	WithMappedImages(rules []imagemap.Rule, required, optional []string) (cluster.Provider, error)
}

// prepareImages gives the provider the target's image mapping and refuses a
// target whose deploy steps run an image no rule maps, naming the images and
// the fix. A provider that assembles images (kind) gets the rules and the
// target's images; any other is returned unchanged.
func prepareImages(p cluster.Provider, t *targets.Target) (cluster.Provider, error) {
	if a, ok := p.(imageAssembler); ok {
		imgs, err := t.Images()
		if err != nil {
			return nil, err
		}
		// The strings of the seed and the values may name images the operator runs (an
		// operand image): those the rules map are assembled too.
		var strs []string
		collectStrings(t.Seed, &strs)
		for _, vs := range t.Values {
			for _, v := range vs {
				collectStrings(v, &strs)
			}
		}
		np, err := a.WithMappedImages(t.ImageMapping, imgs, strs)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		return np, nil
	}
	m, ok := p.(imageMapper)
	if !ok {
		return p, nil
	}
	p = m.WithImageRules(t.ImageMapping)
	imgs, err := t.Images()
	if err != nil {
		return nil, err
	}
	missing, err := p.(imageMapper).UnmappedImages(imgs)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("target %s: %w: the embedded cluster pulls from no registry, so %s would never start (ImagePullBackOff): add a rule mapping it to a host program (or `simulate: true` for a container that need not run) to the target's imageMapping or to a --image-mapping file, e.g.\n  rules:\n  - images: [%q]\n    entrypoint: [/manager]\n    programs: {/manager: [/path/to/your/operator-binary]}",
			t.Name, ErrUnmappedImage, strings.Join(missing, ", "), pattern(missing[0]))
	}
	return p, nil
}

// pattern is a rule's image pattern for img: its repository, as written, with any tag.
func pattern(img string) string {
	if r, err := reference.Parse(img); err == nil {
		if n, ok := r.(reference.Named); ok {
			return n.Name() + ":*"
		}
	}
	return img
}

// collectStrings appends every string found in v (maps and lists walked) to out.
func collectStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}
