package replay

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetryWebhook(t *testing.T) {
	unreachable := errors.New(`apply Issuer ns/ca: Internal error occurred: failed calling webhook "webhook.cert-manager.io": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
	calls := 0
	err := RetryWebhook(context.Background(), time.Minute, func() error {
		calls++
		if calls < 3 {
			return unreachable
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("RetryWebhook = %v after %d calls, want nil after 3", err, calls)
	}
	denied := errors.New(`admission webhook "webhook.cert-manager.io" denied the request: spec: Invalid value`)
	calls = 0
	if err := RetryWebhook(context.Background(), time.Minute, func() error { calls++; return denied }); !errors.Is(err, denied) || calls != 1 {
		t.Errorf("a refusal: %v after %d calls, want it at once", err, calls)
	}
	calls = 0
	if err := RetryWebhook(context.Background(), 0, func() error { calls++; return unreachable }); !errors.Is(err, unreachable) || calls != 1 {
		t.Errorf("no settle time: %v after %d calls", err, calls)
	}
}

// TestFixturePending: a fixture that reports Ready=False is waited for (a CA
// Issuer whose CA Certificate is being issued: cert-manager seed 3's
// differential re-runs compared a Certificate still waiting on it); a custom
// resource with no condition yet is waited for a short grace; core objects and
// custom resources that publish no condition are not.
func TestFixturePending(t *testing.T) {
	issuer := func(status string) map[string]any {
		o := map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Issuer"}
		if status != "" {
			o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status, "reason": "KeyPairVerified"}}}
		}
		return o
	}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		age  time.Duration
		want bool
	}{
		{"issuer not ready", issuer("False"), time.Minute, true},
		{"issuer ready", issuer("True"), 0, false},
		{"issuer without a status yet", issuer(""), time.Second, true},
		{"a custom resource that never reports a condition", issuer(""), time.Minute, false},
		{"a Secret", map[string]any{"apiVersion": "v1", "kind": "Secret"}, 0, false},
		{"a built-in API group", map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy"}, 0, false},
	} {
		if got, why := fixturePending(tc.obj, tc.age); got != tc.want {
			t.Errorf("%s: pending %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}
