// Package doccheck checks the repository's Markdown pages (README.md and docs/*.md):
// every relative link resolves to a file, and every anchor to a heading of its page;
// the README stays a newcomer's page (at most MaxReadmeLines lines); and no line
// narrates the project's history (an issue number, a date, a working session, a load
// average) — the pages describe the code. Its test runs the check on the repository,
// so `make test` fails on a broken page.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// MaxReadmeLines is the most lines README.md may have.
const MaxReadmeLines = 200

// Problem is one thing wrong with a page, at a line (1-based; 0: the whole file).
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
}

// Pages lists the pages Check reads under root: README.md and docs/*.md, relative
// to root, sorted.
func Pages(root string) ([]string, error) {
	pages := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("list docs pages: %w", err)
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		pages = append(pages, rel)
	}
	sort.Strings(pages[1:])
	return pages, nil
}

var (
	// linkRe matches an inline link or image: [text](target) or [text](target "title").
	linkRe = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpanRe matches an inline code span, whose brackets are not links.
	codeSpanRe = regexp.MustCompile("`[^`]*`")
	schemeRe   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	headingRe  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// history is what no line may say: the pages describe the code, not its history.
var history = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(?i)\bissues?\s*#?\d+`), "names an issue number"},
	{regexp.MustCompile(`(?i)\bsessions?\b`), "names a working session"},
	{regexp.MustCompile(`\b20\d\d-[01]\d-[0-3]\d\b`), "names a date"},
	{regexp.MustCompile(`(?i)\bload averages?\b`), "quotes a load average (say what machine and command instead)"},
}

// Check reads the pages (paths relative to root) and returns what is wrong with them.
func Check(root string, pages []string) ([]Problem, error) {
	anchors := map[string]map[string]bool{} // page path (cleaned, relative to root) → anchors
	lines := map[string][]string{}
	for _, p := range pages {
		ls, err := readLines(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		lines[filepath.Clean(p)] = ls
	}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		ls, ok := lines[rel]
		if !ok {
			var err error
			if ls, err = readLines(filepath.Join(root, rel)); err != nil {
				return nil, err
			}
		}
		a := Anchors(ls)
		anchors[rel] = a
		return a, nil
	}
	var probs []Problem
	for _, p := range pages {
		rel := filepath.Clean(p)
		ls := lines[rel]
		if rel == "README.md" && len(ls) > MaxReadmeLines {
			probs = append(probs, Problem{p, 0, fmt.Sprintf("%d lines: the README is a newcomer's page of at most %d lines; move detail to docs/", len(ls), MaxReadmeLines)})
		}
		fence := false
		for i, line := range ls {
			n := i + 1
			for _, h := range history {
				if m := h.re.FindString(line); m != "" {
					probs = append(probs, Problem{p, n, fmt.Sprintf("%q %s: describe the code, not its history", m, h.why)})
				}
			}
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fence = !fence
				continue
			}
			if fence {
				continue
			}
			for _, m := range linkRe.FindAllStringSubmatch(codeSpanRe.ReplaceAllString(line, ""), -1) {
				if msg := checkLink(root, rel, m[1], anchorsOf); msg != "" {
					probs = append(probs, Problem{p, n, msg})
				}
			}
		}
	}
	return probs, nil
}

// checkLink says what is wrong with the link target written in page from ("" when
// nothing). External links (with a scheme) are not checked.
func checkLink(root, from, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if schemeRe.MatchString(target) {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	dest := from
	if path != "" {
		if filepath.IsAbs(path) {
			return fmt.Sprintf("link %s: absolute path; link relative to the page", target)
		}
		dest = filepath.Clean(filepath.Join(filepath.Dir(from), path))
		if strings.HasPrefix(dest, "..") {
			return fmt.Sprintf("link %s: leaves the repository", target)
		}
		if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
			return fmt.Sprintf("link %s: %s does not exist", target, dest)
		}
	}
	if frag == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return fmt.Sprintf("link %s: %v", target, err)
	}
	if !a[frag] {
		return fmt.Sprintf("link %s: no heading of %s has the anchor #%s", target, dest, frag)
	}
	return ""
}

// Anchors returns the anchors of a page's headings as GitHub makes them: lower
// case, punctuation dropped, spaces turned into hyphens, a repeated anchor
// suffixed -1, -2, …; headings in fenced code blocks are not headings.
func Anchors(lines []string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		m := headingRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := Slug(m[1])
		if k := seen[s]; k > 0 {
			out[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Slug is GitHub's anchor for a heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read page: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
