package web_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/web"
)

func newServer(t *testing.T, db *bun.DB) http.Handler {
	t.Helper()
	return web.NewServer(web.Deps{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
}

func get(t *testing.T, h http.Handler, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = "127.0.0.1:8080" // and addressed to this machine (no DNS rebinding)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		h := newServer(t, db)

		rec := get(t, h, "/healthz", nil)
		require.Equal(t, http.StatusOK, rec.Code)
		require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())

		rec = get(t, h, "/readyz", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.JSONEq(t, `{"status":"ready"}`, rec.Body.String())

		// An unmigrated schema is not ready: drop the bookkeeping row.
		_, err := db.ExecContext(t.Context(), "DELETE FROM tideline_migrations")
		require.NoError(t, err)
		rec = get(t, h, "/readyz", nil)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.JSONEq(t, `{"status":"unavailable","reason":"migrations pending"}`, rec.Body.String())

		// A database that is gone is not ready either.
		require.NoError(t, db.Close())
		rec = get(t, h, "/readyz", nil)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.JSONEq(t, `{"status":"unavailable","reason":"database unreachable"}`, rec.Body.String())
	})
}

func TestErrorsAreJSONForTheAPIAndPagesForTheConsole(t *testing.T) {
	t.Parallel()
	h := newServer(t, dbtest.SQLite(t))

	rec := get(t, h, "/waterline/api/v2/nothing-here", nil)
	require.Equal(t, http.StatusNotFound, rec.Code)
	var body map[string]map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, "not_found", body["error"]["code"])

	rec = get(t, h, "/waterline/nothing-here", nil)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "text/html")
	require.Contains(t, rec.Body.String(), `data-testid="error-title"`)
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	h := newServer(t, dbtest.SQLite(t))
	for _, path := range []string{"/waterline", "/healthz", "/nope", "/static/tideline.css"} {
		rec := get(t, h, path, nil)
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), path)
		require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"), path)
		csp := rec.Header().Get("Content-Security-Policy")
		require.Contains(t, csp, "frame-ancestors 'none'", path)
		require.Contains(t, csp, "script-src 'self'", path)
		require.NotContains(t, csp, "unsafe-inline", path)
		require.NotEmpty(t, rec.Header().Get("X-Request-Id"), path)
	}
}

func TestConsoleHomeAndStaticAssets(t *testing.T) {
	t.Parallel()
	h := newServer(t, dbtest.SQLite(t))
	// /waterline opens the registry, in the namespace asked for.
	rec := get(t, h, "/waterline", nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/waterline/schedules", rec.Header().Get("Location"))
	rec = get(t, h, "/waterline?namespace=team-a", nil)
	require.Equal(t, "/waterline/schedules?namespace=team-a", rec.Header().Get("Location"))

	rec = get(t, h, "/static/favicon.svg", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "image/svg+xml")

	rec = get(t, h, "/static/tideline.css", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "text/css")
	rec = get(t, h, "/static/htmx-2.0.11.min.js", nil)
	require.Equal(t, http.StatusOK, rec.Code)
}
