package local

import (
	"context"

	cl "github.com/gauntlet-dev/gauntlet/cluster"
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

var _ cl.Cluster = (*Cluster)(nil)
