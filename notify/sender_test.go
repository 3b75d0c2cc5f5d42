package notify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/notify"
)

func TestPrivateAddr(t *testing.T) {
	t.Parallel()
	for addr, private := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "fd00:ec2::254": true, "0.0.0.0": true, "::": true, "100.100.100.200": true,
		"::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true, "224.0.0.1": true,
		"93.184.216.34": false, "8.8.8.8": false, "2606:4700:4700::1111": false, "172.32.0.1": false,
	} {
		require.Equal(t, private, notify.PrivateAddr(netip.MustParseAddr(addr)), addr)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for url, ok := range map[string]bool{
		"https://hooks.slack.com/services/T/B/X": true, "http://example.com:8080/hook": true,
		"ftp://example.com": false, "/relative": false, "https://user:pw@example.com/": false,
		"http://127.0.0.1/": false, "http://[::1]:80/": false, "http://localhost/": false, "http://a.localhost/": false,
		"http://169.254.169.254/latest/meta-data": false, "http://10.0.0.1/": false, "http://[::ffff:192.168.0.1]/": false,
	} {
		err := notify.CheckURL(url, false)
		require.Equal(t, ok, err == nil, "%s: %v", url, err)
	}
	require.NoError(t, notify.CheckURL("http://127.0.0.1:9/x", true), "allowed with --allow-private-notifiers")
}

// The guard sits in the dialer: whatever name the URL holds, the address
// actually connected to is checked (here "localhost" resolves to loopback).
func TestSenderRefusesPrivateAddressAtConnect(t *testing.T) {
	t.Parallel()
	hit := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit = true }))
	t.Cleanup(srv.Close)
	strict := notify.NewSender(5*time.Second, false, "test")
	res := strict.Send(context.Background(), notify.Request{URL: srv.URL, Body: []byte("{}")})
	require.ErrorIs(t, res.Err, notify.ErrPrivateTarget)
	require.Zero(t, res.Status)
	require.False(t, hit)

	open := notify.NewSender(5*time.Second, true, "test")
	res = open.Send(context.Background(), notify.Request{URL: srv.URL, Body: []byte("{}")})
	require.NoError(t, res.Err)
	require.True(t, hit)
}

// Redirects are not followed: a receiver cannot bounce a delivery to an
// internal address.
func TestSenderDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	followed := false
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
	t.Cleanup(target.Close)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	res := notify.NewSender(5*time.Second, true, "test").Send(context.Background(), notify.Request{URL: redirect.URL, Body: []byte("{}")})
	require.Equal(t, http.StatusTemporaryRedirect, res.Status)
	require.Error(t, res.Err)
	require.False(t, followed)
}

func TestSignMatchesDocumentedExample(t *testing.T) {
	t.Parallel()
	// The example of docs/NOTIFICATIONS.md, computed there with Python's hmac.
	got := notify.Sign("whsec_example", time.Unix(1784203200, 0), []byte(`{"event":"test"}`))
	require.Equal(t, "t=1784203200,v1=99ea0e9d198c36b5c177c4d90a05c4185c5e40f87d138e1690f729814449eb46", got)
}
