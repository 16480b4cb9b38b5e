package jsonv

// Dotted field paths ("spec.template.spec.containers[0].image",
// `metadata.labels["app.kubernetes.io/name"]`) are how the campaign names the
// properties a step changed and how the oracles read them back. A map key that
// is not a plain name (letters, digits, '_', '-', '$', '@', ':') is written
// quoted in brackets; ParsePath (path.go) reads that form back.

// KeyNeedsQuote reports whether a map key must be written as ["key"] in a
// dotted path: anything but a plain name, the empty key, and "**" (a pattern).
func KeyNeedsQuote(key string) bool {
	if key == "" || key == "**" {
		return true
	}
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '$', r == '@', r == ':':
		default:
			return true
		}
	}
	return false
}
