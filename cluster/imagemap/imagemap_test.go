package imagemap

import (
	"reflect"
	"strings"
	"testing"
)

func TestUnmapped(t *testing.T) {
	rules := []Rule{{Images: []string{"example/op:*"}, Entrypoint: []string{"/manager"}, Programs: map[string][]string{"/manager": {"/bin/true"}}}}
	got, err := Unmapped(rules, "/x/valkey-operator", []string{"example/op:v1", "quay.io/other/op:v2", "valkey/valkey:8.0", "ghcr.io/gauntlet-dev/valkey-operator:dev", "quay.io/other/op:v2", "", "unknown:1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"quay.io/other/op:v2", "unknown:1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Unmapped = %q, want %q (user rules and shipped defaults both map)", got, want)
	}
}

func TestExpand(t *testing.T) {
	t.Setenv("GAUNTLET_CACHE_DIR", "/c")
	t.Setenv("MY_BIN", "/opt/b")
	in := []Rule{{Images: []string{"a"}, Programs: map[string][]string{"/m": {"${GAUNTLET_CACHE_DIR}/m", "$MY_BIN/m", "rel/m", "m"}}}}
	out, err := Expand(in, "/dir")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/c/m", "/opt/b/m", "/dir/rel/m", "m"}; !reflect.DeepEqual(out[0].Programs["/m"], want) {
		t.Errorf("Expand = %q, want %q", out[0].Programs["/m"], want)
	}
	if in[0].Programs["/m"][0] != "${GAUNTLET_CACHE_DIR}/m" {
		t.Error("Expand changed its input")
	}
	t.Setenv("GAUNTLET_CACHE_DIR", "")
	if out, err = Expand(in, "/dir"); err != nil || !strings.HasSuffix(out[0].Programs["/m"][0], "/gauntlet/m") {
		t.Errorf("GAUNTLET_CACHE_DIR unset: %q, %v; want the default cache folder", out[0].Programs["/m"], err)
	}
	_, err = Expand([]Rule{{Images: []string{"a"}, Programs: map[string][]string{"/m": {"$NOT_SET_ANYWHERE/m"}}}}, "/dir")
	if err == nil || !strings.Contains(err.Error(), "NOT_SET_ANYWHERE") {
		t.Errorf("unset variable: error %v does not name it", err)
	}
}
