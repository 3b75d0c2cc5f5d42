package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength bounds a notifier URL.
const MaxURLLength = 2048

// ErrPrivateTarget is a target on an address notifiers may not reach.
var ErrPrivateTarget = errors.New("target address is loopback, private, link-local or otherwise internal")

// blocked holds ranges no notifier may reach by default beyond what
// netip.Addr's predicates cover: "this network", carrier-grade NAT (cloud
// metadata services sit there on some providers), benchmarking, IPv6
// NAT64/discard/documentation prefixes.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// PrivateAddr reports whether a is an address notifiers must not reach
// unless private targets are allowed: loopback, private (RFC 1918, ULA —
// which holds fd00:ec2::254, a metadata address), link-local (169.254.0.0/16
// holds the usual metadata address), unspecified, multicast and the ranges
// in blocked. IPv4-mapped IPv6 addresses are judged as IPv4.
func PrivateAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid() {
		return true
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CheckURL validates a notifier URL as far as it can be without DNS: an
// absolute http(s) URL with a host, no credentials, bounded length, and —
// unless allowPrivate — no private address literal or localhost name. The
// resolved address is checked again at every connection (Sender).
func CheckURL(raw string, allowPrivate bool) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return errors.New("must not contain credentials; use the secret to authenticate deliveries")
	}
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return errors.New("must not point at this machine (start the server with --allow-private-notifiers to allow it)")
	}
	if a, err := netip.ParseAddr(host); err == nil && PrivateAddr(a) {
		return errors.New("must not point at a loopback, private or link-local address (start the server with --allow-private-notifiers to allow it)")
	}
	return nil
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
	dialer := &net.Dialer{Timeout: timeout, Control: func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("notifier target %s: %w", address, ErrPrivateTarget)
		}
		if PrivateAddr(ap.Addr()) {
			return fmt.Errorf("notifier target %s: %w", ap.Addr(), ErrPrivateTarget)
		}
		return nil
	}}
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
