package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/auth"
)

// runCLI runs one command in-process with the given environment.
func runCLI(t *testing.T, environ map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, args, func(k string) string { return environ[k] }, strings.NewReader(stdinFor(environ)), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, nil, "version")
	require.NoError(t, err)
	require.Equal(t, "tideline dev\n", out)

	out, _, err = runCLI(t, nil, "--help")
	require.ErrorIs(t, err, ErrHelpShown)
	require.Contains(t, out, "serve")
	require.Contains(t, out, "migrate")

	_, errOut, err := runCLI(t, nil, "serve", "--help")
	require.ErrorIs(t, err, ErrHelpShown)
	require.Contains(t, errOut, "Example:")
	require.Contains(t, errOut, "-addr")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		environ map[string]string
		args    []string
		want    string
	}{
		{"no command", nil, nil, "missing command"},
		{"unknown command", nil, []string{"fly"}, `unknown command "fly"`},
		{"unknown flag", nil, []string{"serve", "--colour"}, "flag provided but not defined: -colour"},
		{"bad log format", nil, []string{"serve", "--log-format", "xml"}, `invalid --log-format "xml"`},
		{"bad log level from env", map[string]string{"TIDELINE_LOG_LEVEL": "loud"}, []string{"serve"}, `invalid --log-level "loud"`},
		{"bad addr", nil, []string{"serve", "--addr", "8080"}, `invalid --addr "8080"`},
		{"bad namespace", nil, []string{"migrate", "--namespace", "Prod!"}, `invalid --namespace "Prod!"`},
		{"bad database scheme", nil, []string{"migrate", "--database", "mysql://x"}, `invalid --database "mysql://x"`},
		{"retention too short", nil, []string{"serve", "--retain-runs", "5m"}, `invalid --retain-runs "5m"`},
		{"bad purge from env", map[string]string{"TIDELINE_PURGE_DELETED_AFTER": "soon"}, []string{"serve"}, `invalid --purge-deleted-after "soon"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := runCLI(t, tc.environ, tc.args...)
			var usage *UsageError
			require.ErrorAs(t, err, &usage)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestServeFailsFastOnUnreachablePostgres(t *testing.T) {
	t.Parallel()
	_, _, err := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--database", "postgres://postgres@127.0.0.1:1/none")
	require.Error(t, err)
	var usage *UsageError
	require.False(t, errors.As(err, &usage), "a database outage is a failure (exit 1), not a usage error")
	require.Contains(t, err.Error(), "open database postgres://postgres@127.0.0.1:1/none")
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	out, _, err := runCLI(t, map[string]string{"TIDELINE_DATABASE_URL": dbURL}, "migrate")
	require.NoError(t, err)
	require.Equal(t, "Applied 0001_init.sql\nApplied 0002_claim_order_index.sql\nApplied 0003_run_expiry_indexes.sql\nApplied 0004_pause_reason.sql\nApplied 0005_run_outcomes.sql\nApplied 0006_security.sql\nApplied 0007_ledger.sql\nApplied 0008_notifications.sql\nApplied 0009_light_fire.sql\nApplied 0010_health_pending.sql\nApplied 0011_history_type_index.sql\nApplied 0012_due_queue.sql\nApplied 0014_http_targets.sql\nApplied 0016_object_audit.sql\nApplied 0019_backfill_jobs.sql\nApplied 0022_audit_compaction.sql\nApplied 0023_calendars.sql\nApplied 0024_notifier_health.sql\nApplied 0025_namespace_schedule_counts.sql\nApplied 0026_search_indexes.sql\nApplied 0027_compact_recent_actions.sql\nApplied 0031_search_side_tables.sql\nApplied 0032_namespace_failing_counts.sql\nApplied 0033_schedule_rings.sql\n", out)
	out, _, err = runCLI(t, nil, "migrate", "--database", dbURL)
	require.NoError(t, err)
	require.Equal(t, "Database is up to date.\n", out)
}

func TestServeRefusesNonLoopbackWithoutTokens(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, _, err := runCLI(t, nil, "serve", "--addr", addr, "--database", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
		var usage *UsageError
		require.ErrorAs(t, err, &usage, addr)
		require.Contains(t, err.Error(), "refusing to serve")
		require.Contains(t, err.Error(), "tideline token create")
	}
	// Behind a proxy every peer is the proxy, so loopback proves nothing.
	for _, args := range [][]string{{"--trust-proxy"}, {}} {
		env := map[string]string{}
		if len(args) == 0 {
			env["TIDELINE_TRUST_PROXY"] = "1"
		}
		_, _, err := runCLI(t, env, append([]string{"serve", "--addr", "127.0.0.1:0", "--database", "sqlite:" + filepath.Join(t.TempDir(), "x.db")}, args...)...)
		var usage *UsageError
		require.ErrorAs(t, err, &usage, "trust-proxy %v", args)
		require.Contains(t, err.Error(), "refusing --trust-proxy without authentication")
	}
	_, _, err := runCLI(t, map[string]string{"TIDELINE_TOKENS": "principals: [{name: x, role: root}]"}, "serve")
	var usage *UsageError
	require.ErrorAs(t, err, &usage, "a broken tokens document is a configuration error")
}

func TestTokenCreate(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, nil, "token", "create", "--name", "ci-bot", "--role", "operator", "--namespace", "payments")
	require.NoError(t, err)
	lines := strings.Split(out, "\n")
	token := strings.TrimSpace(lines[1])
	require.True(t, strings.HasPrefix(token, "tl_"), out)
	entry := out[strings.Index(out, "  - name"):]
	store, err := auth.Parse([]byte("principals:\n" + entry))
	require.NoError(t, err, "the printed entry is a valid tokens file")
	p, ok := store.Authenticate(token)
	require.True(t, ok)
	require.Equal(t, "operator", p.Role)
	require.Equal(t, []string{"payments"}, p.Namespaces)
	require.NotContains(t, entry, token, "the file holds only the hash")

	_, _, err = runCLI(t, nil, "token", "create", "--name", "x", "--role", "root")
	var usage *UsageError
	require.ErrorAs(t, err, &usage)
}

// stdinFor is the standard input of a test run: environ["<stdin>"].
func stdinFor(environ map[string]string) string { return environ["<stdin>"] }
