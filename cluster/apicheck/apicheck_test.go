package apicheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestValidate starts the API server and checks that it accepts a good Pod and refuses bad
// objects with the server's causes.
func TestValidate(t *testing.T) {
	testenv.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Available(ctx); errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, "%v", err)
	}
	t0 := time.Now()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready after %v", time.Since(t0).Round(time.Millisecond))
	defer func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	pod := func(c map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "x"},
			"spec": map[string]any{"containers": []any{c}}}
	}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want string // substring of the reason; "" means accepted
	}{
		{"good pod", pod(map[string]any{"name": "a", "image": "busybox"}), ""},
		{"no image", pod(map[string]any{"name": "a"}), "spec.containers[0].image: Required value"},
		{"unknown field", pod(map[string]any{"name": "a", "image": "b", "bogus": 1}), `unknown field "spec.containers[0].bogus"`},
		{"unknown service account", map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "x"},
			"spec": map[string]any{"serviceAccountName": "nobody", "containers": []any{map[string]any{"name": "a", "image": "b"}}}}, `serviceaccount "nobody" not found`},
	} {
		reason, err := s.Validate(ctx, tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		switch {
		case tc.want == "" && reason != "":
			t.Errorf("%s: refused: %s", tc.name, reason)
		case tc.want != "" && !strings.Contains(reason, tc.want):
			t.Errorf("%s: reason %q, want it to contain %q", tc.name, reason, tc.want)
		}
	}
	if _, err := s.Validate(ctx, map[string]any{"apiVersion": "example.com/v1", "kind": "Nothing", "metadata": map[string]any{"name": "x"}}); err == nil {
		t.Error("an unknown kind is an error, not a verdict")
	}
}
