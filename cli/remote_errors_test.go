package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

// Issue 36, finding 5: a --server that answers with a redirect does not
// get the token (nor the body) sent on; the CLI names where it pointed.
func TestRemoteCLIRefusesRedirects(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(target.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	env := map[string]string{"TIDELINE_SERVER": redirector.URL, "TIDELINE_TOKEN": "tl_secret", "TIDELINE_LOG_LEVEL": "warn"}
	for _, args := range [][]string{
		{"schedule", "list"},
		{"notifier", "add", "n", "--url", "https://hooks.example.com/x", "--event", "run_failed", "--secret", "whsec-do-not-leak"},
	} {
		_, _, err := runCLI(t, env, args...)
		require.Error(t, err, "%v", args)
		require.ErrorContains(t, err, "redirect (Location "+target.URL+"/waterline/api/v2/")
	}
	require.Zero(t, reached.Load(), "the redirect's target received nothing")
}

// Issue 36, finding 10: a namespace the token may not see is reported as a
// namespace problem, not as a wrong --server URL; a wrong URL still is.
func TestRemoteCLIReportsAnUnseenNamespace(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, "sqlite")
	token, hash, err := auth.NewToken()
	require.NoError(t, err)
	store, err := auth.Parse(fmt.Appendf(nil, "- name: ops-bot\n  role: admin\n  namespaces: [ops]\n  token_sha256: %s\n", hash))
	require.NoError(t, err)
	srv := httptest.NewServer(web.NewServer(web.Deps{DB: db, Service: scheduling.New(scheduling.Config{DB: db}), Logger: discardLogger(), Auth: web.Auth{Store: store}}))
	t.Cleanup(srv.Close)
	env := map[string]string{"TIDELINE_SERVER": srv.URL, "TIDELINE_TOKEN": token, "TIDELINE_LOG_LEVEL": "warn",
		"TIDELINE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "unused.db")}

	env["TIDELINE_NAMESPACE"] = "payments"
	_, _, err = runCLI(t, env, "schedule", "list")
	require.ErrorIs(t, err, scheduling.ErrNotFound)
	require.ErrorContains(t, err, `namespace "payments" not found (or this token may not see it)`)
	require.NotContains(t, err.Error(), "no such API route")

	// What the router answers for a route it does not have (an older
	// server, a proxy's path prefix left out of --server).
	noRoute := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error": {"code": "not_found", "message": "Not Found"}}`))
	}))
	t.Cleanup(noRoute.Close)
	env["TIDELINE_SERVER"] = noRoute.URL
	_, _, err = runCLI(t, env, "schedule", "list")
	require.ErrorContains(t, err, "no such API route")
}
