package cli

import (
	"context"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// forEachDialect runs fn against a fresh database of each dialect, with the
// environment a CLI run needs (database URL, quiet logs, $USER), in both
// modes: direct (the CLI opens the database) and remote (--server: the CLI
// talks to an in-process server over that database, with a token). The
// same assertions and golden files hold in both, which is the proof that
// remote output is byte-identical.
func forEachDialect(t *testing.T, fn func(t *testing.T, d dialectEnv)) {
	t.Helper()
	for _, name := range dbtest.Dialects {
		for _, mode := range []string{"direct", "remote"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				var url string
				if name == "sqlite" {
					url = "sqlite:" + filepath.Join(t.TempDir(), "x.db")
				} else {
					url = dbtest.PostgresURL(t)
				}
				d := dialectEnv{name: name, mode: mode, url: url, environ: map[string]string{
					"TIDELINE_DATABASE_URL":            url,
					"TIDELINE_LOG_LEVEL":               "warn",
					"USER":                             "alice",
					"TIDELINE_ALLOW_PRIVATE_NOTIFIERS": "1",
				}}
				// Only serve and migrate create a database.
				d.run(t, "migrate")
				if mode == "remote" {
					d.environ["TIDELINE_SERVER"], d.environ["TIDELINE_TOKEN"] = startServer(t, d.db(t))
				}
				fn(t, d)
			})
		}
	}
}

// startServer serves the real router over db with one admin token, named
// alice like $USER in direct mode, and returns its URL and the token.
func startServer(t *testing.T, db *bun.DB) (string, string) {
	t.Helper()
	store := &auth.Store{}
	token, err := store.AddEphemeral("alice", auth.RoleAdmin)
	require.NoError(t, err)
	// Private notifier targets are allowed: the tests' receivers listen
	// on 127.0.0.1 (direct mode gets TIDELINE_ALLOW_PRIVATE_NOTIFIERS).
	svc := scheduling.New(scheduling.Config{DB: db, Notify: scheduling.NotifyConfig{AllowPrivate: true}})
	srv := httptest.NewServer(web.NewServer(web.Deps{DB: db, Service: svc,
		Logger: discardLogger(), Auth: web.Auth{Store: store}}))
	t.Cleanup(srv.Close)
	// As serve does: backfill jobs are worked beside the API.
	w := &scheduling.BackfillWorker{Service: svc, Period: 100 * time.Millisecond}
	w.Start(context.Background())
	t.Cleanup(w.Stop)
	return srv.URL, token
}

type dialectEnv struct {
	name    string
	mode    string // direct or remote
	url     string
	environ map[string]string
}

// source is the command context source the audit stream records: cli in
// both modes (remote mode sends X-Tideline-Source: cli).
func (d dialectEnv) source() string { return "cli" }

// run is a CLI run that must succeed; it returns stdout.
func (d dialectEnv) run(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runCLI(t, d.environ, args...)
	require.NoError(t, err, "tideline %s\nstderr: %s", strings.Join(args, " "), errOut)
	return out
}

// fail is a CLI run that must fail with a failure (exit 1), not a usage
// error; it returns the error as main would print it.
func (d dialectEnv) fail(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, d.environ, args...)
	require.Error(t, err, "tideline %s should fail", strings.Join(args, " "))
	requireExit(t, 1, err)
	return out, err
}

// exec runs SQL on the test database (moving next_fire_at into the past,
// corrupting a stored spec): the CLI uses the real clock, so tests make
// schedules due by changing their rows rather than by waiting.
func (d dialectEnv) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	ctx := context.Background()
	db, err := database.Open(ctx, d.url)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, query, args...)
	require.NoError(t, err)
}

// db opens the test database for reading; closed at cleanup.
func (d dialectEnv) db(t *testing.T) *bun.DB {
	t.Helper()
	db, err := database.Open(context.Background(), d.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// requireExit asserts the exit status main would use for err.
func requireExit(t *testing.T, want int, err error) {
	t.Helper()
	got := 0
	var usage *UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelpShown):
	case errors.As(err, &usage), errors.Is(err, ErrDrift):
		got = 2
	default:
		got = 1
	}
	require.Equal(t, want, got, "exit status for error %v", err)
}

var (
	timestampRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z`)
	localTimeRe = regexp.MustCompile(`\(\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]{3,5}\)`)
	ulidRe      = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
)

// normalize replaces what depends on the wall clock or on randomness with
// placeholders of the same width, so tabwriter columns stay aligned: instants
// from the test run onwards (past fixed times such as backfill occurrences
// are kept), local renderings of them, and ULIDs (manual instance IDs end in one).
func normalize(s string, since time.Time) string {
	since = since.Add(-time.Minute)
	s = timestampRe.ReplaceAllStringFunc(s, func(m string) string {
		ts, err := time.Parse(time.RFC3339Nano, m)
		if err != nil || ts.Before(since) {
			return m
		}
		return "<now>" + strings.Repeat("~", len(m)-len("<now>"))
	})
	s = localTimeRe.ReplaceAllStringFunc(s, func(m string) string {
		return "(<local>" + strings.Repeat("~", len(m)-len("(<local>)")) + ")"
	})
	return ulidRe.ReplaceAllStringFunc(s, func(m string) string { return "<ulid>" + strings.Repeat("~", len(m)-len("<ulid>")) })
}

// golden compares got with testdata/name; -update rewrites the file (from
// the SQLite run only: both dialects must print the same).
func golden(t *testing.T, d dialectEnv, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update && d.name == "sqlite" && d.mode == "direct" {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./cli -run %s -update", t.Name())
	require.Equal(t, string(want), got, "output differs from %s (run with -update to accept)", path)
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	in := "2026-01-01T00:00:00.000000Z 2026-11-30T02:05:00.123456Z (2026-11-29 21:05 EST) 01KP2M3N4Q5R6S7T8V9W0XYZAB schedule:x:manual:01KP2M3N4Q5R6S7T8V9W0XYZAC sch-01kp"
	want := "2026-01-01T00:00:00.000000Z <now>~~~~~~~~~~~~~~~~~~~~~~ (<local>~~~~~~~~~~~~~) <ulid>~~~~~~~~~~~~~~~~~~~~ schedule:x:manual:<ulid>~~~~~~~~~~~~~~~~~~~~ sch-01kp"
	got := normalize(in, since)
	require.Equal(t, want, got)
	require.Equal(t, len(in), len(got), "placeholders keep the width")
}
