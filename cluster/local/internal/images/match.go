package images

import "strings"

// referenceForms returns the strings an image reference is matched under: as
// written, and normalized (tag "latest" when none is given) with the full
// registry name, without the registry, and, for Docker Hub's library images,
// without "library/".
func referenceForms(image string) []string {
	image = strings.TrimSpace(image)
	forms := []string{image}
	add := func(s string) {
		for _, f := range forms {
			if f == s {
				return
			}
		}
		forms = append(forms, s)
	}
	name, digest, _ := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	if tag == "" {
		tag = "latest"
	}
	domain, rest := "", name
	if i := strings.Index(name, "/"); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			domain, rest = first, name[i+1:]
		}
	}
	if domain == "" || domain == "index.docker.io" || domain == "registry-1.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	names := []string{domain + "/" + rest}
	if domain == "docker.io" {
		names = append(names, rest)
		if short, ok := strings.CutPrefix(rest, "library/"); ok {
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
