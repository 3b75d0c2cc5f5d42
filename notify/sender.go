package notify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/tidelinehq/tideline/egress"
)

// MaxURLLength bounds a notifier URL.
const MaxURLLength = egress.MaxURLLength

// ErrPrivateTarget is a target on an address notifiers may not reach.
var ErrPrivateTarget = egress.ErrPrivateTarget

// PrivateAddr reports whether a is an address notifiers must not reach
// unless private targets are allowed; the rule is egress.Private, shared
// with HTTP targets.
func PrivateAddr(a netip.Addr) bool { return egress.Private(a) }

// CheckURL validates a notifier URL as far as it can be without DNS
// (egress.CheckURL). The resolved address is checked again at every
// connection (Sender).
func CheckURL(raw string, allowPrivate bool) error {
	return egress.CheckURL(raw, allowPrivate, "--allow-private-notifiers")
}

// Request is one post of a delivery.
type Request struct {
	URL        string
	Body       []byte
	Signature  string
	DeliveryID string
	Event      string
}

// Result is what the receiver answered; Status is 0 when no response came.
type Result struct {
	Status int
	Err    error
}

// Sender posts deliveries over HTTP. Its dialer checks every address it
// connects to — after DNS resolution, so a name that resolves to a private
// address is refused too, and a DNS answer that changes between check and
// use cannot slip through. Redirects are not followed (a 3xx is a failed
// attempt), and no proxy from the environment is used (it would connect on
// our behalf to whatever the URL names).
type Sender struct {
	client *http.Client
	agent  string
}

// NewSender returns a Sender whose posts give up after timeout.
func NewSender(timeout time.Duration, allowPrivate bool, userAgent string) *Sender {
	dialer := egress.Dialer(timeout, allowPrivate, "notifier target")
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	return &Sender{agent: userAgent, client: &http.Client{
		Timeout:   timeout,
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Send posts one delivery. A 2xx answer is success; anything else, or no
// answer, is a failed attempt described by Result.Err.
func (s *Sender) Send(ctx context.Context, r Request) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return Result{Err: fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.agent)
	req.Header.Set(SignatureHeader, r.Signature)
	req.Header.Set("Tideline-Delivery", r.DeliveryID)
	req.Header.Set("Tideline-Event", r.Event)
	resp, err := s.client.Do(req)
	if err != nil {
		return Result{Err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("receiver answered %d", resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			err = fmt.Errorf("receiver answered %d (redirects are not followed)", resp.StatusCode)
		}
		return Result{Status: resp.StatusCode, Err: err}
	}
	return Result{Status: resp.StatusCode}
}
