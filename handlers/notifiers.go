package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// ListNotifiers answers GET /notifiers.
func (h *API) ListNotifiers(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	list, err := h.Service.ListNotifiers(c.Request().Context(), ns)
	if err != nil {
		return err
	}
	health, err := h.Service.NotifierHealth(c.Request().Context(), list)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromNotifiers(list, health))
}

// CreateNotifier answers POST /notifiers with 201 and the notifier,
// including its secret (the only time it is shown).
func (h *API) CreateNotifier(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.NotifierWrite
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if req.RotateSecret {
		return scheduling.NewValidationError("rotate_secret", "only applies to an existing notifier (PATCH)")
	}
	res, err := h.Service.CreateNotifier(c.Request().Context(), ns, req.Input(""), commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, apijson.FromNotifier(res.Notifier, res.Secret))
}

// GetNotifier answers GET /notifiers/{name}.
func (h *API) GetNotifier(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	n, err := h.Service.GetNotifier(c.Request().Context(), ns, c.Param("name"))
	if err != nil {
		return err
	}
	health, err := h.Service.NotifierHealth(c.Request().Context(), []models.Notifier{*n})
	if err != nil {
		return err
	}
	out := apijson.FromNotifier(n, "")
	out.Health = apijson.FromNotifierHealth(health[n.ID])
	return c.JSON(http.StatusOK, out)
}

// UpdateNotifier answers PATCH /notifiers/{name}; the answer carries the
// secret only when the request set or rotated it.
func (h *API) UpdateNotifier(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.NotifierWrite
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	name := c.Param("name")
	if req.Name != "" && req.Name != name {
		return scheduling.NewValidationError("name", "cannot be changed; create a new notifier and delete this one")
	}
	res, err := h.Service.UpdateNotifier(c.Request().Context(), ns, req.Input(name), commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromNotifier(res.Notifier, res.Secret))
}

// DeleteNotifier answers DELETE /notifiers/{name} with 204.
func (h *API) DeleteNotifier(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	if err := h.Service.DeleteNotifier(c.Request().Context(), ns, c.Param("name"), commandContext(c, "api", "")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// TestNotifier answers POST /notifiers/{name}/test with the test delivery
// after its one attempt (delivered or dead, with the receiver's answer).
func (h *API) TestNotifier(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	actor, _ := c.Get(ActorKey).(string)
	d, err := h.Service.TestNotifier(c.Request().Context(), ns, name, actor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromDelivery(d, name))
}

// Redeliver answers POST /notifiers/{name}/deliveries/{id}/redeliver
// {reason?}: a dead delivery back to pending, due now, with a fresh retry
// window.
func (h *API) Redeliver(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.RunActionRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	name := c.Param("name")
	d, err := h.Service.Redeliver(c.Request().Context(), ns, name, c.Param("id"), commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromDelivery(d, name))
}

// RedeliverDead answers POST /notifiers/{name}/redeliver {reason?}: up to
// scheduling.MaxRedeliver dead deliveries back to pending in one
// transaction.
func (h *API) RedeliverDead(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.RunActionRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	n, more, err := h.Service.RedeliverDead(c.Request().Context(), ns, c.Param("name"), commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.RedeliverResult{Redelivered: n, More: more})
}

// NotifierDeliveries answers GET /notifiers/{name}/deliveries, newest
// first, paged by cursor.
func (h *API) NotifierDeliveries(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	if err != nil {
		return err
	}
	name := c.Param("name")
	page, err := h.Service.ListDeliveries(c.Request().Context(), ns, name, c.QueryParam("cursor"), int(limit))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromDeliveryPage(page, name))
}

// NotifierHistory answers GET /notifiers/{name}/history: who created,
// changed and deleted the notifier, oldest first, paged by cursor.
func (h *API) NotifierHistory(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	if err != nil {
		return err
	}
	page, err := h.Service.NotifierHistory(c.Request().Context(), ns, c.Param("name"), c.QueryParam("cursor"), int(limit))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromObjectHistory(page))
}
