package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// DiffOp is one line's role in a diff.
type DiffOp byte

// Diff line roles: a line of both sides, a line only expected, a line only actual.
const (
	DiffSame     DiffOp = ' '
	DiffExpected DiffOp = '-'
	DiffActual   DiffOp = '+'
)

// DiffLine is one line of a diff between an expected and an actual value.
type DiffLine struct {
	Op   DiffOp
	Text string
}

// DiffValues renders expected and actual as indented JSON and diffs them line
// by line ("-" expected, "+" actual). A side that is absent (nil) contributes no lines.
//
// When the values are texts (strings, or absent) and one spans several lines
// (a config file, a script), the texts themselves are diffed line by line.
func DiffValues(expected, actual any) []DiffLine {
	es, eText := textOrNil(expected)
	as, aText := textOrNil(actual)
	if eText && aText && (strings.Contains(es, "\n") || strings.Contains(as, "\n")) {
		return diffLines(textLines(expected, es), textLines(actual, as))
	}
	return diffLines(valueLines(expected), valueLines(actual))
}

func textOrNil(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func textLines(v any, s string) []string {
	if v == nil {
		return nil
	}
	return strings.Split(s, "\n")
}

func valueLines(v any) []string {
	if v == nil {
		return nil
	}
	return strings.Split(prettyValue(v), "\n")
}

// diffLines is a minimal line diff (Myers' algorithm, by go-diff's line
// mode): lines of both sides, lines only expected ("-") and only actual ("+").
func diffLines(a, b []string) []DiffLine {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // exact, hence deterministic, whatever the size
	// Line mode maps each distinct line to one rune; the lines get a newline
	// each so that a last line without one maps like the others.
	ta, tb, lines := dmp.DiffLinesToRunes(joinLines(a), joinLines(b))
	out := make([]DiffLine, 0, len(a)+len(b))
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMainRunes(ta, tb, false), lines) {
		op := DiffSame
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = DiffExpected
		case diffmatchpatch.DiffInsert:
			op = DiffActual
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l != "" {
				out = append(out, DiffLine{op, strings.TrimSuffix(l, "\n")})
			}
		}
	}
	return out
}

// joinLines ends every line with a newline.
func joinLines(l []string) string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// compactValue renders v as compact JSON (strings quoted), falling back to %v.
func compactValue(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// prettyValue renders v as indented JSON, falling back to %v.
func prettyValue(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// isScalar reports whether v renders on one short line.
func isScalar(v any) bool {
	switch v := v.(type) {
	case map[string]any, []any:
		return false
	case string:
		if strings.Contains(v, "\n") {
			return false
		}
	}
	s := compactValue(v)
	return len(s) <= 80 && !strings.Contains(s, "\n")
}

// evidenceLine renders one piece of evidence as a line of text.
func evidenceLine(e model.Evidence) string {
	var parts []string
	where := strings.TrimSpace(e.Object + " " + e.Path)
	if where != "" {
		parts = append(parts, where+":")
	}
	if e.Expected != nil {
		parts = append(parts, "expected "+compactValue(e.Expected))
	}
	if e.Actual != nil {
		sep := "actual "
		if e.Expected != nil {
			parts[len(parts)-1] += ","
		}
		parts = append(parts, sep+compactValue(e.Actual))
	}
	if e.Detail != "" {
		if len(parts) > 0 {
			parts = append(parts, "—")
		}
		parts = append(parts, e.Detail)
	}
	return strings.Join(parts, " ")
}
