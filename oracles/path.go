package oracles

import "github.com/gauntlet-dev/gauntlet/internal/jsonv"

// Field paths (dotted, patterns, JSON pointers) are internal/jsonv's: see
// jsonv.ParsePath for the grammar.

// GeneralizePath replaces the list indices of a dotted path by [*]
// ("spec.containers[0].image" → "spec.containers[*].image"), as signatures and
// learned masks use them. A path that does not parse is returned unchanged.
func GeneralizePath(p string) string { return jsonv.GeneralizePath(p) }
