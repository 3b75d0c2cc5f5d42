package scheduling

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLabelFilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, key, value string
		ok              bool
	}{
		{"team=billing", "team", "billing", true},
		{"team:billing", "team", "billing", true}, // the first spelling, still read
		{"url=http://x", "url", "http://x", true},
		{"pair:a=b", "pair", "a=b", true},
		{"team=", "team", "", true},
		{"nocolon", "", "", false},
		{"=billing", "", "billing", false},
		{"bad key=x", "bad key", "x", false},
	} {
		key, value, ok := ParseLabelFilter(tc.raw)
		require.Equal(t, tc.ok, ok, tc.raw)
		if tc.ok {
			require.Equal(t, [2]string{tc.key, tc.value}, [2]string{key, value}, tc.raw)
		}
	}
}
