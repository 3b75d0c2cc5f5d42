package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/egress"
)

// Literal addresses only: no name is resolved here.
func TestPrivate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr    string
		private bool
		why     string
	}{
		{"127.0.0.1", true, "loopback"},
		{"10.1.2.3", true, "RFC 1918"},
		{"172.16.0.1", true, "RFC 1918"},
		{"192.168.1.1", true, "RFC 1918"},
		{"169.254.169.254", true, "link-local metadata"},
		{"100.100.100.200", true, "carrier-grade NAT metadata"},
		{"0.0.0.0", true, "unspecified"},
		{"224.0.0.1", true, "multicast"},
		{"192.0.0.170", true, "IETF protocol assignments"},
		{"198.18.0.1", true, "benchmarking"},
		{"255.255.255.255", true, "broadcast/reserved"},
		{"::1", true, "IPv6 loopback"},
		{"::", true, "IPv6 unspecified"},
		{"fe80::1", true, "IPv6 link-local"},
		{"fd00:ec2::254", true, "ULA metadata"},
		{"fec0::1", true, "site-local"},
		{"2001:db8::1", true, "documentation"},
		{"100::1", true, "discard"},
		{"::ffff:127.0.0.1", true, "IPv4-mapped loopback"},
		{"::ffff:169.254.169.254", true, "IPv4-mapped metadata"},
		{"::127.0.0.1", true, "IPv4-compatible loopback"},
		{"::a9fe:a9fe", true, "IPv4-compatible metadata"},
		{"::10.0.0.1", true, "IPv4-compatible private"},
		{"64:ff9b::a9fe:a9fe", true, "NAT64 of the metadata address"},
		{"64:ff9b::10.0.0.1", true, "NAT64 of a private address"},
		{"64:ff9b::127.0.0.1", true, "NAT64 of loopback"},
		{"64:ff9b:1::a9fe:a9fe", true, "local-use NAT64 (RFC 8215)"},
		{"64:ff9b:1:ffff::808:808", true, "local-use NAT64, any embedding"},
		{"2002:a9fe:a9fe::1", true, "6to4 of the metadata address"},
		{"2002:7f00:1::", true, "6to4 of loopback"},
		{"2002:c0a8:101::1", true, "6to4 of 192.168.1.1"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", true, "Teredo, client 10.0.0.1"},
		{"2001:0:a9fe:a9fe::1", true, "Teredo, server 169.254.169.254"},
		{"93.184.216.34", false, "public IPv4"},
		{"8.8.8.8", false, "public IPv4"},
		{"172.32.0.1", false, "just outside 172.16/12"},
		{"2606:4700:4700::1111", false, "public IPv6"},
		{"::ffff:8.8.8.8", false, "IPv4-mapped public"},
		{"64:ff9b::808:808", false, "NAT64 of a public address"},
		{"2002:808:808::1", false, "6to4 of a public address"},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", false, "Teredo, public server and client 8.8.8.8"},
	} {
		require.Equal(t, tc.private, egress.Private(netip.MustParseAddr(tc.addr)), "%s (%s)", tc.addr, tc.why)
	}
	require.True(t, egress.Private(netip.Addr{}), "the zero address")
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for url, ok := range map[string]bool{
		"https://hooks.example.com/services/T/B/X": true, "http://example.com:8080/hook": true,
		"ftp://example.com": false, "/relative": false, "https://user:pw@example.com/": false,
		"http://127.0.0.1/": false, "http://[::1]:80/": false, "http://localhost/": false, "http://a.localhost./": false,
		"http://169.254.169.254/latest/meta-data": false, "http://[64:ff9b:1::a9fe:a9fe]/": false,
		"http://[2002:a9fe:a9fe::1]/": false, "http://[::a9fe:a9fe]/": false, "http://[64:ff9b::808:808]/": true,
	} {
		err := egress.CheckURL(url, false, "--allow-private-targets")
		require.Equal(t, ok, err == nil, "%s: %v", url, err)
	}
	err := egress.CheckURL("http://127.0.0.1/", false, "--allow-private-targets")
	require.ErrorContains(t, err, "--allow-private-targets", "the message names the flag that allows it")
	require.NoError(t, egress.CheckURL("http://127.0.0.1:9/x", true, "--allow-private-targets"))
	long := "https://example.com/" + string(make([]byte, egress.MaxURLLength))
	require.Error(t, egress.CheckURL(long, true, "x"))
}

// The dialer checks the address actually connected to, whatever the URL
// said: a loopback listener is refused unless private targets are allowed.
func TestDialerRefusesPrivateAtConnect(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := egress.Dialer(time.Second, false, "http target").DialContext(ctx, "tcp", addr)
	require.True(t, errors.Is(err, egress.ErrPrivateTarget), "got %v", err)
	conn, err := egress.Dialer(time.Second, true, "http target").DialContext(ctx, "tcp", addr)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	var _ net.Conn = conn
}
