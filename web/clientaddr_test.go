package web_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/web"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := web.ParseTrustedProxies(" 10.0.0.5, 10.1.2.3/16,::ffff:192.0.2.1,fd00::/8 ")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("fd00::/8"),
	}, got)
	for _, bad := range []string{"proxy.example.com", "10.0.0.0/33", "1.2.3"} {
		_, err := web.ParseTrustedProxies(bad)
		require.Error(t, err, bad)
	}
}
