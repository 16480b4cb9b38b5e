// Command skipcheck reads the `go test -json` events of a test run and lists
// every skipped test with its reason. In CI (CI=true, or
// GAUNTLET_REQUIRE_E2E=1) a skip the allow list does not name fails the run:
// an end-to-end suite that skipped because its environment broke must read as
// red, not green.
//
//	skipcheck -allow .ci/allowed-skips test-events.json
//
// The allow list has one skip a line, `PACKAGE TEST reason...`, where PACKAGE is
// the import path relative to the module (`./faults`) and TEST a top-level test
// name (its subtests are allowed with it). Blank lines and `#` comments are
// ignored; anything else is an error naming the line.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// event is one test2json event.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// allowed is one entry of the allow list.
type allowed struct {
	pkg, test, reason string
	used              bool
}

// skip is one skipped test.
type skip struct {
	pkg, test string
	reason    []string
}

func main() {
	allowPath := flag.String("allow", ".ci/allowed-skips", "the allow list of skips")
	module := flag.String("module", "github.com/gauntlet-dev/gauntlet", "the module path stripped from package names")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: skipcheck [-allow FILE] EVENTS.json")
		os.Exit(2)
	}
	code, err := run(os.Stdout, *allowPath, *module, flag.Arg(0), required())
	if err != nil {
		fmt.Fprintf(os.Stderr, "skipcheck: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func required() bool {
	for _, name := range []string{"CI", "GAUNTLET_REQUIRE_E2E"} {
		if v, err := strconv.ParseBool(os.Getenv(name)); err == nil && v {
			return true
		}
	}
	return false
}

// run prints the skips and returns the exit code: 1 when strict and a skip is
// not allowed.
func run(w io.Writer, allowPath, module, eventsPath string, strict bool) (int, error) {
	allow, err := readAllow(allowPath)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(eventsPath)
	if err != nil {
		return 0, fmt.Errorf("test events: %w", err)
	}
	defer f.Close()
	skips, err := readSkips(f, module)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", eventsPath, err)
	}
	var bad []skip
	fmt.Fprintf(w, "skipcheck: %d skipped tests\n", len(skips))
	for _, s := range skips {
		a := match(allow, s)
		mark := "allowed"
		if a == nil {
			mark = "NOT ALLOWED"
			bad = append(bad, s)
		} else {
			a.used = true
		}
		fmt.Fprintf(w, "  %-11s %s %s: %s\n", mark, s.pkg, s.test, strings.Join(s.reason, " | "))
	}
	for _, a := range allow {
		if !a.used {
			fmt.Fprintf(w, "  (listed, did not skip: %s %s)\n", a.pkg, a.test)
		}
	}
	if len(bad) == 0 {
		return 0, nil
	}
	if !strict {
		fmt.Fprintf(w, "skipcheck: %d skips are not in %s (CI would fail on them)\n", len(bad), allowPath)
		return 0, nil
	}
	fmt.Fprintf(w, "skipcheck: FAIL: %d skips are not in %s: in CI an environment problem must fail, not skip (fix the environment, or list a legitimate skip with its reason)\n", len(bad), allowPath)
	return 1, nil
}

func readAllow(path string) ([]*allowed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("allow list: %w", err)
	}
	var out []*allowed
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || !strings.HasPrefix(fields[0], "./") || !strings.HasPrefix(fields[1], "Test") {
			return nil, fmt.Errorf("%s:%d: want `./PACKAGE TestName reason...`, got %q", path, i+1, line)
		}
		out = append(out, &allowed{pkg: fields[0], test: fields[1], reason: strings.Join(fields[2:], " ")})
	}
	return out, nil
}

func readSkips(r io.Reader, module string) ([]skip, error) {
	type key struct{ pkg, test string }
	output := map[key][]string{}
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // go build errors and other plain lines
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if e.Test == "" {
			continue // package-level events ("no test files")
		}
		pkg := "./" + strings.TrimPrefix(strings.TrimPrefix(e.Package, module), "/")
		if e.Package == module {
			pkg = "."
		}
		k := key{pkg, e.Test}
		switch e.Action {
		case "output":
			if msg := strings.TrimSpace(e.Output); msg != "" && !strings.HasPrefix(msg, "=== ") && !strings.HasPrefix(msg, "--- ") {
				output[k] = append(output[k], msg)
			}
		case "skip":
			skips = append(skips, skip{pkg: pkg, test: e.Test, reason: output[k]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("no test events: did the test run start?")
	}
	sort.Slice(skips, func(i, j int) bool {
		if skips[i].pkg != skips[j].pkg {
			return skips[i].pkg < skips[j].pkg
		}
		return skips[i].test < skips[j].test
	})
	return skips, nil
}

func match(allow []*allowed, s skip) *allowed {
	for _, a := range allow {
		if a.pkg == s.pkg && (s.test == a.test || strings.HasPrefix(s.test, a.test+"/")) {
			return a
		}
	}
	return nil
}
