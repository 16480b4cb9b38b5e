package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryPages checks README.md and docs/*.md of this repository.
func TestRepositoryPages(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 2 {
		t.Fatalf("pages %v: want README.md and docs/*.md", pages)
	}
	probs, err := Check(root, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// TestCheckFinds: each kind of problem is reported, at its line, and sound pages pass.
func TestCheckFinds(t *testing.T) {
	for _, tc := range []struct {
		name, readme, page string
		want               []string // substrings of the problems, in order
	}{
		{name: "sound",
			readme: "# G\n\nSee [docs](docs/page.md#two-words), [ext](https://example.com), [top](#g).\n",
			page:   "# Page\n\n## Two words\n\n[back](../README.md)\n"},
		{name: "missing file",
			readme: "[x](docs/nope.md)\n", page: "# P\n",
			want: []string{"README.md:1: link docs/nope.md: docs/nope.md does not exist"}},
		{name: "missing anchor",
			readme: "[x](docs/page.md#three)\n", page: "# P\n## Two\n",
			want: []string{"README.md:1: link docs/page.md#three: no heading of docs/page.md has the anchor #three"}},
		{name: "same-page anchor",
			readme: "# G\n[x](#h)\n", page: "# P\n",
			want: []string{"README.md:2: link #h: no heading of README.md has the anchor #h"}},
		{name: "repeated heading",
			readme: "# G\n", page: "# P\n## A\n## A\n[x](#a-1) [y](#a-2)\n",
			want: []string{"docs/page.md:4: link #a-2"}},
		{name: "links in code are not links",
			readme: "`[x](nope.md)`\n```\n[y](nope.md)\n```\n", page: "# P\n"},
		{name: "leaves the repository",
			readme: "[x](../../etc/passwd)\n", page: "# P\n",
			want: []string{"leaves the repository"}},
		{name: "history",
			readme: "Fixed in issue 12.\nMeasured 2026-11-27.\nThis session ran it.\n", page: "load average 6 here\n",
			want: []string{"README.md:1: \"issue 12\"", "README.md:2: \"2026-11-27\"", "README.md:3: \"session\"", "docs/page.md:1: \"load average\""}},
		{name: "long README",
			readme: strings.Repeat("line\n", MaxReadmeLines+1), page: "# P\n",
			want: []string{"201 lines"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "README.md"), []byte(tc.readme), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "docs", "page.md"), []byte(tc.page), 0o644); err != nil {
				t.Fatal(err)
			}
			pages, err := Pages(root)
			if err != nil {
				t.Fatal(err)
			}
			probs, err := Check(root, pages)
			if err != nil {
				t.Fatal(err)
			}
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %v, want %d matching %q", probs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i].String(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, probs[i], w)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"2. The model (from Acto, OAT, Anvil and Kivi)": "2-the-model-from-acto-oat-anvil-and-kivi",
		"Chaos Mesh on kind, offline":                   "chaos-mesh-on-kind-offline",
		"`make test` proves":                            "make-test-proves",
		"Where the code differs from the design":        "where-the-code-differs-from-the-design",
		"kind / embedded — figures":                     "kind--embedded--figures",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}
