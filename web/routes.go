package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/handlers"
	"github.com/tidelinehq/tideline/static"
)

// registerRoutes lists every route of the server in one place.
func registerRoutes(e *echo.Echo, d Deps) {
	health := &handlers.Health{DB: d.DB}
	e.GET("/healthz", health.Live)
	e.GET("/readyz", health.Ready)

	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", static.Handler())))

	console := &handlers.Console{Version: d.Version}
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/waterline") })
	e.GET("/waterline", console.Home)
}
