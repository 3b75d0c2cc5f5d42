package web

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDocument describes the JSON API; a test keeps it in step with the
// routes registered in routes.go.
//
//go:embed openapi.json
var openAPIDocument []byte

func serveOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDocument)
}
