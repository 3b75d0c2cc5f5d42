// Package handlers holds thin echo adapters: they bind and check the shape of
// a request, call the service, and render a view or JSON. Business rules live
// in scheduling/, presentation in views/.
package handlers

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// BadRequestError is a request that cannot be parsed (malformed JSON, wrong
// types, unknown fields): HTTP 400.
type BadRequestError struct {
	Code    string
	Message string
}

func (e *BadRequestError) Error() string { return e.Message }

// Render writes a templ component as an HTML response. The page is
// rendered whole into a buffer, then sent in one write with its length: a
// registry page is ~350 KB, which rendered straight into the response went
// out 4 KB a system call (a sixth of the page's CPU); and a page that fails
// halfway is answered with the error, not a 200 and half a page.
func Render(c echo.Context, status int, component templ.Component) error {
	buf := pages.Get().(*bytes.Buffer)
	defer releasePage(buf)
	if err := component.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(buf.Bytes())
	return err
}

// pages are Render's buffers, reused: a page's buffer grows to its size
// once instead of for every request.
var pages = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPage bounds the buffers kept for reuse: a rare huge page (an
// export, a long history) is left to the collector.
const maxPooledPage = 2 << 20

func releasePage(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledPage {
		buf.Reset()
		pages.Put(buf)
	}
}

// ok renders a page with 200.
func ok(c echo.Context, component templ.Component) error {
	return Render(c, http.StatusOK, component)
}
