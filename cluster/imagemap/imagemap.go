// Package imagemap is the image mapping both cluster back ends that run host
// programs share (the embedded cluster runs them, kind assembles images of them):
// the rules that say how a container image runs on the cluster's nodes (a host
// program standing for the image's programs, or simulated on purpose), read from
// an image-mapping file (`--image-mapping`) or a target file's imageMapping
// section, and the check that a set of images is mapped before any cluster
// starts. An image that no rule maps cannot be pulled on the embedded cluster
// (ErrImagePull, then ImagePullBackOff).
package imagemap

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/cluster/internal/images"
)

// SimulatedImageIDPrefix starts the status imageID of a container the embedded
// cluster runs simulated (no process: a rule with simulate: true).
const SimulatedImageIDPrefix = images.SimulatedImageIDPrefix

// Rule maps the images matching one of its patterns to a local command, or
// simulates them on purpose; see the fields' documentation.
type Rule = images.Rule

// File is the format of an image-mapping file, and of a target file's
// imageMapping section: {rules: [...]}.
type File = images.File

// Parse decodes an image-mapping file's contents strictly (an unknown field is
// an error) and validates its rules; name is used in messages.
func Parse(data []byte, name string) ([]Rule, error) { return images.Parse(data, name) }

// ReadFile reads and parses the image-mapping file at path; "" gives no rules.
func ReadFile(path string) ([]Rule, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image mapping: %w", err)
	}
	return Parse(data, path)
}

// Validate checks rules that were decoded as part of another document (a
// target file); where names that document in messages.
func Validate(rules []Rule, where string) error {
	if _, err := images.New(rules, images.Options{SearchPath: "/"}); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// Expand prepares rules written in a file of folder dir: in each program
// candidate, ${VAR} and $VAR are replaced by the environment variable's value
// (GAUNTLET_CACHE_DIR defaults to Gauntlet's cache folder, where `make` puts
// the binaries it builds), and a relative path holding a '/' is made absolute
// against dir. A variable that is not set is an error naming it. The rules are
// copied; the input is not changed.
func Expand(rules []Rule, dir string) ([]Rule, error) {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = r
		if r.Programs == nil {
			continue
		}
		progs := make(map[string][]string, len(r.Programs))
		for name, cands := range r.Programs {
			exp := make([]string, len(cands))
			for j, c := range cands {
				v, err := ExpandEnv(c)
				if err != nil {
					return nil, fmt.Errorf("image mapping rule %d (%s): program %q: %w", i+1, label(r), name, err)
				}
				if strings.Contains(v, "/") && !filepath.IsAbs(v) {
					v = filepath.Join(dir, v)
				}
				exp[j] = v
			}
			progs[name] = exp
		}
		out[i].Programs = progs
	}
	return out, nil
}

// ExpandEnv replaces ${VAR} and $VAR in s by the environment variable's value;
// GAUNTLET_CACHE_DIR, when not set, is Gauntlet's cache folder (where `make`
// puts what it builds). A variable that is not set is an error naming it.
func ExpandEnv(s string) (string, error) {
	var missing []string
	v := os.Expand(s, func(k string) string {
		if val, ok := os.LookupEnv(k); ok && val != "" {
			return val
		}
		if k == hoststate.EnvCacheDir {
			return hoststate.CacheDir()
		}
		missing = append(missing, k)
		return ""
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%q uses $%s, which is not set: set it, or write the path out", s, missing[0])
	}
	return v, nil
}

func label(r Rule) string {
	if r.Name != "" {
		return r.Name
	}
	if len(r.Images) > 0 {
		return r.Images[0]
	}
	return "unnamed"
}

// Unmapped returns, sorted and without duplicates, the images among imgs that
// neither rules nor the shipped defaults map (the embedded cluster could not
// pull them). operatorBinary is the bundled operator's binary, as for the cluster.
func Unmapped(rules []Rule, operatorBinary string, imgs []string) ([]string, error) {
	m, err := images.New(append(append([]Rule(nil), rules...), images.DefaultRules(images.Options{OperatorBinary: operatorBinary})...), images.Options{})
	if err != nil {
		return nil, fmt.Errorf("image mapping: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, img := range imgs {
		if img == "" || seen[img] {
			continue
		}
		seen[img] = true
		if _, ok := m.Match(img); !ok {
			out = append(out, img)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Program is a host program (Path) at a path inside an image (Target).
type Program = images.Alias

// User is an account of an image's /etc/passwd (Rule.Users).
type User = images.User

// MatchEach returns, for each of imgs that one of rules (the shipped defaults
// left out) maps, the first rule that does.
func MatchEach(rules []Rule, imgs []string) (map[string]Rule, error) {
	m, err := images.New(rules, images.Options{})
	if err != nil {
		return nil, fmt.Errorf("image mapping: %w", err)
	}
	out := map[string]Rule{}
	for _, img := range imgs {
		if r, ok := m.Match(img); ok {
			out[img] = r
		}
	}
	return out, nil
}

// Passwd is the /etc/passwd of an image that holds users' accounts beside root's.
func Passwd(users []User) string {
	return string(images.Passwd([]byte("root:x:0:0:root:/root:/bin/sh\n"), users))
}

// Group is the /etc/group of an image that holds users' primary groups beside root's.
func Group(users []User) string {
	return string(images.Group([]byte("root:x:0:\n"), users))
}

// ImagePrograms lists the programs an image of rule r holds when assembled from
// host programs for nodes that have only what their images hold (kind without a
// registry): the rule's programs at their image paths and its entrypoint's.
// Programs its processes would find on the host by name are not among them.
func ImagePrograms(r Rule) ([]Program, error) {
	m, err := images.New([]Rule{r}, images.Options{})
	if err != nil {
		return nil, fmt.Errorf("image mapping: %w", err)
	}
	return m.ImagePrograms(r)
}
