package faults

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// Netem reports whether the kernel whose configuration /proc/config.gz holds has the
// netem queueing discipline (network delay and loss), with the reason when it has not.
// ok is true when the configuration cannot be read: the answer is then left to the
// injection itself.
func Netem(configGz string) (ok bool, reason string) {
	f, err := os.Open(configGz)
	if err != nil {
		return true, ""
	}
	defer f.Close()
	return netemIn(f, configGz)
}

func netemIn(r io.Reader, name string) (bool, string) {
	z, err := gzip.NewReader(r)
	if err != nil {
		return true, ""
	}
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, found := strings.CutPrefix(line, "CONFIG_NET_SCH_NETEM="); found {
			if v == "y" {
				return true, ""
			}
			if v == "m" {
				if _, err := os.Stat("/sys/module/sch_netem"); err == nil {
					return true, ""
				}
				return false, fmt.Sprintf("this kernel builds netem as a module (%s: CONFIG_NET_SCH_NETEM=m) that is not loaded", name)
			}
		}
	}
	if sc.Err() != nil {
		return true, ""
	}
	return false, fmt.Sprintf("this kernel has no netem queueing discipline (%s: CONFIG_NET_SCH_NETEM is not set)", name)
}
