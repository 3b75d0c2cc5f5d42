package runner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitWords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
	}{
		{"echo hi", []string{"echo", "hi"}},
		{"  spaced\t out \n words ", []string{"spaced", "out", "words"}},
		{`sh -c 'echo "$HOME" | wc -c'`, []string{"sh", "-c", `echo "$HOME" | wc -c`}},
		{`printf "%s\n" "a b"`, []string{"printf", `%s\n`, "a b"}},
		{`say "quote \" and \\ and \$ and \x"`, []string{"say", `quote " and \ and $ and \x`}},
		{`a\ b c\\d \'e`, []string{"a b", `c\d`, "'e"}},
		{`empty '' "" x`, []string{"empty", "", "", "x"}},
		{`con'cat'"en"ated`, []string{"concatenated"}},
		{"line\\\ncontinued", []string{"linecontinued"}},
		{`"multi\` + "\n" + `line"`, []string{"multiline"}},
		// No expansion, no operators, no globbing.
		{`echo $HOME ~ *.txt a;b a|b $(id) ` + "`id`", []string{"echo", "$HOME", "~", "*.txt", "a;b", "a|b", "$(id)", "`id`"}},
		{`'it''s'`, []string{"its"}},
		{"", nil},
		{"   ", nil},
	}
	for _, tc := range cases {
		got, err := SplitWords(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, "split %q", tc.in)
	}
}

func TestSplitWordsRefusesUnclosedQuotes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`echo 'open`: "single quote",
		`echo "open`: "double quote",
		`echo "a\"`:  "double quote",
		`trailing \`: "lone backslash",
		`"ok" 'not`:  "single quote",
		`x "y\\" "z`: "double quote",
	} {
		_, err := SplitWords(in)
		require.ErrorContains(t, err, want, "split %q", in)
	}
}
