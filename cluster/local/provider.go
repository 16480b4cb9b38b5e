package local

import (
	"context"

	cl "github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
)

// Provider creates embedded clusters with a common set of options; it implements
// cluster.Provider.
type Provider struct {
	// Options are used for every cluster; Name is replaced by Create's argument.
	Options Options
}

// Create creates an embedded cluster called name.
func (p Provider) Create(ctx context.Context, name string) (cl.Cluster, error) {
	o := p.Options
	o.Name = name
	return Create(ctx, o)
}

// WithImageRules returns a provider whose clusters try rules (a target's image
// mapping) after the provider's own mapping file and rules, before the shipped
// defaults.
func (p Provider) WithImageRules(rules []imagemap.Rule) cl.Provider {
	q := p
	q.Options.MappingRules = append(append([]imagemap.Rule(nil), p.Options.MappingRules...), rules...)
	return q
}

// UnmappedImages returns the images among imgs that this provider's clusters
// could not run: no rule of its mapping (file, rules, shipped defaults) maps
// them. It starts nothing.
func (p Provider) UnmappedImages(imgs []string) ([]string, error) {
	rules, err := mappingRules(p.Options)
	if err != nil {
		return nil, err
	}
	return imagemap.Unmapped(rules, p.Options.OperatorBinary, imgs)
}

var _ cl.Cluster = (*Cluster)(nil)
