package e2e

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/cli"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// serverOptions configure startServer.
type serverOptions struct {
	// Database is "sqlite" (the default) or "postgres"; each server gets a
	// fresh database (a temporary file, or a new schema dropped at cleanup).
	Database string
	// DatabaseURL, when set, is used as is instead of a fresh database, e.g.
	// to start a second server on the first one's database (srv.DatabaseURL).
	DatabaseURL string
	// Args are extra `tideline serve` flags, e.g. {"--namespace", "team-a"}.
	Args []string
	// Env is the whole environment the server sees (TIDELINE_* fallbacks);
	// the test process's own environment is not passed through.
	Env map[string]string
}

// server is a Tideline server running in-process.
type server struct {
	// BaseURL is http://127.0.0.1:PORT (no trailing slash).
	BaseURL string
	// Database is "sqlite" or "postgres"; DatabaseURL the URL it was given.
	Database    string
	DatabaseURL string

	output *lockedBuffer // stdout and stderr (the logs), for failure reports
}

// URL returns BaseURL + path.
func (s *server) URL(path string) string { return s.BaseURL + path }

// serverStartTimeout bounds migrations + listen + the first 200 from /readyz.
const serverStartTimeout = 30 * time.Second

// announce is serve's "Tideline <version> is running. Open <url>/waterline".
var announce = regexp.MustCompile(`is running\. Open (http://\S+?)/waterline`)

// startServer runs `tideline serve` in-process (cli.Run, exactly as the
// binary does) on a random loopback port and a fresh database, and returns
// once GET /readyz answers 200. At cleanup the server is stopped (its context
// cancelled) and Run must return cleanly; when the test failed, the server's
// output is written to e2e/artifacts/<TestName>/server.log.
func startServer(t *testing.T, opts serverOptions) *server {
	t.Helper()
	if opts.Database == "" {
		opts.Database = "sqlite"
	}
	dbURL := opts.DatabaseURL
	if dbURL == "" {
		switch opts.Database {
		case "sqlite":
			dbURL = "sqlite:" + filepath.Join(t.TempDir(), "tideline.db")
		case "postgres":
			dbURL = dbtest.PostgresURL(t) // drops its schema at cleanup, after the server stopped
		default:
			t.Fatalf("e2e: unknown database %q (want sqlite or postgres)", opts.Database)
		}
	}
	srv := &server{Database: opts.Database, DatabaseURL: dbURL, output: &lockedBuffer{}}
	stdout := &announceWatcher{out: srv.output, found: make(chan string, 1)}

	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--database", dbURL}, opts.Args...)
	getenv := func(name string) string { return opts.Env[name] }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cli.Run(ctx, args, getenv, stdout, srv.output) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("e2e: server stopped with an error: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("e2e: server did not stop within 20s of its context being cancelled")
		}
		if t.Failed() {
			dir := artifactDir(t)
			if err := os.WriteFile(filepath.Join(dir, "server.log"), srv.output.Bytes(), 0o644); err != nil {
				t.Logf("e2e: could not save the server log: %v", err)
			} else {
				t.Logf("e2e: server output in %s", filepath.Join(dir, "server.log"))
			}
		}
	})

	startCtx, stop := context.WithTimeout(ctx, serverStartTimeout)
	defer stop()
	select {
	case srv.BaseURL = <-stdout.found:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("e2e: server exited before listening: %v\n%s", err, srv.output.Bytes())
	case <-startCtx.Done():
		t.Fatalf("e2e: server did not announce its address within %s:\n%s", serverStartTimeout, srv.output.Bytes())
	}
	if err := waitReady(startCtx, srv.URL("/readyz")); err != nil {
		t.Fatalf("e2e: %s never answered 200: %v\n%s", srv.URL("/readyz"), err, srv.output.Bytes())
	}
	return srv
}

// waitReady polls url until it answers 200 or ctx ends.
func waitReady(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// forEachDatabase runs fn as sub-tests "sqlite" (always) and "postgres"
// (when TIDELINE_TEST_DATABASE_URL is set, else that sub-test is skipped and
// says so), each with its own server on a fresh database.
func forEachDatabase(t *testing.T, opts serverOptions, fn func(t *testing.T, srv *server)) {
	t.Helper()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			if db == "postgres" && os.Getenv(dbtest.EnvURL) == "" {
				t.Skipf("%s is not set; PostgreSQL not tested (the README's test command sets it)", dbtest.EnvURL)
			}
			o := opts
			o.Database = db
			fn(t, startServer(t, o))
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// announceWatcher is the server's stdout: it copies everything to out and
// sends the base URL on found once the "is running. Open …" line is complete.
type announceWatcher struct {
	out   *lockedBuffer
	mu    sync.Mutex
	line  []byte
	found chan string
	seen  bool
}

func (w *announceWatcher) Write(p []byte) (int, error) {
	w.out.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		if m := announce.FindSubmatch(w.line[:i]); m != nil {
			w.seen = true
			w.line = nil
			w.found <- string(m[1])
			break
		}
		w.line = w.line[i+1:]
	}
	return len(p), nil
}
