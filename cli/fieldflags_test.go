package cli

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/scheduling"
)

// The field table's flags read each value in the field's text form: a
// field in seconds also as a duration, a map one key=value a flag, an
// empty value as the field's empty one (null clears; "" for text).
func TestFieldFlagsReadTheFieldsTextForms(t *testing.T) {
	t.Parallel()
	parse := func(t *testing.T, args ...string) (map[string]string, error) {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		ff := bindFieldFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		values, err := ff.values()
		out := map[string]string{}
		for k, v := range values {
			out[k] = string(v)
		}
		return out, err
	}
	got, err := parse(t, "--jitter", "1m", "--start-deadline", "PT15M", "--catchup-window", "90", "--max-runs", "7",
		"--label", "team=data", "--label", "tier = 1", "--queue", "", "--note", "  hi  ", "--overlap", "allow_all")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"jitter_seconds": "60", "start_deadline_seconds": "900", "catchup_window_seconds": "90",
		"max_runs": "7", "labels": `{"team":"data","tier":"1"}`, "queue": "null", "note": `"hi"`, "overlap_policy": `"allow_all"`}, got)

	_, err = parse(t, "--max-runs", "lots")
	require.EqualError(t, err, `invalid --max-runs "lots": must be a whole number`)
	_, err = parse(t, "--jitter", "soon")
	require.ErrorContains(t, err, `invalid --jitter "soon": want seconds or a duration`)
	_, err = parse(t, "--label", "team=a", "--label", "team=b")
	require.ErrorContains(t, err, "key team given twice")
	_, err = parse(t, "--memo", "novalue")
	require.ErrorContains(t, err, `want key=value, got "novalue"`)

	// Every field with a flag is bound, and the rest are spec and action.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	bindFieldFlags(fs)
	for _, f := range scheduling.Fields {
		if f.Simple() {
			require.NotNil(t, fs.Lookup(f.Flag), "the field %s has no flag", f.Key)
		}
	}
}
