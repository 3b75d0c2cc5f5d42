package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// ListBackfills answers GET /backfills: the namespace's jobs, newest first,
// keyset-paged (?cursor=next_cursor), optionally of one schedule
// (?schedule_id) or status (?status).
func (h *API) ListBackfills(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultBackfillPage, scheduling.CodeInvalidLimit)
	if err != nil {
		return err
	}
	if limit < 1 || limit > scheduling.MaxBackfillPage {
		return &scheduling.ValidationError{Code: scheduling.CodeInvalidLimit, Fields: map[string]string{"limit": "must be 1-200"}}
	}
	page, err := h.Service.ListBackfills(c.Request().Context(), ns, scheduling.BackfillListQuery{
		ScheduleID: c.QueryParam("schedule_id"), Status: c.QueryParam("status"), Cursor: c.QueryParam("cursor"), Limit: int(limit),
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromBackfillPage(page, h.Clock.Now()))
}

// GetBackfill answers GET /backfills/{id}.
func (h *API) GetBackfill(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	job, err := h.Service.GetBackfill(c.Request().Context(), ns, c.Param("backfill_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.BackfillJobEnvelope{Backfill: apijson.FromBackfillJob(job, h.Clock.Now())})
}

// PauseBackfill answers POST /backfills/{id}/pause.
func (h *API) PauseBackfill(c echo.Context) error {
	return h.backfillAction(c, h.Service.PauseBackfill)
}

// ResumeBackfill answers POST /backfills/{id}/resume.
func (h *API) ResumeBackfill(c echo.Context) error {
	return h.backfillAction(c, h.Service.ResumeBackfill)
}

// CancelBackfill answers POST /backfills/{id}/cancel.
func (h *API) CancelBackfill(c echo.Context) error {
	return h.backfillAction(c, h.Service.CancelBackfill)
}

func (h *API) backfillAction(c echo.Context, act func(ctx context.Context, namespace, id string, cc *scheduling.CommandContext) (*models.Backfill, error)) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.BackfillActionRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	job, err := act(c.Request().Context(), ns, c.Param("backfill_id"), commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.BackfillJobEnvelope{Backfill: apijson.FromBackfillJob(job, h.Clock.Now())})
}
