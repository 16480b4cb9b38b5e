package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
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

// maxDiffCells bounds the LCS table; larger inputs are shown as two blocks.
const maxDiffCells = 1 << 20

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

// diffLines is a longest-common-subsequence line diff.
func diffLines(a, b []string) []DiffLine {
	// Trim the common prefix and suffix first: most diffs are small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]DiffLine, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		out = append(out, DiffLine{DiffSame, l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if (len(ma)+1)*(len(mb)+1) > maxDiffCells {
		for _, l := range ma {
			out = append(out, DiffLine{DiffExpected, l})
		}
		for _, l := range mb {
			out = append(out, DiffLine{DiffActual, l})
		}
	} else {
		out = append(out, lcsDiff(ma, mb)...)
	}
	for _, l := range a[len(a)-suf:] {
		out = append(out, DiffLine{DiffSame, l})
	}
	return out
}

func lcsDiff(a, b []string) []DiffLine {
	n, m := len(a), len(b)
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, DiffLine{DiffSame, a[i]})
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, DiffLine{DiffExpected, a[i]})
			i++
		default:
			out = append(out, DiffLine{DiffActual, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffLine{DiffExpected, a[i]})
	}
	for ; j < m; j++ {
		out = append(out, DiffLine{DiffActual, b[j]})
	}
	return out
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
