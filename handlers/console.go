package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/views"
)

// Console serves the operator console's pages.
type Console struct {
	Version string
}

// Home is the console's landing page.
func (h *Console) Home(c echo.Context) error {
	return ok(c, views.Home(views.LayoutView{Title: "Tideline", Version: h.Version}))
}
