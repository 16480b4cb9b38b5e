//go:build tools

// Package tools pins the Chaos Mesh commands build.sh builds; it is never compiled.
package tools

import (
	_ "github.com/chaos-mesh/chaos-mesh/cmd/chaos-controller-manager"
	_ "github.com/chaos-mesh/chaos-mesh/cmd/chaos-daemon"
)
