// Package egress is the one rule for where the server itself may connect on
// a tenant's behalf: notification receivers (SPEC §11) and HTTP targets
// (SPEC §15). A URL is checked when it is saved (no DNS), and every address
// is checked again at dial time, after resolution, so a name that resolves
// to an internal address — or whose answer changes between the two — is
// refused too.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength bounds a URL the server will call.
const MaxURLLength = 2048

// ErrPrivateTarget is an address the server may not reach unless the
// operator allowed private targets.
var ErrPrivateTarget = errors.New("target address is loopback, private, link-local or otherwise internal")

// blocked holds ranges no tenant may reach by default beyond what
// netip.Addr's predicates cover: "this network", carrier-grade NAT (cloud
// metadata services sit there on some providers), IETF protocol
// assignments, the 6to4 relay anycast, benchmarking, reserved; IPv6 discard,
// documentation, deprecated site-local, and local-use NAT64 (RFC 8215: the
// operator picks where the IPv4 address sits, so it cannot be decoded, and
// the prefix is local by definition).
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fec0::/10"),
}

// IPv6 forms that carry an IPv4 address the packet ends up at; each is
// judged by that address as well as by its own.
var (
	compatible = netip.MustParsePrefix("::/96")        // IPv4-compatible (deprecated, RFC 4291)
	nat64      = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 (RFC 6052)
	sixToFour  = netip.MustParsePrefix("2002::/16")    // 6to4 (RFC 3056): bits 16–47
	teredo     = netip.MustParsePrefix("2001::/32")    // Teredo (RFC 4380): server bits 32–63, client ^bits 96–127
)

// Private reports whether a is an address the server must not reach unless
// private targets are allowed: loopback, private (RFC 1918, ULA — which
// holds fd00:ec2::254, a metadata address), link-local (169.254.0.0/16
// holds the usual metadata address), unspecified, multicast, the ranges in
// blocked, and any IPv6 address whose embedded IPv4 address (mapped,
// compatible, NAT64, 6to4, Teredo) is one of those.
func Private(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.Unmap()
	if internal(a) {
		return true
	}
	if !a.Is6() {
		return false
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case compatible.Contains(a), nat64.Contains(a):
		return internal(v4(12))
	case sixToFour.Contains(a):
		return internal(v4(2))
	case teredo.Contains(a):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return internal(v4(4)) || internal(client)
	}
	return false
}

// internal judges an address by itself, without decoding anything in it.
func internal(a netip.Addr) bool {
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CheckURL validates a URL as far as it can be without DNS: an absolute
// http(s) URL with a host, no credentials, bounded length, and — unless
// allowPrivate — no private address literal or localhost name. flag names
// the serve flag that allows private addresses, for the message. The
// resolved address is checked again at every connection (Dialer).
func CheckURL(raw string, allowPrivate bool, flag string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return errors.New("must not contain credentials; use the secret to authenticate")
	}
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("must not point at this machine (start the server with %s to allow it)", flag)
	}
	if a, err := netip.ParseAddr(host); err == nil && Private(a) {
		return fmt.Errorf("must not point at a loopback, private or link-local address (start the server with %s to allow it)", flag)
	}
	return nil
}

// Dialer returns a dialer that refuses, at connect time, every address
// Private reports, unless allowPrivate. what names the caller in errors
// ("notifier target", "http target").
func Dialer(timeout time.Duration, allowPrivate bool, what string) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, address, ErrPrivateTarget)
		}
		if Private(ap.Addr()) {
			return fmt.Errorf("%s %s: %w", what, ap.Addr(), ErrPrivateTarget)
		}
		return nil
	}}
}
