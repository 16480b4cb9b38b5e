package campaign

import (
	"context"
	"strings"
	"time"
)

// webhookSettle bounds how long an apply is retried while the API server
// cannot call an admission webhook.
const webhookSettle = time.Minute

// isWebhookUnreachable reports whether err is the API server's failure to call
// an admission webhook (not reachable yet, or its serving certificate not yet
// trusted: a CA injector has not written the webhook configuration's caBundle),
// as opposed to a webhook's refusal of the object.
func isWebhookUnreachable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "failed calling webhook")
}

// retryWebhook runs apply, and runs it again every half second for up to
// settle while it fails because an admission webhook cannot be called: right
// after an operator's install its webhook serves before its CA bundle is
// injected (cert-manager's cainjector). Any other error returns at once.
func retryWebhook(ctx context.Context, settle time.Duration, apply func() error) error {
	deadline := time.Now().Add(settle)
	for {
		err := apply()
		if !isWebhookUnreachable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}
