package campaign

import (
	"context"
	"strings"
	"time"
)

// webhookSettle bounds how long an apply is retried while the API server
// cannot call an admission webhook.
const webhookSettle = time.Minute

// fixtureSettle bounds the same retries for the fixtures of a test namespace,
// which the first session applies right after the operator's install: on a
// loaded machine cert-manager's CA injection took more than a minute
// (cert-manager seed 3 died on its first fixture; nothing is judged yet, so
// waiting longer costs no verdict).
const fixtureSettle = 3 * time.Minute

// isWebhookUnreachable reports whether err is the API server's failure to call
// an admission webhook (not reachable yet, or its serving certificate not yet
// trusted: a CA injector has not written the webhook configuration's caBundle),
// as opposed to a webhook's refusal of the object.
func isWebhookUnreachable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "failed calling webhook")
}

// retryWebhook runs apply, and runs it again (poll's interval) for up to
// settle while it fails because an admission webhook cannot be called: right
// after an operator's install its webhook serves before its CA bundle is
// injected (cert-manager's cainjector). Any other error returns at once.
func retryWebhook(ctx context.Context, settle time.Duration, apply func() error) error {
	var last error
	err := poll(ctx, settle, func() (bool, error) {
		last = apply()
		if last != nil && !isWebhookUnreachable(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
