package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// The versions of a schedule (CONTRACT §16) on the JSON API.

// versionNumber reads a version number (a path parameter or query field).
func versionNumber(name, raw string) (int64, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, scheduling.NewValidationError(name, "must be a version number: 1, 2, 3…")
	}
	return n, nil
}

// ScheduleVersions answers GET /schedules/{id}/versions.
func (h *API) ScheduleVersions(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sch, err := h.Service.Get(ctx, ns, c.Param("schedule_id"))
	if err != nil {
		return err
	}
	versions, err := h.Service.Versions(ctx, ns, sch.ScheduleID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromVersions(sch, versions))
}

// ScheduleVersion answers GET /schedules/{id}/versions/{n}.
func (h *API) ScheduleVersion(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	n, err := versionNumber("n", c.Param("n"))
	if err != nil {
		return err
	}
	v, err := h.Service.Version(c.Request().Context(), ns, c.Param("schedule_id"), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromVersionDetail(v))
}

// ScheduleVersionDiff answers GET /schedules/{id}/versions/diff?from=A&to=B:
// to defaults to the latest version, from to the one before to.
func (h *API) ScheduleVersionDiff(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	id := c.Param("schedule_id")
	from, to, err := h.diffRange(c, ns, id)
	if err != nil {
		return err
	}
	d, err := h.Service.DiffVersions(c.Request().Context(), ns, id, from, to)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromVersionDiff(id, d))
}

func (h *API) diffRange(c echo.Context, ns, id string) (from, to int64, err error) {
	return versionRange(c, func() (int64, error) {
		versions, err := h.Service.Versions(c.Request().Context(), ns, id)
		return int64(len(versions)), err
	})
}

// versionRange reads ?from and ?to of a comparison; latest counts the
// versions when one of them is left out.
func versionRange(c echo.Context, latest func() (int64, error)) (from, to int64, err error) {
	v := &scheduling.ValidationError{Code: scheduling.CodeValidationFailed}
	read := func(name string) int64 {
		raw := c.QueryParam(name)
		if raw == "" {
			return 0
		}
		n, err := versionNumber(name, raw)
		if err != nil {
			v.Add(name, "must be a version number: 1, 2, 3…")
		}
		return n
	}
	from, to = read("from"), read("to")
	if err := v.OrNil(); err != nil {
		return 0, 0, err
	}
	if to == 0 {
		if to, err = latest(); err != nil {
			return 0, 0, err
		}
	}
	if from == 0 {
		from = max(to-1, 1)
	}
	return from, to, nil
}

// RevertSchedule answers POST /schedules/{id}/versions/{n}/revert with the
// schedule as the revert left it; ?dry_run=true reports what it would
// change and the next fire times before and after.
func (h *API) RevertSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	dry, err := dryRun(c)
	if err != nil {
		return err
	}
	n, err := versionNumber("n", c.Param("n"))
	if err != nil {
		return err
	}
	var req apijson.RevertRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	ctx, id := c.Request().Context(), c.Param("schedule_id")
	if dry {
		plan, err := h.Service.PlanRevert(ctx, ns, id, n)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, apijson.FromRevertPlan(plan))
	}
	sch, err := h.Service.Revert(ctx, ns, id, n, commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	d, err := h.Service.Describe(ctx, ns, sch.ScheduleID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromDescription(d))
}
