package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// ListCalendars answers GET /calendars?cursor&limit.
func (h *API) ListCalendars(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	if err != nil {
		return err
	}
	page, err := h.Service.ListCalendars(c.Request().Context(), ns, c.QueryParam("cursor"), int(limit))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromCalendarPage(page))
}

// CreateCalendar answers POST /calendars with 201 and the calendar.
func (h *API) CreateCalendar(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.CalendarWrite
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	cal, err := h.Service.CreateCalendar(c.Request().Context(), ns, req.Input(""), commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, apijson.FromCalendar(cal, nil))
}

// GetCalendar answers GET /calendars/{name} with the schedules using it.
func (h *API) GetCalendar(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	v, err := h.Service.GetCalendar(c.Request().Context(), ns, c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromCalendarView(v))
}

// calendarChange reads the body of PATCH and impact: the fields to change;
// a name, if given, must be the path's (a calendar is not renamed).
func calendarChange(c echo.Context) (scheduling.CalendarInput, error) {
	var req apijson.CalendarWrite
	if err := decodeJSON(c, &req, false); err != nil {
		return scheduling.CalendarInput{}, err
	}
	if req.Name != "" && req.Name != c.Param("name") {
		return scheduling.CalendarInput{}, scheduling.NewValidationError("name", "a calendar cannot be renamed; create one under the new name")
	}
	return req.Input(c.Param("name")), nil
}

// UpdateCalendar answers PATCH /calendars/{name}: the calendar and the
// schedules the change re-planned (in the same transaction).
func (h *API) UpdateCalendar(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	in, err := calendarChange(c)
	if err != nil {
		return err
	}
	ch, err := h.Service.UpdateCalendar(c.Request().Context(), ns, c.Param("name"), in, commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromCalendarChange(ch))
}

// DeleteCalendar answers DELETE /calendars/{name}: 204, or 409
// calendar_in_use naming the schedules that list it.
func (h *API) DeleteCalendar(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	if err := h.Service.DeleteCalendar(c.Request().Context(), ns, c.Param("name"), commandContext(c, "api", "")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// CalendarImpact answers POST /calendars/{name}/impact {dates?, weekend?,
// description?}: what the change would add and remove, writing nothing.
func (h *API) CalendarImpact(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	in, err := calendarChange(c)
	if err != nil {
		return err
	}
	im, err := h.Service.CalendarImpact(c.Request().Context(), ns, c.Param("name"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromCalendarImpact(im))
}

// CalendarHistory answers GET /calendars/{name}/history?cursor&limit.
func (h *API) CalendarHistory(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	if err != nil {
		return err
	}
	page, err := h.Service.CalendarHistory(c.Request().Context(), ns, c.Param("name"), c.QueryParam("cursor"), int(limit))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromObjectHistory(page))
}
