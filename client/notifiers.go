package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tidelinehq/tideline/apijson"
)

func notifierPath(name string, rest string) string {
	return "/notifiers/" + url.PathEscape(name) + rest
}

// ListNotifiers lists the namespace's notifiers (GET /notifiers).
func (c *Client) ListNotifiers(ctx context.Context) (*apijson.NotifierList, error) {
	return call[apijson.NotifierList](ctx, c, request{method: http.MethodGet, path: "/notifiers", idempotent: true})
}

// CreateNotifier creates a notifier; the answer holds its secret, the only
// time it is shown.
func (c *Client) CreateNotifier(ctx context.Context, req apijson.NotifierWrite) (*apijson.Notifier, error) {
	return call[apijson.Notifier](ctx, c, request{method: http.MethodPost, path: "/notifiers", body: req})
}

// GetNotifier reads one notifier.
func (c *Client) GetNotifier(ctx context.Context, name string) (*apijson.Notifier, error) {
	return call[apijson.Notifier](ctx, c, request{method: http.MethodGet, path: notifierPath(name, ""), idempotent: true})
}

// UpdateNotifier changes the given fields of a notifier.
func (c *Client) UpdateNotifier(ctx context.Context, name string, req apijson.NotifierWrite) (*apijson.Notifier, error) {
	return call[apijson.Notifier](ctx, c, request{method: http.MethodPatch, path: notifierPath(name, ""), body: req})
}

// DeleteNotifier deletes a notifier and its delivery log.
func (c *Client) DeleteNotifier(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: notifierPath(name, ""), idempotent: true}, nil)
}

// TestNotifier posts a test event and returns its delivery.
func (c *Client) TestNotifier(ctx context.Context, name string) (*apijson.Delivery, error) {
	return call[apijson.Delivery](ctx, c, request{method: http.MethodPost, path: notifierPath(name, "/test")})
}

// NotifierDeliveriesPage fetches one page of a notifier's delivery log.
func (c *Client) NotifierDeliveriesPage(ctx context.Context, name string, limit int, cursor string) (*apijson.DeliveryPage, error) {
	q := url.Values{}
	setIf(q, "cursor", cursor)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[apijson.DeliveryPage](ctx, c, request{method: http.MethodGet, path: notifierPath(name, "/deliveries"), query: q, idempotent: true})
}

// Redeliver sends one dead delivery of a notifier back to pending, due now.
func (c *Client) Redeliver(ctx context.Context, name, deliveryID, reason string) (*apijson.Delivery, error) {
	return call[apijson.Delivery](ctx, c, request{method: http.MethodPost,
		path: notifierPath(name, "/deliveries/"+url.PathEscape(deliveryID)+"/redeliver"), body: apijson.RunActionRequest{Reason: reason}})
}

// RedeliverDead sends the notifier's dead deliveries back to pending (at
// most 500 a call; More says whether to call again).
func (c *Client) RedeliverDead(ctx context.Context, name, reason string) (*apijson.RedeliverResult, error) {
	return call[apijson.RedeliverResult](ctx, c, request{method: http.MethodPost, path: notifierPath(name, "/redeliver"),
		body: apijson.RunActionRequest{Reason: reason}})
}
