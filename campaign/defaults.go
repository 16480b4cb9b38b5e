package campaign

import (
	"regexp"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/targets"
)

var (
	// "Defaults to true", "Default: false", "default value is `true`".
	describedDefaultRE = regexp.MustCompile("(?i)\\bdefaults?(?:\\s+value)?(?:\\s+(?:to|is))?\\s*[:=]?\\s*[`\"']?(true|false)\\b")
	// "… unless this field is explicitly set to false": the default is the opposite.
	unlessSetRE = regexp.MustCompile("(?i)\\bunless\\s+(?:this\\s+field\\s+is\\s+|it\\s+is\\s+)?explicitly\\s+set\\s+to\\s+[`\"']?(true|false)\\b")
	// "Enabled by default", "disabled by default".
	byDefaultRE = regexp.MustCompile("(?i)\\b(enabled|disabled)\\s+by\\s+default\\b")
)

// describedDefaults are the effective values of the CRD's properties while
// they are unset, as the schema states them: a schema default, or for a
// boolean its description's "Defaults to true", "… unless explicitly set to
// false", "enabled by default". The consistency oracle then expects no change
// when such a property is set to its default or removed while it held it
// (CloudNativePG seed 3: enablePodAntiAffinity set to true, its default,
// "changed to true but no object of the state changed").
func describedDefaults(s *crd.Schema) map[string]any {
	out := map[string]any{}
	for _, p := range s.Properties() {
		path := p.Path.String()
		if !strings.HasPrefix(path, "spec.") {
			continue
		}
		if p.HasDefault {
			out[path] = p.Default
			continue
		}
		if p.Type != "boolean" || p.Description == "" {
			continue
		}
		if v, ok := describedBool(p.Description); ok {
			out[path] = v
		}
	}
	return out
}

// describedBool reads a boolean's default from its description.
func describedBool(desc string) (bool, bool) {
	if m := unlessSetRE.FindStringSubmatch(desc); m != nil {
		return strings.EqualFold(m[1], "false"), true
	}
	if m := describedDefaultRE.FindStringSubmatch(desc); m != nil {
		return strings.EqualFold(m[1], "true"), true
	}
	if m := byDefaultRE.FindStringSubmatch(desc); m != nil {
		return strings.EqualFold(m[1], "enabled"), true
	}
	return false, false
}

// withDescribedDefaults adds the target CRD's described defaults to the
// oracle configuration's, the target's own winning.
func withDescribedDefaults(t *targets.Target, into map[string]any) map[string]any {
	s, err := t.Schema()
	if err != nil {
		return into
	}
	out := describedDefaults(s)
	for k, v := range into {
		out[k] = v
	}
	return out
}
