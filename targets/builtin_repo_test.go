package targets

import (
	"strings"
	"testing"
)

func TestBuiltinWithoutRepository(t *testing.T) {
	_, err := Builtin("", "valkey")
	if err == nil || !strings.Contains(err.Error(), "--repo") {
		t.Fatalf("Builtin without a repository = %v; want an error naming --repo", err)
	}
}
