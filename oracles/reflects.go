package oracles

// Reflects reports whether value, a field of a state object, reflects the
// desired value of a CR property whose last key is key, as the consistency
// oracle judges it: equal (numbers, quantities, durations and booleans
// normalised), contained for maps and lists, or, in a configuration text or
// an argument list, the value key is set to. Generated Go tests (package
// testkit) judge their consistency invariant with it.
func Reflects(desired any, key string, value any) bool {
	ok, _ := matchValue(desired, key, value)
	return ok
}

// TextValue is the value key is set to in a configuration text ("key value"
// or "key=value" lines, command-line flags) or an argument list.
func TextValue(value any, key string) (string, bool) { return textValue(value, key) }
