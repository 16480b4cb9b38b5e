package campaign

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// troubledContainer is a container of a snapshot's pod that is not ready or
// has restarted: its logs are the step's evidence.
type troubledContainer struct {
	pod, container string
	// restarted: the container has a previous instance whose log may be read.
	restarted bool
	// exitCode is the last termination's exit code (current or previous
	// instance; -1 when it never terminated).
	exitCode int
	// command is what the pod spec runs (command, else args, else the image).
	command string
}

// troubled lists the containers of the snapshot's pods that are not ready or
// have restarted, sorted by pod and container.
func troubled(snap *model.Snapshot) []troubledContainer {
	if snap == nil {
		return nil
	}
	var out []troubledContainer
	for _, key := range slices.Sorted(maps.Keys(snap.Objects)) {
		o := snap.Objects[key]
		if o["kind"] != "Pod" {
			continue
		}
		pod, _ := get(o, "metadata", "name").(string)
		commands := map[string]string{}
		for _, list := range []string{"initContainers", "containers"} {
			cs, _ := get(o, "spec", list).([]any)
			for _, c := range cs {
				m, _ := c.(map[string]any)
				name, _ := m["name"].(string)
				commands[name] = containerCommand(m)
			}
		}
		for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
			ss, _ := get(o, "status", list).([]any)
			for _, st := range ss {
				m, _ := st.(map[string]any)
				name, _ := m["name"].(string)
				ready, _ := m["ready"].(bool)
				restarts, _ := jsonv.AsFloat(m["restartCount"])
				done := list == "initContainerStatuses" && get(m, "state", "terminated", "exitCode") != nil &&
					fmt.Sprint(get(m, "state", "terminated", "exitCode")) == "0"
				if (ready || done) && restarts == 0 {
					continue
				}
				tc := troubledContainer{pod: pod, container: name, restarted: restarts > 0, exitCode: -1, command: commands[name]}
				for _, at := range [][]string{{"state", "terminated", "exitCode"}, {"lastState", "terminated", "exitCode"}} {
					if n, ok := jsonv.AsFloat(get(m, at...)); ok && n != 0 {
						tc.exitCode = int(n)
						break
					}
				}
				out = append(out, tc)
			}
		}
	}
	return out
}

// containerCommand is what a container spec runs: its command, else its args,
// else its image.
func containerCommand(c map[string]any) string {
	for _, f := range []string{"command", "args"} {
		if l, _ := c[f].([]any); len(l) > 0 {
			var parts []string
			for _, p := range l {
				parts = append(parts, fmt.Sprint(p))
			}
			return strings.Join(parts, " ")
		}
	}
	img, _ := c["image"].(string)
	return "the image's entry point (" + img + ")"
}

// notFoundLine matches how shells and exec report a program they cannot find
// or run; the group is the program ("sh: 1: foo: not found", "foo: command
// not found", `exec: "foo": executable file not found in $PATH`,
// "/tmp/w.sh: line 2: /tmp/x: No such file or directory").
var notFoundLine = regexp.MustCompile(`(?i)"?([^\s:"]+)"?:\s*(?:command not found|not found|executable file not found|no such file or directory|permission denied|cannot execute)`)

// missingProgram names the program a log says could not be found or run
// ("" when it names none).
func missingProgram(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if m := notFoundLine.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// tmpRule is the embedded cluster's rule that a program missing in a
// container most often broke.
const tmpRule = "mapped programs run with their own /tmp: a program (or a script it calls) under the host's /tmp is invisible inside the pod, so install it elsewhere (/usr/local/bin, the repository) and point the image mapping there"

// cannotStart says why an operand cannot start: a container of the snapshot
// exits with 126 (found but not executable) or 127 (not found), naming the
// program its log (read through logs, which may return "") says is missing,
// and the rule a newcomer meets first. Empty when no container exits so.
func cannotStart(snap *model.Snapshot, logs func(pod, container string, previous bool) string) string {
	for _, tc := range troubled(snap) {
		if tc.exitCode != 126 && tc.exitCode != 127 {
			continue
		}
		what := "was not found"
		if tc.exitCode == 126 {
			what = "was found but could not be executed"
		}
		prog := ""
		if logs != nil {
			prog = missingProgram(logs(tc.pod, tc.container, tc.restarted))
			if prog == "" && tc.restarted {
				prog = missingProgram(logs(tc.pod, tc.container, false))
			}
		}
		if prog == "" {
			prog = tc.command
		}
		return fmt.Sprintf("container %s of pod %s exits with code %d: a program it runs %s (%s); %s",
			tc.container, tc.pod, tc.exitCode, what, prog, tmpRule)
	}
	return ""
}

// containerLog reads the tail of a container's log in the session's
// namespace, current or previous instance ("" when it cannot be read).
func (s *session) containerLog(ctx context.Context, pod, container string, previous bool) string {
	if s.env == nil || s.env.kube == nil || s.env.kube.cs == nil {
		return ""
	}
	tail := int64(500)
	b, err := s.env.kube.cs.CoreV1().Pods(s.ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &tail}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return string(b)
}

// writeContainerLogs keeps, in dir/logs, the current and previous logs of
// every container of snap that is not ready or has restarted
// (<pod>.<container>.log, <pod>.<container>.previous.log): the cause of a
// crash is often only there, and the pods are gone once the run ends.
func writeContainerLogs(dir string, snap *model.Snapshot, logs func(pod, container string, previous bool) string) error {
	tcs := troubled(snap)
	if len(tcs) == 0 || logs == nil {
		return nil
	}
	ldir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(ldir, 0o755); err != nil {
		return fmt.Errorf("step logs folder: %w", err)
	}
	for _, tc := range tcs {
		write := func(suffix string, previous bool) error {
			l := logs(tc.pod, tc.container, previous)
			if l == "" {
				return nil
			}
			if err := os.WriteFile(filepath.Join(ldir, tc.pod+"."+tc.container+suffix), []byte(l), 0o644); err != nil {
				return fmt.Errorf("write container log: %w", err)
			}
			return nil
		}
		if err := write(".log", false); err != nil {
			return err
		}
		if tc.restarted {
			if err := write(".previous.log", true); err != nil {
				return err
			}
		}
	}
	return nil
}
