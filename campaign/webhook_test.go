package campaign

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetryWebhook(t *testing.T) {
	unreachable := errors.New(`apply Issuer ns/ca: Internal error occurred: failed calling webhook "webhook.cert-manager.io": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
	calls := 0
	err := retryWebhook(context.Background(), time.Minute, func() error {
		calls++
		if calls < 3 {
			return unreachable
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retryWebhook = %v after %d calls, want nil after 3", err, calls)
	}
	denied := errors.New(`admission webhook "webhook.cert-manager.io" denied the request: spec: Invalid value`)
	calls = 0
	if err := retryWebhook(context.Background(), time.Minute, func() error { calls++; return denied }); !errors.Is(err, denied) || calls != 1 {
		t.Errorf("a refusal: %v after %d calls, want it at once", err, calls)
	}
	calls = 0
	if err := retryWebhook(context.Background(), 0, func() error { calls++; return unreachable }); !errors.Is(err, unreachable) || calls != 1 {
		t.Errorf("no settle time: %v after %d calls", err, calls)
	}
}
