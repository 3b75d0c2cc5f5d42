package web_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// Issue 37 §7: the console's htmx requests, JSON answers and static assets
// are gzipped for clients that accept it; a full console page is not
// (BREACH: another site can navigate a signed-in browser to one).
func TestResponsesAreCompressedWhereSafe(t *testing.T) {
	t.Parallel()
	f := newAPI(t, dbtest.SQLite(t), "")
	for i := range 20 {
		f.must(201, "POST", v2+"/schedules", fmt.Sprintf(`{"schedule_id":"compress-%02d","cron":"0 3 * * *","action":{"workflow_type":"w"}}`, i))
	}
	get := func(path string, header ...string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:8080"
		req.Header.Set("Accept-Encoding", "gzip")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, path)
		return rec
	}
	gunzip := func(rec *httptest.ResponseRecorder) string {
		t.Helper()
		require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
		r, err := gzip.NewReader(rec.Body)
		require.NoError(t, err)
		body, err := io.ReadAll(r)
		require.NoError(t, err)
		return string(body)
	}

	poll := get("/waterline/schedules", "HX-Request", "true")
	require.Contains(t, gunzip(poll), "compress-19", "the registry's poll, compressed")
	require.Contains(t, poll.Header().Get("Vary"), "Accept-Encoding")

	page := get("/waterline/schedules")
	require.Empty(t, page.Header().Get("Content-Encoding"), "a full page is never compressed")
	require.True(t, strings.Contains(page.Body.String(), "compress-19"))

	require.Contains(t, gunzip(get(v2+"/schedules")), `"compress-19"`)
	require.Contains(t, gunzip(get("/static/tideline.css")), "table-wrap")
}
