package images

import (
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// referenceForms returns the strings an image reference is matched under: as
// written, and normalized by github.com/distribution/reference (tag "latest"
// when none is given) with the full registry name, without the registry, and,
// for Docker Hub's library images, without "library/". A reference that does not
// parse (no runtime could pull it) is matched as written only.
func referenceForms(image string) []string {
	image = strings.TrimSpace(image)
	forms := []string{image}
	add := func(s string) {
		if !slices.Contains(forms, s) {
			forms = append(forms, s)
		}
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return forms
	}
	// index.docker.io is normalized by the parser; registry-1.docker.io, Docker
	// Hub's pull endpoint, is not.
	if reference.Domain(named) == "registry-1.docker.io" {
		if n, err := reference.ParseNormalizedNamed(strings.TrimPrefix(named.String(), "registry-1.docker.io/")); err == nil {
			named = n
		}
	}
	tag := "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}
	digest := ""
	if d, ok := named.(reference.Digested); ok {
		digest = d.Digest().String()
	}
	names := []string{named.Name()}
	if reference.Domain(named) == "docker.io" {
		path := reference.Path(named)
		names = append(names, path)
		if short := reference.FamiliarName(named); short != path {
			names = append(names, short)
		}
	}
	for _, n := range names {
		add(n + ":" + tag)
		if digest != "" {
			add(n + ":" + tag + "@" + digest)
			add(n + "@" + digest)
		}
	}
	return forms
}

// globMatch reports whether s matches pattern, where '*' matches any run of
// characters (including '/') and '?' any single character.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
