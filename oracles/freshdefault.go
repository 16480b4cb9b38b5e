package oracles

import (
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Details of the evidence a consistency finding on a removed property carries:
// the property's own line, and the fields still holding its previous value
// (the whole field, or one configuration line in it).
const (
	removedDetail   = "removed; previously "
	stillDetail     = "still reflects the removed value"
	stillLineDetail = "this field still sets "
)

// IsRemoval reports whether f is a consistency finding that a removed
// property's previous value is still in effect in named fields (the finding
// RemovalDefaulted can answer).
func IsRemoval(f model.Finding) bool {
	if f.Oracle != NameConsistency || len(f.Evidence) < 2 || !strings.HasPrefix(f.Evidence[0].Detail, removedDetail) {
		return false
	}
	for _, ev := range f.Evidence[1:] {
		if ev.Object == "" || ev.Path == "" {
			return false
		}
	}
	return true
}

// RemovalDefaulted reports whether a removal finding (IsRemoval) is answered
// by fresh, a fresh creation of the same desired state rebased onto the judged
// namespace: every field the finding names as still holding the removed value
// holds that same value there. The value is then what the operator gives this
// desired state without the property — its default, which a seed that set the
// property explicitly hid from the baseline comparison — and not a leftover of
// history. A field the fresh creation lacks, or holds differently, keeps the
// finding.
func RemovalDefaulted(f model.Finding, fresh *model.Snapshot) bool {
	if fresh == nil || !IsRemoval(f) {
		return false
	}
	for _, ev := range f.Evidence[1:] {
		obj, ok := fresh.Objects[ev.Object]
		if !ok {
			return false
		}
		p, err := jsonv.ParsePath(ev.Path)
		if err != nil {
			return false
		}
		v, ok := jsonv.GetPath(map[string]any(obj), p)
		if !ok {
			return false
		}
		if key, line := strings.CutPrefix(ev.Detail, stillLineDetail); line {
			lv, found := textValue(v, key)
			if !found || lv != ev.Actual {
				return false
			}
			continue
		}
		if ev.Detail != stillDetail || !sameValue(v, ev.Actual) {
			return false
		}
	}
	return true
}
