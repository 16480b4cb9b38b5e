// Package images maps a container image to a command on the host, so that the
// embedded cluster's nodes can run pod containers as local processes.
//
// A Mapping is an ordered list of rules; the first rule whose image patterns
// match wins. A rule plays the part of the image: its entrypoint and default
// arguments (ENTRYPOINT and CMD), environment, working directory and user, and
// which host programs stand for the programs the image would contain (for
// example valkey-server, or redis-server where Valkey is not installed). An
// image that no rule matches cannot be pulled (ErrUnmapped), as on a node
// without registry access: its containers wait in ImagePullBackOff. A rule
// with Simulate makes its images' containers report Running and Ready without
// any process, on purpose.
package images

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// SimulatedImageIDPrefix starts the status imageID of a container that runs
// simulated (no process: a mapping rule with simulate: true).
const SimulatedImageIDPrefix = "gauntlet-simulated://"

// ErrNotInstalled is returned by Resolve when a rule matches the image but none
// of the host programs that stand for the container's program is installed.
var ErrNotInstalled = errors.New("no host program for the container's program is installed")

// ErrUnmapped is returned by Resolve for an image that no rule matches: the
// embedded cluster reaches no registry, so the image cannot be pulled.
var ErrUnmapped = errors.New("no image mapping rule matches the image, and the embedded cluster pulls from no registry")

// ErrNoCommand is returned by Resolve when neither the container nor the
// matching rule says what to run.
var ErrNoCommand = errors.New("nothing to run: the container has no command and the mapping rule no entrypoint or cmd")

// DefaultSearchPath is where host programs named without a folder are looked
// up when Options.SearchPath is empty (after the PATH of the current process).
const DefaultSearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// AliasDir is the folder, inside a container, where a program that the image
// would contain but the host lacks is made available under its own name
// (bound to the host program that stands for it), so that scripts calling it
// by name work.
const AliasDir = "/usr/local/bin"

// Rule maps the images that match one of its patterns to a local command.
type Rule struct {
	// Name labels the rule in messages; empty means its first image pattern.
	Name string `json:"name,omitempty"`
	// Images are glob patterns on the image reference: '*' matches any run of
	// characters (including '/'), '?' any one character. A reference is tried
	// in its written form and in its normalized forms with and without the
	// registry, so "redis:*" matches redis, redis:7, library/redis:7 and
	// docker.io/library/redis:7 (a reference without a tag has tag "latest").
	Images []string `json:"images"`
	// Entrypoint is the image's ENTRYPOINT: what runs when the container has no
	// command (followed by the container's args, or by Cmd when it has none).
	Entrypoint []string `json:"entrypoint,omitempty"`
	// Cmd is the image's CMD: the default arguments, used when the container
	// has neither command nor args.
	Cmd []string `json:"cmd,omitempty"`
	// PrependProgram mimics images whose entrypoint script starts their server
	// when the first argument is an option (the official valkey and redis
	// images): when the container has no command and its first argument starts
	// with "-" or ends in ".conf", this program is put in front of the args.
	PrependProgram string `json:"prependProgram,omitempty"`
	// Programs maps a program as the image names it ("valkey-server",
	// "/usr/local/bin/valkey-server", "/manager") to candidate host programs;
	// the first installed candidate wins. A candidate is an absolute path or a
	// name looked up in the search path. Programs that no entry names are
	// looked up on the host by name.
	Programs map[string][]string `json:"programs,omitempty"`
	// Env is the image's default environment; the container's env overrides it.
	Env map[string]string `json:"env,omitempty"`
	// WorkingDir is the image's WORKDIR, used when the container sets none.
	WorkingDir string `json:"workingDir,omitempty"`
	// User is the image's USER as a numeric "uid" or "uid:gid", used when the
	// pod's and container's securityContext set no runAsUser (or runAsGroup).
	User string `json:"user,omitempty"`
	// RootUser mimics images whose entrypoint script, when it starts their
	// server as root, gives the working directory's files to a service user and
	// runs the server as that user (the official valkey and redis images: `find
	// . \! -user valkey -exec chown valkey`, then setpriv or gosu): "uid:gid". It
	// applies when the entrypoint runs (the container sets no command) and
	// starts PrependProgram, or the Cmd's program.
	RootUser string `json:"rootUser,omitempty"`
	// Users are the accounts the image's /etc/passwd and /etc/group define
	// beyond the host's (the official PostgreSQL images' postgres, uid 26):
	// programs that look their user up (initdb, postgres: "could not look up
	// effective user ID") find it. Containers of the image see the host's
	// /etc/passwd and /etc/group with these entries in place of any host entry
	// of the same name or id, and a container running as one of these uids
	// without HOME in its environment gets the account's home, as container
	// runtimes set it from the image's /etc/passwd.
	Users []User `json:"users,omitempty"`
	// Install tells how to install the programs when none is found, e.g.
	// "apt-get install redis-server"; it is part of the error message.
	Install string `json:"install,omitempty"`
	// Simulate forces the containers of matching images to be simulated.
	Simulate bool `json:"simulate,omitempty"`
	// Files are host files and folders (absolute paths) that an image assembled from
	// this rule holds at the same paths, for nodes that have only what their images
	// hold (kind without a registry): the programs and data its processes find by
	// path or on PATH (a PostgreSQL installation). The embedded cluster's containers
	// see the host's files, so it does not read them.
	Files []string `json:"files,omitempty"`
}

// User is an account of an image's /etc/passwd, with its primary group.
type User struct {
	// Name is the login name, also the primary group's name.
	Name string `json:"name"`
	// UID and GID are the user's id and primary group id.
	UID int64 `json:"uid"`
	GID int64 `json:"gid"`
	// Home is the home folder (absolute); empty means "/".
	Home string `json:"home,omitempty"`
	// Shell is the login shell; empty means /bin/sh.
	Shell string `json:"shell,omitempty"`
}

// validate checks one user entry.
func (u User) validate() error {
	if u.Name == "" || strings.ContainsAny(u.Name, ":\n/ ") {
		return fmt.Errorf("user name %q: want a login name without ':', '/', spaces or newlines, such as \"postgres\"", u.Name)
	}
	if u.UID < 0 || u.UID > 1<<32-2 || u.GID < 0 || u.GID > 1<<32-2 {
		return fmt.Errorf("user %q: uid %d or gid %d out of range", u.Name, u.UID, u.GID)
	}
	if u.Home != "" && (!path.IsAbs(u.Home) || strings.ContainsAny(u.Home, ":\n")) {
		return fmt.Errorf("user %q: home %q must be an absolute path without ':'", u.Name, u.Home)
	}
	if strings.ContainsAny(u.Shell, ":\n") {
		return fmt.Errorf("user %q: shell %q must not hold ':' or a newline", u.Name, u.Shell)
	}
	return nil
}

// label is how the rule is named in messages.
func (r *Rule) label() string {
	if r.Name != "" {
		return r.Name
	}
	if len(r.Images) > 0 {
		return r.Images[0]
	}
	return "(unnamed)"
}

// EnvList is the rule's environment as KEY=VALUE, sorted by key (nil when empty).
func (r Rule) EnvList() []string {
	var out []string
	for k, v := range r.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// validate checks one rule; n is its 1-based position.
func (r *Rule) validate(n int) error {
	if len(r.Images) == 0 && len(r.Entrypoint) == 0 && len(r.Cmd) == 0 && len(r.Programs) == 0 &&
		len(r.Env) == 0 && r.WorkingDir == "" && r.User == "" && !r.Simulate && r.PrependProgram == "" {
		return fmt.Errorf("rule %d is empty: give \"images\" (glob patterns) and what to run (\"entrypoint\", \"cmd\", \"programs\") or \"simulate: true\"", n)
	}
	if len(r.Images) == 0 {
		return fmt.Errorf("rule %d (%s): \"images\" is empty: give at least one glob pattern such as \"myorg/myimage:*\"", n, r.label())
	}
	for _, p := range r.Images {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("rule %d (%s): an image pattern is empty", n, r.label())
		}
	}
	if r.Simulate && (len(r.Entrypoint) > 0 || len(r.Cmd) > 0 || len(r.Programs) > 0 || r.PrependProgram != "") {
		return fmt.Errorf("rule %d (%s): \"simulate: true\" runs nothing, so it cannot be combined with entrypoint, cmd, prependProgram or programs", n, r.label())
	}
	for name, cands := range r.Programs {
		if name == "" {
			return fmt.Errorf("rule %d (%s): a \"programs\" entry has an empty program name", n, r.label())
		}
		if len(cands) == 0 {
			return fmt.Errorf("rule %d (%s): program %q has no candidates: list host programs, e.g. [%s]", n, r.label(), name, path.Base(name))
		}
		for _, c := range cands {
			if c != "" && strings.Contains(c, "/") && !path.IsAbs(c) {
				return fmt.Errorf("rule %d (%s): candidate %q for program %q must be an absolute path or a bare name", n, r.label(), c, name)
			}
		}
	}
	for _, f := range r.Files {
		if !path.IsAbs(f) {
			return fmt.Errorf("rule %d (%s): files: %q must be an absolute path", n, r.label(), f)
		}
	}
	if r.WorkingDir != "" && !path.IsAbs(r.WorkingDir) {
		return fmt.Errorf("rule %d (%s): workingDir %q must be an absolute path", n, r.label(), r.WorkingDir)
	}
	if _, _, err := parseUser(r.User); err != nil {
		return fmt.Errorf("rule %d (%s): %w", n, r.label(), err)
	}
	if _, _, err := parseUser(r.RootUser); err != nil {
		return fmt.Errorf("rule %d (%s): rootUser: %w", n, r.label(), err)
	}
	names, uids := map[string]bool{}, map[int64]bool{}
	for _, u := range r.Users {
		if err := u.validate(); err != nil {
			return fmt.Errorf("rule %d (%s): users: %w", n, r.label(), err)
		}
		if names[u.Name] || uids[u.UID] {
			return fmt.Errorf("rule %d (%s): users: %q (uid %d) is listed twice", n, r.label(), u.Name, u.UID)
		}
		names[u.Name], uids[u.UID] = true, true
	}
	return nil
}

// parseUser parses "uid" or "uid:gid"; empty gives nils.
func parseUser(s string) (*int64, *int64, error) {
	if s == "" {
		return nil, nil, nil
	}
	us, gs, hasGroup := strings.Cut(s, ":")
	uid, err := strconv.ParseInt(us, 10, 64)
	if err != nil || uid < 0 || uid > 1<<32-2 {
		return nil, nil, fmt.Errorf("user %q: want a numeric uid or uid:gid such as \"65532:65532\"", s)
	}
	if !hasGroup {
		return &uid, nil, nil
	}
	gid, err := strconv.ParseInt(gs, 10, 64)
	if err != nil || gid < 0 || gid > 1<<32-2 {
		return nil, nil, fmt.Errorf("user %q: want a numeric uid or uid:gid such as \"65532:65532\"", s)
	}
	return &uid, &gid, nil
}

// Options configure a Mapping.
type Options struct {
	// OperatorBinary is the path of the bundled Valkey operator's binary (the
	// one `make build` writes), used for the operator's image.
	OperatorBinary string
	// SearchPath is the colon-separated list of host folders where programs
	// named without a folder are looked up; empty means the PATH of the
	// current process followed by DefaultSearchPath.
	SearchPath string
}

// Mapping resolves images to local commands. It is safe for concurrent use.
type Mapping struct {
	rules  []Rule
	search []string
}

// New returns a mapping with rules in order (first match wins) and nothing else;
// most callers want Default or Load, which add the shipped defaults.
func New(rules []Rule, opts Options) (*Mapping, error) {
	for i := range rules {
		if err := rules[i].validate(i + 1); err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
	}
	sp := opts.SearchPath
	if sp == "" {
		sp = os.Getenv("PATH") + ":" + DefaultSearchPath
	}
	var search []string
	seen := map[string]bool{}
	for _, d := range filepath.SplitList(sp) {
		if d == "" || !filepath.IsAbs(d) || seen[d] {
			continue
		}
		seen[d] = true
		search = append(search, d)
	}
	return &Mapping{rules: append([]Rule(nil), rules...), search: search}, nil
}

// Default returns the shipped defaults (DefaultRules).
func Default(opts Options) *Mapping {
	m, err := New(DefaultRules(opts), opts)
	if err != nil {
		// The shipped rules are valid; TestDefaultRulesValid keeps them so.
		panic(fmt.Sprintf("images: invalid default rules: %v", err))
	}
	return m
}

// Rules returns a copy of the mapping's rules in order.
func (m *Mapping) Rules() []Rule { return append([]Rule(nil), m.rules...) }

// Alias makes a host program available inside a container at Target.
type Alias struct {
	// Target is the absolute path inside the container (AliasDir/name for a
	// program named without a folder).
	Target string
	// Path is the host program bound there.
	Path string
}

// Resolution is what to run for one container.
type Resolution struct {
	// Simulated means no process runs; Message says why.
	Simulated bool
	// Message explains a simulated container: "simulated: mapping rule R
	// simulates image X".
	Message string
	// Rule names the rule that matched; empty when none did.
	Rule string
	// Argv is the program (absolute host path) and its arguments.
	Argv []string
	// Env is the image's default environment as KEY=VALUE, sorted by key.
	Env []string
	// WorkingDir is the image's working directory; empty means none given.
	WorkingDir string
	// UID and GID are the image's user and group; nil means not given.
	UID, GID *int64
	// RootUID and RootGID, when set, are the user the image's entrypoint drops
	// to after giving it the working directory's files, when it runs as root
	// (see Rule.RootUser).
	RootUID, RootGID *int64
	// Aliases are the programs the image would contain that the host provides
	// under another name, to be bound at their container paths.
	Aliases []Alias
	// Users are the image's own accounts (Rule.Users).
	Users []User
}

// Match returns the first rule matching image, or false.
func (m *Mapping) Match(image string) (Rule, bool) {
	forms := referenceForms(image)
	for _, r := range m.rules {
		for _, p := range r.Images {
			for _, f := range forms {
				if globMatch(p, f) {
					return r, true
				}
			}
		}
	}
	return Rule{}, false
}

// Resolve returns what runs for a container of image with the given command
// and args (the container spec's fields, Kubernetes semantics: command replaces
// the entrypoint, args replace the default arguments). $(VAR) references must
// already be expanded. An image that no rule matches is an error wrapping
// ErrUnmapped that says how to map or simulate it. A rule that
// matches but whose program is installed nowhere is an error that wraps
// ErrNotInstalled and says what to install.
func (m *Mapping) Resolve(image string, command, args []string) (Resolution, error) {
	r, ok := m.Match(image)
	if !ok {
		return Resolution{}, fmt.Errorf("images: image %s: %w: map it to a local command with a rule of the image mapping (--image-mapping, a target's imageMapping), or add a rule with \"simulate: true\" for an image whose containers need not run", image, ErrUnmapped)
	}
	res := Resolution{Rule: r.label(), WorkingDir: r.WorkingDir}
	if r.Simulate {
		res.Simulated = true
		res.Message = fmt.Sprintf("simulated: mapping rule %q simulates image %s", r.label(), image)
		return res, nil
	}
	res.UID, res.GID, _ = parseUser(r.User) // validated by New
	res.Users = append([]User(nil), r.Users...)
	res.Env = r.EnvList()

	var argv []string
	switch {
	case len(command) > 0:
		argv = append(append(argv, command...), args...)
	case len(args) > 0:
		argv = append(append(argv, r.Entrypoint...), args...)
		if len(r.Entrypoint) == 0 && r.PrependProgram != "" && (strings.HasPrefix(args[0], "-") || strings.HasSuffix(args[0], ".conf")) {
			argv = append([]string{r.PrependProgram}, argv...)
		}
	default:
		argv = append(append(argv, r.Entrypoint...), r.Cmd...)
	}
	if len(argv) == 0 || argv[0] == "" {
		return Resolution{}, fmt.Errorf("images: image %s (rule %q): %w: set the container's command or give the rule an entrypoint or cmd", image, r.label(), ErrNoCommand)
	}
	if len(command) == 0 && r.RootUser != "" && (argv[0] == r.PrependProgram || (len(r.Cmd) > 0 && argv[0] == r.Cmd[0])) {
		res.RootUID, res.RootGID, _ = parseUser(r.RootUser) // validated by New
	}
	prog, err := m.program(r, argv[0], res.WorkingDir)
	if err != nil {
		return Resolution{}, fmt.Errorf("images: image %s (rule %q): %w", image, r.label(), err)
	}
	argv[0] = prog
	res.Argv = argv
	res.Aliases = m.aliases(r)
	return res, nil
}

// program finds the host program that runs for name (argv[0]) under rule r.
func (m *Mapping) program(r Rule, name, workDir string) (string, error) {
	cands, keyed := r.Programs[name]
	if !keyed && path.IsAbs(name) {
		cands, keyed = r.Programs[path.Base(name)]
	}
	if keyed {
		var tried []string
		for _, c := range cands {
			if c == "" {
				continue
			}
			tried = append(tried, c)
			if p, ok := m.lookup(c); ok {
				return p, nil
			}
		}
		fix := r.Install
		if fix == "" {
			fix = "install one of them"
		}
		triedText := "tried " + strings.Join(tried, ", ")
		if len(tried) == 0 {
			triedText = "no host program configured"
		}
		return "", fmt.Errorf("%w: program %q (%s): %s, or map the image in your mapping file", ErrNotInstalled, name, triedText, fix)
	}
	if p, ok := m.lookup(name); ok {
		return p, nil
	}
	if path.IsAbs(name) {
		// The image's layout differs from the host's: try the program's name.
		if p, ok := m.lookup(path.Base(name)); ok {
			return p, nil
		}
	} else if strings.Contains(name, "/") {
		if p, ok := m.lookup(path.Join(orRoot(workDir), name)); ok {
			return p, nil
		}
	}
	fix := r.Install
	if fix == "" {
		fix = fmt.Sprintf("install %s on the host", path.Base(name))
	}
	return "", fmt.Errorf("%w: program %q is not on the host (searched %s): %s, or add it to the rule's \"programs\" in your mapping file", ErrNotInstalled, name, strings.Join(m.search, ":"), fix)
}

// aliases lists the programs of rule r that the host provides only under
// another name.
func (m *Mapping) aliases(r Rule) []Alias {
	var out []Alias
	for name, cands := range r.Programs {
		if _, ok := m.lookup(name); ok {
			continue // the host has it under its own name
		}
		for _, c := range cands {
			if c == "" {
				continue
			}
			if p, ok := m.lookup(c); ok {
				target := name
				if !path.IsAbs(target) {
					if strings.Contains(target, "/") {
						break
					}
					target = path.Join(AliasDir, name)
				}
				out = append(out, Alias{Target: target, Path: p})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// lookup finds an executable: an absolute path as is, a bare name in the
// search path.
func (m *Mapping) lookup(name string) (string, bool) {
	if path.IsAbs(name) {
		return name, isExecutable(name)
	}
	if strings.Contains(name, "/") {
		return "", false
	}
	for _, d := range m.search {
		p := filepath.Join(d, name)
		if isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// ImagePrograms lists the programs an image of rule r holds when it is assembled
// from host programs (for a cluster whose nodes have only what their images
// hold, kind without a registry): every entry of Programs at its image path
// (AliasDir/name for a bare name), and the entrypoint's (Cmd's first without
// one) and PrependProgram's programs where Programs does not name them, each resolved as
// a container's would be. Programs the image's processes call by name without
// the rule naming them (a shell, PostgreSQL's tools) are not in it.
func (m *Mapping) ImagePrograms(r Rule) ([]Alias, error) {
	if r.Simulate {
		return nil, fmt.Errorf("images: rule %s simulates its images: there is no program to put in one", r.label())
	}
	var out []Alias
	seen := map[string]bool{}
	add := func(name string) error {
		target := name
		if !path.IsAbs(target) {
			if strings.Contains(target, "/") {
				target = path.Join(orRoot(r.WorkingDir), target)
			} else {
				target = path.Join(AliasDir, name)
			}
		}
		if seen[target] {
			return nil
		}
		host, err := m.program(r, name, r.WorkingDir)
		if err != nil {
			return err
		}
		seen[target] = true
		out = append(out, Alias{Target: target, Path: host})
		return nil
	}
	names := slices.Sorted(maps.Keys(r.Programs))
	for _, name := range names {
		if err := add(name); err != nil {
			return nil, err
		}
	}
	// The program that starts: the entrypoint's, else the default arguments' first.
	first := r.Entrypoint
	if len(first) == 0 {
		first = r.Cmd
	}
	for _, argv := range [][]string{first, {r.PrependProgram}} {
		if len(argv) == 0 || argv[0] == "" {
			continue
		}
		if err := add(argv[0]); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out, nil
}

func orRoot(dir string) string {
	if dir == "" {
		return "/"
	}
	return dir
}
