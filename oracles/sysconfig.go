package oracles

import (
	"math"
	"strconv"
	"strings"
)

// Effective configuration values: what a server reports (CONFIG GET) is often
// written differently from what users declare. configEquivalent knows the
// well-known equivalences of Valkey and Redis; anything else must match exactly.

// configEquivalent reports whether the effective value got of configuration key
// key means the value want a desired state declares:
//
//   - equal strings, or equal after collapsing runs of white space;
//   - notify-keyspace-events: the same set of event flags, in any order, "A"
//     standing for "g$lshzxetd" (the server reports "Ex" as "xE", "KEA" as "AKE");
//   - client-output-buffer-limit: every class the desired value sets ("replica
//     256mb 64mb 60") has the same limits in the effective value, which lists
//     all classes in bytes ("slave" and "replica" are the same class);
//   - otherwise word by word (multi-valued keys such as save): each pair of
//     words equal, or both memory sizes of the same number of bytes (ParseSize:
//     "100mb" == "104857600", "1g" == "1000000000"), or both decimal numbers of
//     the same value, or both enum-like words equal but for case ("ALLKEYS-LRU"
//     == "allkeys-lru", "YES" == "yes").
func configEquivalent(key, want, got string) bool {
	if want == got {
		return true
	}
	switch strings.ToLower(key) {
	case "notify-keyspace-events":
		w, ok1 := keyspaceEventFlags(want)
		g, ok2 := keyspaceEventFlags(got)
		if ok1 && ok2 {
			return w == g
		}
		return false // flags are case-sensitive ("e" evicted, "E" keyevent): no word rule applies
	case "client-output-buffer-limit":
		w, ok1 := outputBufferLimits(want)
		g, ok2 := outputBufferLimits(got)
		if ok1 && ok2 {
			for class, lim := range w {
				if gl, ok := g[class]; !ok || gl != lim {
					return false
				}
			}
			return true
		}
	}
	wf, gf := strings.Fields(want), strings.Fields(got)
	if len(wf) != len(gf) {
		return false
	}
	for i := range wf {
		if !wordEquivalent(wf[i], gf[i]) {
			return false
		}
	}
	return true
}

func wordEquivalent(a, b string) bool {
	if a == b {
		return true
	}
	if x, ok := ParseSize(a); ok {
		if y, ok := ParseSize(b); ok {
			return x == y
		}
	}
	if x, ok := decimal(a); ok {
		if y, ok := decimal(b); ok {
			return x == y
		}
	}
	return enumLike(a) && enumLike(b) && strings.EqualFold(a, b)
}

// ParseSize parses a memory size the way Valkey and Redis read one (memtoll): an
// integer, optionally negative, followed by an optional unit, case-insensitive —
// b (bytes), k (1000), kb (1024), m (1000²), mb (1024²), g (1000³), gb (1024³).
// ok is false for anything else (decimals, white space inside, other units, no
// digits) and on overflow. Note 1k is 1000 bytes but 1kb is 1024, as Redis defines.
func ParseSize(s string) (bytes int64, ok bool) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	var mul int64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1 << 10
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1 << 20
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1 << 30
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > math.MaxInt64/mul {
		return 0, false
	}
	n *= mul
	if neg {
		n = -n
	}
	return n, true
}

// decimal parses a plain decimal number (no exponent, hex, Inf or NaN).
func decimal(s string) (float64, bool) {
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+') }) >= 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// enumLike: a word of letters, digits, '-' and '_' starting with a letter (no
// dots or slashes: file names and paths stay case-sensitive).
func enumLike(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// keyspaceEventFlags turns a notify-keyspace-events value into a set of flags;
// ok is false for a character that is not a flag.
func keyspaceEventFlags(s string) (uint32, bool) {
	const flags = "g$lshzxetdKEmn"
	const all = "g$lshzxetd" // what "A" stands for
	var set uint32
	for _, c := range s {
		chars := string(c)
		if c == 'A' {
			chars = all
		}
		for _, f := range chars {
			i := strings.IndexRune(flags, f)
			if i < 0 {
				return 0, false
			}
			set |= 1 << i
		}
	}
	return set, true
}

// outputBufferLimits parses "class hard soft seconds ..." into limits by class
// (the last setting of a class wins, as CONFIG SET applies them in order).
func outputBufferLimits(s string) (map[string][3]int64, bool) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f)%4 != 0 {
		return nil, false
	}
	out := map[string][3]int64{}
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		switch class {
		case "slave":
			class = "replica"
		case "normal", "replica", "pubsub":
		default:
			return nil, false
		}
		hard, ok1 := ParseSize(f[i+1])
		soft, ok2 := ParseSize(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil {
			return nil, false
		}
		out[class] = [3]int64{hard, soft, secs}
	}
	return out, true
}
