package handlers

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// Health answers the orchestrator's probes.
type Health struct {
	DB    *bun.DB
	Clock scheduling.Clock
	// Draining, when set, reports the process shutting down: /readyz then
	// answers 503 at once, so a load balancer's next probe takes this
	// replica out while it still serves (cli/serve.go, --shutdown-drain).
	Draining func() bool

	mu       sync.Mutex
	probedAt time.Time
	probeErr error
}

// writeProbeEvery throttles /readyz's write: probes in between reuse the
// last outcome, so a flood of unauthenticated probes cannot turn into a
// flood of writes.
const writeProbeEvery = 5 * time.Second

// Live answers 200 while the process serves HTTP.
func (h *Health) Live(c echo.Context) error {
	return c.JSON(http.StatusOK, apijson.Health{Status: "ok"})
}

// Ready answers 200 only when the database answers, every migration is
// applied and a write commits, so a load balancer keeps traffic away during
// an outage — including a database that still answers reads and pings but
// refuses every write (a full disk).
func (h *Health) Ready(c echo.Context) error {
	if h.Draining != nil && h.Draining() {
		return c.JSON(http.StatusServiceUnavailable, apijson.Health{Status: "unavailable", Reason: "shutting down"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := h.DB.PingContext(ctx); err != nil {
		return c.JSON(http.StatusServiceUnavailable, apijson.Health{Status: "unavailable", Reason: "database unreachable"})
	}
	pending, err := migrations.Pending(ctx, h.DB)
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, apijson.Health{Status: "unavailable", Reason: "database unreachable"})
	}
	if pending > 0 {
		return c.JSON(http.StatusServiceUnavailable, apijson.Health{Status: "unavailable", Reason: "migrations pending"})
	}
	if err := h.probeWrite(ctx); err != nil {
		return c.JSON(http.StatusServiceUnavailable, apijson.Health{Status: "unavailable", Reason: "database refuses writes"})
	}
	return c.JSON(http.StatusOK, apijson.Health{Status: "ready"})
}

func (h *Health) probeWrite(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.Clock.Now()
	if since := now.Sub(h.probedAt); !h.probedAt.IsZero() && since >= 0 && since < writeProbeEvery {
		return h.probeErr
	}
	h.probedAt, h.probeErr = now, models.ProbeWrite(ctx, h.DB, now)
	return h.probeErr
}
