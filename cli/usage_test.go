package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, nil, "--help")
	require.ErrorIs(t, err, ErrHelpShown)
	require.Contains(t, out, "  schedule   list, add, describe")
	require.Contains(t, out, "  tick       run one scheduling pass")

	out, _, err = runCLI(t, nil, "schedule", "--help")
	require.ErrorIs(t, err, ErrHelpShown)
	require.Contains(t, out, "Usage: tideline schedule <command> [flags]")
	for name := range scheduleCommands() {
		require.Contains(t, out, "\n  "+name+" ")
	}

	cases := [][]string{{"tick"}}
	for name := range scheduleCommands() {
		cases = append(cases, []string{"schedule", name})
	}
	for _, args := range cases {
		t.Run(args[len(args)-1], func(t *testing.T) {
			t.Parallel()
			_, errOut, err := runCLI(t, nil, append(args, "--help")...)
			require.ErrorIs(t, err, ErrHelpShown)
			requireExit(t, 0, err)
			require.Contains(t, errOut, "Example:\n  tideline "+strings.Join(args, " ")+" ")
			require.Contains(t, errOut, "-namespace")
			require.Contains(t, errOut, "-database")
		})
	}
	// --help after the <id> is still help.
	_, _, err = runCLI(t, nil, "schedule", "pause", "some-id", "--help")
	require.ErrorIs(t, err, ErrHelpShown)
}

func TestScheduleUsageErrors(t *testing.T) {
	t.Parallel()
	// No case reaches the database: usage errors come first.
	env := map[string]string{"TIDELINE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "never", "x.db")}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no schedule command", []string{"schedule"}, "missing schedule command"},
		{"unknown schedule command", []string{"schedule", "explode"}, `unknown schedule command "explode"`},
		{"missing id", []string{"schedule", "describe"}, "missing <id> (see 'tideline schedule describe <id> --help')"},
		{"extra argument", []string{"schedule", "resume", "a", "b"}, `unexpected argument "b"`},
		{"unknown flag", []string{"schedule", "list", "--colour"}, "flag provided but not defined: -colour"},
		{"bad namespace", []string{"schedule", "list", "--namespace", "Prod!"}, `invalid --namespace "Prod!"`},
		{"bad output", []string{"schedule", "list", "--output", "yaml"}, `invalid --output "yaml": want table, json, jsonl`},
		{"bad status", []string{"schedule", "list", "--status", "active,sleeping"}, `invalid --status "sleeping"`},
		{"add without workflow type", []string{"schedule", "add", "x", "--cron", "@daily"}, "missing --workflow-type"},
		{"add without spec", []string{"schedule", "add", "x", "--workflow-type", "w"}, "give at least one --cron, --every or --at"},
		{"add with calendar interval", []string{"schedule", "add", "x", "--workflow-type", "w", "--every", "1 month"},
			`invalid --every "1 month": months and years have no fixed length; use a cron expression`},
		{"add with bad interval", []string{"schedule", "add", "x", "--workflow-type", "w", "--every", "often"}, `invalid --every "often"`},
		{"add with bad input", []string{"schedule", "add", "x", "--workflow-type", "w", "--cron", "@daily", "--input", "{"}, "invalid --input"},
		{"add with two inputs", []string{"schedule", "add", "x", "--workflow-type", "w", "--cron", "@daily", "--input", "1 2"}, "invalid --input"},
		{"add with bad jitter", []string{"schedule", "add", "x", "--workflow-type", "w", "--cron", "@daily", "--jitter", "soon"}, `invalid --jitter "soon"`},
		{"describe bad output", []string{"schedule", "describe", "x", "--output", "table"}, `invalid --output "table": want text, json`},
		{"backfill without from", []string{"schedule", "backfill", "x", "--to", "2026-01-02T00:00:00Z"}, "missing --from (RFC 3339"},
		{"backfill bad to", []string{"schedule", "backfill", "x", "--from", "2026-01-01T00:00:00Z", "--to", "tomorrow"}, `invalid --to "tomorrow": want RFC 3339`},
		{"history limit too big", []string{"schedule", "history", "x", "--limit", "501"}, "invalid --limit 501: want 1-500"},
		{"history limit zero", []string{"schedule", "history", "x", "--limit", "0"}, "invalid --limit 0: want 1-500"},
		{"history negative cursor", []string{"schedule", "history", "x", "--after-sequence", "-1"}, "invalid --after-sequence -1"},
		{"history non-integer limit", []string{"schedule", "history", "x", "--limit", "ten"}, `invalid value "ten" for flag -limit`},
		{"history bad output", []string{"schedule", "history", "x", "--output", "csv"}, `invalid --output "csv"`},
		{"tick limit", []string{"tick", "--limit", "0"}, "invalid --limit 0: want 1-1000"},
		{"tick positional", []string{"tick", "now"}, `unexpected argument "now"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := runCLI(t, env, tc.args...)
			var usage *UsageError
			require.ErrorAs(t, err, &usage)
			requireExit(t, 2, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
