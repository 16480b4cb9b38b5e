package main

import (
	"strings"
	"testing"
)

func TestParseWorkers(t *testing.T) {
	if n, auto, err := parseWorkers("auto"); err != nil || !auto || n != 0 {
		t.Errorf("parseWorkers(auto) = %d, %v, %v", n, auto, err)
	}
	if n, auto, err := parseWorkers("4"); err != nil || auto || n != 4 {
		t.Errorf("parseWorkers(4) = %d, %v, %v", n, auto, err)
	}
	for _, bad := range []string{"0", "-1", "many", ""} {
		if _, _, err := parseWorkers(bad); err == nil || !strings.Contains(err.Error(), "pass auto") {
			t.Errorf("parseWorkers(%q) = %v; want an error naming the choices", bad, err)
		}
	}
}
