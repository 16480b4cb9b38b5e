package campaign

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// knownImages are the images a target vouches for: every string of its seed,
// examples and value pools, the CRD's string defaults, and what its own image
// rules map. An image field set to anything else was made up by the generator
// (inputgen's fallback busybox:1.36 for a sidecar exporter: a container that
// exits at once, on any real node too) and is a misoperation, not a change a
// user would make.
type knownImages struct {
	once   sync.Once
	known  map[string]bool
	rules  []imagemap.Rule
	target *targets.Target
}

func (k *knownImages) init() {
	k.once.Do(func() {
		k.known = map[string]bool{}
		t := k.target
		if t == nil {
			return
		}
		var strs []string
		collectStrings(t.Seed, &strs)
		for _, e := range t.Examples {
			collectStrings(e, &strs)
		}
		for _, vs := range t.Values {
			for _, v := range vs {
				collectStrings(v, &strs)
			}
		}
		if s, err := t.Schema(); err == nil {
			for _, p := range s.Properties() {
				if d, ok := p.Default.(string); ok && p.HasDefault {
					strs = append(strs, d)
				}
			}
		}
		for _, s := range strs {
			k.known[s] = true
		}
		k.rules = t.ImageMapping
	})
}

// vouched reports whether the target vouches for img.
func (k *knownImages) vouched(img string) bool {
	k.init()
	if k.known[img] {
		return true
	}
	if len(k.rules) == 0 {
		return false
	}
	m, err := imagemap.MatchEach(k.rules, []string{img})
	return err == nil && len(m) > 0
}

// isImageField reports whether a field name holds a container image
// ("image", "exporterImage", "imageName"; not "imagePullPolicy").
func isImageField(key string) bool {
	k := strings.ToLower(key)
	return k == "image" || k == "imagename" || strings.HasSuffix(k, "image") && !strings.HasSuffix(k, "pullimage")
}

// generatedImage says why a desired state is a misoperation when a field the
// step changed sets an image the target does not vouch for (see
// knownImages); empty when every image it sets is vouched for.
func generatedImage(k *knownImages, prev, d model.Object, changed []string) string {
	if k == nil {
		return ""
	}
	var bad []string
	for _, p := range changed {
		v, ok := valueAt(d, p)
		if !ok {
			continue
		}
		pv, _ := valueAt(prev, p)
		walkImages(p, v, pv, func(path, img string) {
			if !k.vouched(img) {
				bad = append(bad, fmt.Sprintf("%s = %q", path, img))
			}
		})
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Strings(bad)
	return fmt.Sprintf("%s: an image neither the target's seed, examples, values, CRD defaults nor image rules name (a generated image; add it to the target's values or image rules to test it)", strings.Join(bad, ", "))
}

// walkImages calls fn for every image field under path p whose value v is a
// non-empty string that differs from the previous value pv.
func walkImages(p string, v, pv any, fn func(path, img string)) {
	switch x := v.(type) {
	case map[string]any:
		pm, _ := pv.(map[string]any)
		for key, e := range x {
			walkImages(p+"."+key, e, pm[key], fn)
		}
	case []any:
		pl, _ := pv.([]any)
		for i, e := range x {
			var pe any
			if i < len(pl) {
				pe = pl[i]
			}
			walkImages(fmt.Sprintf("%s[%d]", p, i), e, pe, fn)
		}
	case string:
		key := p[strings.LastIndexAny(p, ".]")+1:]
		if x != "" && x != pv && isImageField(key) {
			fn(p, x)
		}
	}
}
