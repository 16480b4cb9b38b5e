package main

import (
	"io"
	"testing"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("WATCH_NAMESPACE", "")
	o, err := parseFlags([]string{"--namespace=a,b", "--leader-elect=false", "--max-concurrent-reconciles=2"}, io.Discard)
	if err != nil || o.namespaces != "a,b" || o.leaderElect || o.concurrency != 2 || o.metricsAddr != ":8080" {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range [][]string{{"--max-concurrent-reconciles=0"}, {"extra"}, {"--no-such-flag"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := newLogger(options{logLevel: "verbose", logFormat: "json"}, io.Discard); err == nil {
		t.Error("bad log level accepted")
	}
	if _, err := newLogger(options{logLevel: "debug", logFormat: "text"}, io.Discard); err != nil {
		t.Error(err)
	}
}
