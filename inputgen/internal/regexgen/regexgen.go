// Package regexgen draws random strings that match a regular expression. It walks the syntax tree
// of Go's regexp/syntax (the engine the Kubernetes API server validates "pattern" with), so every
// construct the validator accepts can be sampled; each draw is verified against the compiled
// expression, so a returned string always matches.
package regexgen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoMatch is returned when no matching string within the length bounds was found.
var ErrNoMatch = errors.New("no string matching the pattern within the length bounds was found: relax the pattern or the bounds")

// Sampler draws strings matching one pattern.
type Sampler struct {
	pattern string
	re      *regexp.Regexp
	tree    *syntax.Regexp
}

// New parses pattern with Perl syntax, as regexp.Compile does.
func New(pattern string) (*Sampler, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("compile pattern %q: %w", pattern, err)
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("parse pattern %q: %w", pattern, err)
	}
	return &Sampler{pattern: pattern, re: re, tree: tree.Simplify()}, nil
}

// Pattern returns the source pattern.
func (s *Sampler) Pattern() string { return s.pattern }

// Match reports whether v matches the pattern.
func (s *Sampler) Match(v string) bool { return s.re.MatchString(v) }

// Options bound a draw. Zero values mean no bound (MaxLen 0 means unbounded).
type Options struct {
	MinLen int
	MaxLen int
	// Attempts is the number of draws before giving up (default 64).
	Attempts int
}

// Sample draws one string that matches the pattern and respects the length bounds (in runes, as
// the OpenAPI validator counts them).
func (s *Sampler) Sample(r *rand.Rand, o Options) (string, error) {
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = 64
	}
	// Unbounded repetitions add between minExtra and extra repeats beyond their minimum; the
	// budget adapts to the length bounds: too short raises it, too long lowers it.
	extra, minExtra := 3, 0
	for i := 0; i < attempts; i++ {
		g := gen{r: r, extra: extra, minExtra: minExtra}
		var b strings.Builder
		g.emit(&b, s.tree)
		out := b.String()
		n := utf8.RuneCountInString(out)
		switch {
		case n < o.MinLen:
			minExtra++
			extra = max(extra, minExtra+2)
			continue
		case o.MaxLen > 0 && n > o.MaxLen:
			if extra > minExtra {
				extra--
			} else if minExtra > 0 {
				minExtra--
				extra = minExtra
			}
			continue
		}
		if s.re.MatchString(out) {
			return out, nil
		}
	}
	return "", fmt.Errorf("pattern %q, length [%d,%d]: %w", s.pattern, o.MinLen, o.MaxLen, ErrNoMatch)
}

type gen struct {
	r        *rand.Rand
	extra    int // how many repetitions beyond the minimum an unbounded repeat may add
	minExtra int // repetitions always added beyond the minimum of an unbounded repeat
	depth    int
}

const maxDepth = 200

func (g *gen) emit(b *strings.Builder, re *syntax.Regexp) {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > maxDepth {
		return
	}
	switch re.Op {
	case syntax.OpNoMatch:
		// Cannot match; the verification step rejects the draw.
		b.WriteRune(0xFFFD)
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && g.r.IntN(2) == 0 {
				c = unicode.SimpleFold(c)
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.pickClass(re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
		b.WriteByte(alnum[g.r.IntN(len(alnum))])
	case syntax.OpCapture:
		for _, sub := range re.Sub {
			g.emit(b, sub)
		}
	case syntax.OpStar:
		g.repeat(b, re.Sub[0], 0, -1)
	case syntax.OpPlus:
		g.repeat(b, re.Sub[0], 1, -1)
	case syntax.OpQuest:
		g.repeat(b, re.Sub[0], 0, 1)
	case syntax.OpRepeat:
		g.repeat(b, re.Sub[0], re.Min, re.Max)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			g.emit(b, sub)
		}
	case syntax.OpAlternate:
		g.emit(b, re.Sub[g.r.IntN(len(re.Sub))])
	}
}

func (g *gen) repeat(b *strings.Builder, sub *syntax.Regexp, lo, hi int) {
	n := lo
	if hi < 0 {
		n = lo + g.minExtra
		if g.extra > g.minExtra {
			n += g.r.IntN(g.extra - g.minExtra + 1)
		}
	} else if hi > lo {
		span := hi - lo
		if span > g.extra+g.minExtra && g.extra >= 0 {
			span = g.extra + g.minExtra
		}
		n = lo + g.r.IntN(span+1)
	}
	for i := 0; i < n; i++ {
		g.emit(b, sub)
	}
}

// pickClass draws a rune from a class given as inclusive [lo, hi] pairs, preferring printable ASCII
// (readable values that survive YAML and shells) when the class has any.
func (g *gen) pickClass(ranges []rune) rune {
	if len(ranges) == 0 {
		return 0xFFFD
	}
	type rr struct{ lo, hi rune }
	var ascii []rr
	var total, asciiTotal int
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		total += int(hi-lo) + 1
		alo, ahi := max(lo, 0x21), min(hi, 0x7E)
		if alo <= ahi {
			ascii = append(ascii, rr{alo, ahi})
			asciiTotal += int(ahi-alo) + 1
		}
	}
	if asciiTotal == 0 {
		// Allow a space if the class has it, then fall back to the whole class.
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= ' ' && ' ' <= ranges[i+1] {
				return ' '
			}
		}
		k := g.r.IntN(total)
		for i := 0; i+1 < len(ranges); i += 2 {
			size := int(ranges[i+1]-ranges[i]) + 1
			if k < size {
				return ranges[i] + rune(k)
			}
			k -= size
		}
		return ranges[0]
	}
	k := g.r.IntN(asciiTotal)
	for _, a := range ascii {
		size := int(a.hi-a.lo) + 1
		if k < size {
			return a.lo + rune(k)
		}
		k -= size
	}
	return ascii[0].lo
}
