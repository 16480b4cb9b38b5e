package conf

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Applied is the operator's record, kept in the ConfigMap next to valkey.conf, of
// what reached the servers.
type Applied struct {
	// Config holds the accepted spec.config entries (as written in the spec):
	// live keys every serving pod accepted, and restart-only keys.
	Config map[string]string `json:"config,omitempty"`
	// Effective holds, for live keys, the value as CONFIG GET reports it once set
	// (servers normalize: "100mb" reads back as "104857600"); drift is measured
	// against it.
	Effective map[string]string `json:"effective,omitempty"`
	// Defaults holds, for live keys, the value before the operator first set it:
	// removing the key from spec.config restores it.
	Defaults map[string]string `json:"defaults,omitempty"`
	// RestartKeys are keys outside the built-in restart-only list that a server
	// refused to change at runtime ("immutable"): they are rolled too.
	RestartKeys []string `json:"restartKeys,omitempty"`
	// Rejected records the keys a server refused, with the value and the image
	// then in use: they are not tried again until one of the two changes.
	Rejected map[string]Rejection `json:"rejected,omitempty"`
}

// Rejection is a spec.config entry a server refused.
type Rejection struct {
	Value  string `json:"value"`
	Reason string `json:"reason"`
	Image  string `json:"image"`
}

// ParseApplied reads the record; an empty string is the empty record.
func ParseApplied(s string) (Applied, error) {
	var a Applied
	if s == "" {
		return a, nil
	}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return Applied{}, fmt.Errorf("read the operator's record %s in the ConfigMap: %w (delete the ConfigMap to rebuild it)", AppliedKey, err)
	}
	return a, nil
}

// Encode writes the record (deterministically).
func (a Applied) Encode() string {
	b, err := json.Marshal(a.normalized())
	if err != nil { // maps of strings always marshal
		panic(err)
	}
	return string(b)
}

func (a Applied) normalized() Applied {
	out := Applied{Config: nonEmpty(a.Config), Effective: nonEmpty(a.Effective), Defaults: nonEmpty(a.Defaults)}
	if len(a.Rejected) > 0 {
		out.Rejected = a.Rejected
	}
	if len(a.RestartKeys) > 0 {
		out.RestartKeys = append([]string(nil), a.RestartKeys...)
		sort.Strings(out.RestartKeys)
	}
	return out
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// Clone returns a deep copy.
func (a Applied) Clone() Applied {
	out := Applied{Config: maps.Clone(a.Config), Effective: maps.Clone(a.Effective), Defaults: maps.Clone(a.Defaults)}
	out.RestartKeys = append([]string(nil), a.RestartKeys...)
	if a.Rejected != nil {
		out.Rejected = make(map[string]Rejection, len(a.Rejected))
		for k, v := range a.Rejected {
			out.Rejected[k] = v
		}
	}
	return out
}

// IsRestartKey reports whether key needs a restart, per the built-in list or
// what a server told.
func (a Applied) IsRestartKey(key string) bool {
	if RestartOnly(key) {
		return true
	}
	for _, k := range a.RestartKeys {
		if k == key {
			return true
		}
	}
	return false
}

// RestartHash fingerprints the restart-only part of the accepted configuration:
// pods whose template carries another hash must restart to apply it.
func (a Applied) RestartHash() string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(a.Config)) {
		if a.IsRestartKey(k) {
			fmt.Fprintf(h, "%s=%s\n", k, a.Config[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Change is what separates spec.config from the record.
type Change struct {
	// Invalid keys are refused without asking a server (key → reason).
	Invalid map[string]string
	// Rejected keys were refused by a server with the same value and image
	// (key → reason): not tried again.
	Rejected map[string]string
	// StaleRejections are recorded rejections that no longer match spec.config
	// or the image: to be forgotten (and the key tried again).
	StaleRejections []string
	// Live are new or changed keys to apply with CONFIG SET.
	Live map[string]string
	// Restart are new or changed restart-only keys: written to the file, then rolled.
	Restart map[string]string
	// RemoveLive are live keys gone from spec.config: their defaults are restored.
	RemoveLive []string
	// RemoveRestart are restart-only keys gone from spec.config.
	RemoveRestart []string
}

// Empty reports whether nothing is to be done (invalid keys aside).
func (c Change) Empty() bool {
	return len(c.Live) == 0 && len(c.Restart) == 0 && len(c.RemoveLive) == 0 && len(c.RemoveRestart) == 0
}

// Diff compares spec.config with the record, for servers running image.
func Diff(spec map[string]string, a Applied, image string) Change {
	c := Change{Invalid: map[string]string{}, Live: map[string]string{}, Restart: map[string]string{}, Rejected: map[string]string{}}
	for _, k := range slices.Sorted(maps.Keys(a.Rejected)) {
		r := a.Rejected[k]
		if v, ok := spec[k]; !ok || v != r.Value || r.Image != image {
			c.StaleRejections = append(c.StaleRejections, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		v := spec[k]
		if err := Validate(k, v); err != nil {
			c.Invalid[k] = err.Error()
			continue
		}
		if r, ok := a.Rejected[k]; ok && r.Value == v && r.Image == image {
			c.Rejected[k] = r.Reason
			continue
		}
		if old, ok := a.Config[k]; ok && old == v {
			continue
		}
		if a.IsRestartKey(k) {
			c.Restart[k] = v
		} else {
			c.Live[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.Config)) {
		if _, ok := spec[k]; ok {
			if _, bad := c.Invalid[k]; !bad {
				continue
			}
		}
		if a.IsRestartKey(k) {
			c.RemoveRestart = append(c.RemoveRestart, k)
		} else {
			c.RemoveLive = append(c.RemoveLive, k)
		}
	}
	return c
}

// WithRejected records that a server refused key=value under image.
func (a Applied) WithRejected(key, value, reason, image string) Applied {
	out := a.Clone()
	if out.Rejected == nil {
		out.Rejected = map[string]Rejection{}
	}
	out.Rejected[key] = Rejection{Value: value, Reason: reason, Image: image}
	return out
}

// WithoutRejected forgets a rejection.
func (a Applied) WithoutRejected(key string) Applied {
	out := a.Clone()
	delete(out.Rejected, key)
	return out
}

// WithRestartChanges returns the record with the restart-only part of c applied
// (such keys need no server's consent: they reach the file and pods roll).
func (a Applied) WithRestartChanges(c Change) Applied {
	out := a.Clone()
	if out.Config == nil {
		out.Config = map[string]string{}
	}
	for k, v := range c.Restart {
		out.Config[k] = v
	}
	for _, k := range c.RemoveRestart {
		delete(out.Config, k)
	}
	return out
}

// WithLive records a live key every serving pod accepted: spec value, the value
// the server reports, and (the first time) the value it had before.
func (a Applied) WithLive(key, specValue, effective, previous string) Applied {
	out := a.Clone()
	if out.Config == nil {
		out.Config = map[string]string{}
	}
	if out.Effective == nil {
		out.Effective = map[string]string{}
	}
	if out.Defaults == nil {
		out.Defaults = map[string]string{}
	}
	if _, ok := out.Defaults[key]; !ok {
		out.Defaults[key] = previous
	}
	out.Config[key] = specValue
	out.Effective[key] = effective
	return out
}

// WithoutLive forgets a live key whose default has been restored everywhere.
func (a Applied) WithoutLive(key string) Applied {
	out := a.Clone()
	delete(out.Config, key)
	delete(out.Effective, key)
	delete(out.Defaults, key)
	return out
}

// WithRestartKey records that a server reported key as immutable and stores it
// as a restart-only key with its spec value.
func (a Applied) WithRestartKey(key, specValue string) Applied {
	out := a.Clone()
	if !out.IsRestartKey(key) {
		out.RestartKeys = append(out.RestartKeys, key)
	}
	if out.Config == nil {
		out.Config = map[string]string{}
	}
	out.Config[key] = specValue
	delete(out.Effective, key)
	delete(out.Defaults, key)
	return out
}

// Drift returns the live keys whose value on a server (CONFIG GET) differs from
// the recorded effective value, sorted. Keys missing from observed are drifted.
func (a Applied) Drift(observed map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a.Effective)) {
		if v, ok := observed[k]; !ok || v != a.Effective[k] {
			out = append(out, k)
		}
	}
	return out
}

// LiveKeys are the recorded live keys, sorted (what drift checks read).
func (a Applied) LiveKeys() []string { return slices.Sorted(maps.Keys(a.Effective)) }
