package runner

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTailKeepsTheEnd(t *testing.T) {
	t.Parallel()
	tl := newTail(16)
	for i := 0; i < 100; i++ {
		_, _ = tl.Write([]byte("0123456789"))
	}
	_, fits := tl.whole()
	require.False(t, fits)
	got := tl.last(40)
	require.LessOrEqual(t, len(got), 40)
	require.True(t, strings.HasPrefix(got, "[… "), got)
	require.True(t, strings.HasSuffix(got, "0123456789"), got)
	require.LessOrEqual(t, len(tl.buf), 2*16, "memory stays bounded")

	small := newTail(16)
	_, _ = small.Write([]byte(`{"ok":true}`))
	whole, fits := small.whole()
	require.True(t, fits)
	require.Equal(t, `{"ok":true}`, string(whole))
	require.Equal(t, `{"ok":true}`, small.last(16))
}

func TestTailNeverStartsInsideARune(t *testing.T) {
	t.Parallel()
	tl := newTail(64)
	_, _ = tl.Write([]byte(strings.Repeat("é", 100))) // two bytes each
	for n := 30; n < 40; n++ {
		got := tl.last(n)
		require.True(t, utf8.ValidString(got), "last(%d) = %q", n, got)
		require.LessOrEqual(t, len(got), n)
	}
	// One huge write keeps only the limit.
	big := newTail(64)
	_, _ = big.Write([]byte(strings.Repeat("x", 1<<20) + "the-end"))
	require.Equal(t, 64, len(big.buf))
	require.Equal(t, "[… 1048549 bytes truncated] xxxxxxxxxxxxxxxxxxxxxxxxxxxthe-end", big.last(64))
}
