package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// notModified answers the console's polls with 304 Not Modified when the
// page they would swap in is byte for byte the one the poller already
// shows (issue 37 §7: a registry of 50 rows is ~380 KB of HTML every 10 s).
//
// The validator is the content itself — a hash of the rendered HTML — and
// not a data version: what a page shows comes from schedules, runs, health,
// notifier state and the clock (relative times such as "in 4 min"), and a
// version that missed one of them would hide a change; a hash cannot. The
// server still renders the page (a few milliseconds), the wire and the
// browser's swap are what a 304 saves. A registry whose soonest time is
// minutes away reads the same for most of a minute, so most of its polls
// are 304s; one showing "in 42 s" changes every poll, truly.
//
// Every response stays Cache-Control: no-store (transportHeaders): the
// browser keeps nothing. console.js remembers the ETag of a poller's last
// answer, sends it as If-None-Match on that poller's next request only, and
// does not swap a 304. Only htmx GETs (HX-Request) are hashed; a full page
// and the JSON API are left as they are.
func notModified(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodGet || r.Header.Get("HX-Request") != "true" || strings.HasPrefix(r.URL.Path, "/static/") {
			return next(c)
		}
		res := c.Response()
		orig := res.Writer
		buf := &bufferedWriter{ResponseWriter: orig}
		res.Writer = buf
		err := next(c)
		res.Writer = orig
		if !buf.wroteHeader {
			return err // nothing rendered: the error handler writes to orig
		}
		if buf.status == http.StatusOK && strings.HasPrefix(orig.Header().Get(echo.HeaderContentType), echo.MIMETextHTML) {
			tag := contentTag(buf.body.Bytes())
			orig.Header().Set("ETag", tag)
			if etagMatches(r.Header.Get("If-None-Match"), tag) {
				h := orig.Header()
				h.Del(echo.HeaderContentType)
				h.Del(echo.HeaderContentLength)
				orig.WriteHeader(http.StatusNotModified)
				res.Status = http.StatusNotModified // as the access log and metrics see it
				res.Size = 0
				return err
			}
		}
		orig.WriteHeader(buf.status)
		_, _ = orig.Write(buf.body.Bytes())
		return err
	}
}

// contentTag is a weak validator (the body may travel gzipped or not) of
// 128 bits of the body's SHA-256.
func contentTag(body []byte) string {
	sum := sha256.Sum256(body)
	return `W/"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// etagMatches reads If-None-Match as RFC 9110 §13.1.2 asks: a list of
// tags compared weakly, or "*".
func etagMatches(header, tag string) bool {
	if header == "" || len(header) > 1024 {
		return false
	}
	want := strings.TrimPrefix(tag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// bufferedWriter holds a response until it is known whether it goes out
// whole or as a 304. Headers are the wrapped writer's own.
type bufferedWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *bufferedWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
}

func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush is a no-op until the handler returns: nothing is sent early.
func (w *bufferedWriter) Flush() {}
