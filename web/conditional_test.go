package web_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// Issue 37 §7: a console poll whose page has not changed is answered 304
// with no body, against the ETag of its previous answer; any change to what
// the page shows — a paused schedule, or only the clock moving a relative
// time — is answered in full with a new tag. Full pages carry no tag.
func TestPollsAreAnswered304WhenNothingChanged(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db, "")
		for i := range 30 {
			f.must(201, "POST", v2+"/schedules", fmt.Sprintf(`{"schedule_id":"poll-%02d","cron":"0 3 * * *","action":{"workflow_type":"w"}}`, i))
		}
		get := func(path, etag string, header ...string) *httptest.ResponseRecorder {
			t.Helper()
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:8080"
			req.Header.Set("Accept-Encoding", "gzip")
			if etag != "" {
				req.Header.Set("If-None-Match", etag)
			}
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			return rec
		}
		poll := func(etag string) *httptest.ResponseRecorder {
			t.Helper()
			return get("/waterline/schedules?sort=next_fire", etag, "HX-Request", "true")
		}

		first := poll("")
		require.Equal(t, http.StatusOK, first.Code)
		tag := first.Header().Get("ETag")
		require.Regexp(t, `^W/"[A-Za-z0-9_-]{22}"$`, tag)
		zr, err := gzip.NewReader(first.Body)
		require.NoError(t, err)
		body, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Contains(t, string(body), "poll-29", "the tagged answer is the whole page, compressed")

		same := poll(tag)
		require.Equal(t, http.StatusNotModified, same.Code, "nothing changed")
		require.Zero(t, same.Body.Len(), "a 304 has no body")
		require.Equal(t, tag, same.Header().Get("ETag"))
		require.Empty(t, same.Header().Get("Content-Encoding"))
		require.Equal(t, "no-store", same.Header().Get("Cache-Control"), "the browser still keeps nothing")
		require.Equal(t, http.StatusNotModified, poll(`"other", `+tag).Code, "a list of tags, compared weakly")
		require.Equal(t, http.StatusOK, poll(`W/"other"`).Code, "another page's tag")

		f.must(200, "POST", v2+"/schedules/poll-07/pause", `{"reason":"maintenance"}`)
		paused := poll(tag)
		require.Equal(t, http.StatusOK, paused.Code, "a paused schedule changes the page")
		tag2 := paused.Header().Get("ETag")
		require.NotEqual(t, tag, tag2)
		require.Equal(t, http.StatusNotModified, poll(tag2).Code)

		f.clock.Advance(2 * time.Hour) // every "in N h" of the page moves
		require.Equal(t, http.StatusOK, poll(tag2).Code, "the clock alone changes what the page says")

		page := get("/waterline/schedules?sort=next_fire", "")
		require.Equal(t, http.StatusOK, page.Code)
		require.Empty(t, page.Header().Get("ETag"), "a full page carries no tag")
		require.Equal(t, http.StatusOK, get("/waterline/schedules?sort=next_fire", tag2).Code, "and is never a 304")

		missing := get("/waterline/schedules/nope", "", "HX-Request", "true")
		require.Equal(t, http.StatusNotFound, missing.Code)
		require.Empty(t, missing.Header().Get("ETag"), "only a 200 is tagged")
	})
}
