package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// DefaultTrustedProxies are the peers whose X-Forwarded-For (and
// X-Forwarded-Proto) --trust-proxy honours unless --trusted-proxy names
// others: loopback and the private ranges, where a proxy in front of
// Tideline lives. A client that reaches the server directly from any other
// address is keyed on that address, whatever headers it sends (issue 36:
// rotating X-Forwarded-For from a direct connection escaped the login
// limit). The ranges are docs/SECURITY.md's, "Tenant isolation".
var DefaultTrustedProxies = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

// trustedPeer reports whether the request's TCP peer is one of the proxies.
func trustedPeer(r *http.Request, proxies []netip.Prefix) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// proxiedClientIP returns the client address behind --trust-proxy: for a
// request from a trusted proxy, the last entry of X-Forwarded-For, the one
// the proxy appended about its own peer (earlier entries come from the
// client itself; trusting them let a client mint a fresh rate-limit key
// per request). For any other peer, the peer. (One proxy hop: behind
// several, the last entry names the inner proxy, and limits are shared —
// stricter, never looser.)
func proxiedClientIP(proxies []netip.Prefix) echo.IPExtractor {
	direct := echo.ExtractIPDirect()
	return func(r *http.Request) string {
		if !trustedPeer(r, proxies) {
			return direct(r)
		}
		values := r.Header.Values(echo.HeaderXForwardedFor)
		if len(values) > 0 {
			parts := strings.Split(values[len(values)-1], ",")
			if ip := strings.TrimSpace(parts[len(parts)-1]); net.ParseIP(ip) != nil {
				return ip
			}
		}
		return direct(r)
	}
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes (--trusted-proxy).
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
