package e2e

import (
	"crypto/hmac"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/tidelinehq/tideline/notify"
)

// allowPrivateNotifiers lets notifiers post to the test's receiver on
// 127.0.0.1, which serve refuses by default (a notifier URL must not reach
// internal services).
var allowPrivateNotifiers = serverOptions{Args: []string{"--allow-private-notifiers"}}

// receivedRequest is one request the test's webhook receiver got.
type receivedRequest struct {
	Header http.Header
	Body   []byte
}

// webhookReceiver is an HTTP receiver on 127.0.0.1 that answers 200 and
// keeps every request; it is closed at cleanup.
type webhookReceiver struct {
	URL  string
	mu   sync.Mutex
	reqs []receivedRequest
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	rcv := &webhookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		rcv.reqs = append(rcv.reqs, receivedRequest{Header: r.Header.Clone(), Body: body})
		rcv.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	rcv.URL = srv.URL + "/hooks/tideline"
	return rcv
}

func (r *webhookReceiver) requests() []receivedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedRequest(nil), r.reqs...)
}

// Scenario: an admin creates a notifier on the Notifiers page pointing at a
// real receiver, clicks "Send test", and sees the delivery in the
// notifier's delivery log (delivered, HTTP 200); the receiver got exactly
// one request, signed with the secret the page showed once.
func TestNotifierSendTest(t *testing.T) {
	forEachDatabase(t, allowPrivateNotifiers, func(t *testing.T, srv *server) {
		rcv := newWebhookReceiver(t)
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})

		gotoOK(t, page, "/waterline")
		must(t, "open Notifiers", page.GetByTestId("nav-notifiers").Click())
		must(t, "no notifiers yet", expect.Locator(page.GetByTestId("empty-state")).ToBeVisible())

		form := page.GetByTestId("notifier-form")
		must(t, "name", form.GetByTestId("notifier-name").Fill("ops-webhook"))
		must(t, "url", form.GetByTestId("notifier-url").Fill(rcv.URL))
		_, err := form.GetByTestId("notifier-format").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("json")})
		must(t, "format", err)
		must(t, "event run_failed", form.GetByTestId("event-"+notify.EventRunFailed).Check())
		must(t, "create", form.GetByTestId("notifier-save").Click())

		// The notifier's page, with its signing secret shown once.
		must(t, "secret shown", expect.Locator(page.GetByTestId("secret-value")).ToHaveText(regexp.MustCompile(`\S`)))
		secret, err := page.GetByTestId("secret-value").TextContent()
		must(t, "read the secret", err)
		secret = strings.TrimSpace(secret)
		must(t, "empty delivery log", expect.Locator(page.GetByTestId("deliveries-empty")).ToBeVisible())
		if n := len(rcv.requests()); n != 0 {
			t.Fatalf("the receiver got %d requests before Send test, want 0", n)
		}

		must(t, "send test", page.GetByTestId("send-test").Click())
		must(t, "flash", expect.Locator(page.GetByTestId("flash")).ToHaveText("Test event delivered to ops-webhook (HTTP 200)."))
		rows := page.GetByTestId("delivery-row")
		must(t, "one delivery", expect.Locator(rows).ToHaveCount(1))
		row := rows.First()
		must(t, "delivered", expect.Locator(row).ToHaveAttribute("data-status", "delivered"))
		must(t, "status shown", expect.Locator(row.GetByTestId("delivery-status")).ToHaveText("delivered"))
		must(t, "HTTP 200 shown", expect.Locator(row.GetByTestId("delivery-http")).ToHaveText("200"))
		must(t, "event test", expect.Locator(row.GetByTestId("event-type")).ToHaveText(notify.EventTest))
		must(t, "no error", expect.Locator(row.GetByTestId("delivery-error")).ToHaveText(""))
		deliveryID, err := row.GetAttribute("data-id")
		must(t, "delivery id", err)

		// The delivery was synchronous: the receiver already has it, once.
		reqs := rcv.requests()
		if len(reqs) != 1 {
			t.Fatalf("the receiver got %d requests, want 1", len(reqs))
		}
		got := reqs[0]
		if v := got.Header.Get("Tideline-Event"); v != notify.EventTest {
			t.Errorf("Tideline-Event = %q, want %q", v, notify.EventTest)
		}
		if v := got.Header.Get("Tideline-Delivery"); v != deliveryID {
			t.Errorf("Tideline-Delivery = %q, want the log's %q", v, deliveryID)
		}
		sig := got.Header.Get(notify.SignatureHeader)
		if sig == "" {
			t.Fatalf("no %s header; headers: %v", notify.SignatureHeader, got.Header)
		}
		ts, ok := signatureTime(sig)
		if !ok {
			t.Fatalf("%s = %q, want t=<unix seconds>,v1=<hex>", notify.SignatureHeader, sig)
		}
		if want := notify.Sign(secret, ts, got.Body); !hmac.Equal([]byte(sig), []byte(want)) {
			t.Fatalf("%s = %q does not verify with the secret the page showed (want %q)", notify.SignatureHeader, sig, want)
		}

		// Reloading shows the same log (the page read it from the database).
		gotoOK(t, page, "/waterline/notifiers/ops-webhook")
		must(t, "one delivery after reload", expect.Locator(page.GetByTestId("delivery-row")).ToHaveCount(1))
		must(t, "still delivered", expect.Locator(page.GetByTestId("delivery-row").First()).ToHaveAttribute("data-status", "delivered"))
		must(t, "secret not shown again", expect.Locator(page.GetByTestId("notifier-secret")).ToHaveCount(0))
		gotoOK(t, page, "/waterline/notifiers")
		must(t, "listed", expect.Locator(page.Locator(`[data-testid="notifier-row"][data-name="ops-webhook"]`)).ToContainText(rcv.URL))
	})
}

// signatureTime reads t=<unix seconds> from a Tideline-Signature value.
func signatureTime(sig string) (time.Time, bool) {
	for part := range strings.SplitSeq(sig, ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return time.Unix(n, 0), err == nil
		}
	}
	return time.Time{}, false
}
