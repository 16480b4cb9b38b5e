package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const events = `{"Action":"run","Package":"github.com/gauntlet-dev/gauntlet/faults","Test":"TestE2EChaosMesh"}
{"Action":"output","Package":"github.com/gauntlet-dev/gauntlet/faults","Test":"TestE2EChaosMesh","Output":"=== RUN   TestE2EChaosMesh\n"}
{"Action":"output","Package":"github.com/gauntlet-dev/gauntlet/faults","Test":"TestE2EChaosMesh","Output":"    e2e_test.go:40: [kind] no container engine\n"}
{"Action":"skip","Package":"github.com/gauntlet-dev/gauntlet/faults","Test":"TestE2EChaosMesh"}
{"Action":"output","Package":"github.com/gauntlet-dev/gauntlet/campaign","Test":"TestE2E/clean","Output":"    e2e_test.go:44: control plane not built\n"}
{"Action":"skip","Package":"github.com/gauntlet-dev/gauntlet/campaign","Test":"TestE2E/clean"}
{"Action":"skip","Package":"github.com/gauntlet-dev/gauntlet/model"}
{"Action":"pass","Package":"github.com/gauntlet-dev/gauntlet/model","Test":"TestX"}
`

func TestRun(t *testing.T) {
	dir := t.TempDir()
	ev := filepath.Join(dir, "events.json")
	if err := os.WriteFile(ev, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, allow string
		strict      bool
		wantCode    int
		wantOut     []string
		wantErr     string
	}{
		{name: "strict, one unlisted", allow: "./faults TestE2EChaosMesh kind lane\n", strict: true, wantCode: 1,
			wantOut: []string{"allowed     ./faults TestE2EChaosMesh: e2e_test.go:40: [kind] no container engine", "NOT ALLOWED ./campaign TestE2E/clean: e2e_test.go:44: control plane not built", "FAIL: 1 skips"}},
		{name: "not strict", allow: "./faults TestE2EChaosMesh kind lane\n", wantOut: []string{"CI would fail"}},
		{name: "all listed, subtest by parent", allow: "# comment\n\n./faults TestE2EChaosMesh kind\n./campaign TestE2E reason\n./x TestY unused\n", strict: true,
			wantOut: []string{"2 skipped tests", "listed, did not skip: ./x TestY"}},
		{name: "bad line", allow: "faults TestE2EChaosMesh\n", wantErr: "want `./PACKAGE TestName reason...`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			al := filepath.Join(dir, "allow")
			if err := os.WriteFile(al, []byte(tc.allow), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			code, err := run(&out, al, "github.com/gauntlet-dev/gauntlet", ev, tc.strict)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("code = %d, want %d\n%s", code, tc.wantCode, out.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
