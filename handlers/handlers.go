// Package handlers holds thin echo adapters: they bind and check the shape of
// a request, call the service, and render a view or JSON. Business rules live
// in scheduling/, presentation in views/.
package handlers

import (
	"net/http"

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

// Render writes a templ component as an HTML response.
func Render(c echo.Context, status int, component templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return component.Render(c.Request().Context(), c.Response())
}

// ok renders a page with 200.
func ok(c echo.Context, component templ.Component) error {
	return Render(c, http.StatusOK, component)
}
