package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/migrations"
)

// Health answers the orchestrator's probes.
type Health struct {
	DB *bun.DB
}

// Live answers 200 while the process serves HTTP.
func (h *Health) Live(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// Ready answers 200 only when the database answers and every migration is
// applied, so a load balancer keeps traffic away during an outage.
func (h *Health) Ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := h.DB.PingContext(ctx); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
	}
	pending, err := migrations.Pending(ctx, h.DB)
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
	}
	if pending > 0 {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "migrations pending"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
