package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// API serves the JSON API of CONTRACT §8. Every handler resolves the
// namespace, decodes, calls one service method and encodes its result.
type API struct {
	Service APIServices
	// Namespace, when set, is the only namespace this server serves.
	Namespace string
	Clock     scheduling.Clock
}

// ActorKey is the echo context key under which authentication stores the
// caller's name, recorded in command contexts.
const ActorKey = "tideline.actor"

// SourceHeader lets Tideline's own clients say which tool made an API
// change (CONTRACT §16): "cli" or "apply", recorded as the command
// context's source instead of "api"; anything else is refused
// (CheckSourceHeader). It names a tool, not a person, so it needs no more
// trust than the request itself.
const SourceHeader = "X-Tideline-Source"

// commandContext describes the caller for the audit stream.
func commandContext(c echo.Context, source, reason string) *scheduling.CommandContext {
	if source == scheduling.SourceAPI {
		switch claimed := c.Request().Header.Get(SourceHeader); claimed {
		case scheduling.SourceCLI, scheduling.SourceApply:
			source = claimed
		}
	}
	cc := &scheduling.CommandContext{Source: source, Reason: reason,
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID)}
	if actor, ok := c.Get(ActorKey).(string); ok {
		cc.Actor = actor
	}
	return cc
}

func (h *API) ns(c echo.Context) (string, error) { return apiNamespace(c, h.Namespace) }

type createRequest = apijson.CreateSchedule

// dryRun reads ?dry_run=true: validate and report, write nothing.
func dryRun(c echo.Context) (bool, error) {
	raw := c.QueryParam("dry_run")
	if raw == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return false, scheduling.NewValidationError("dry_run", "must be true or false")
	}
	return b, nil
}

// CreateSchedule answers POST /schedules with 201 and the describe object;
// with ?dry_run=true, 200 and the schedule as it would be created.
func (h *API) CreateSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	dry, err := dryRun(c)
	if err != nil {
		return err
	}
	var req createRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	in, err := req.Input(ns)
	if err != nil {
		return err
	}
	if dry {
		sch, err := h.Service.PlanCreate(c.Request().Context(), in)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, apijson.FromSchedule(sch))
	}
	sch, err := h.Service.Create(c.Request().Context(), in, commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	d, err := h.Service.Describe(c.Request().Context(), ns, sch.ScheduleID)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, c.Echo().Reverse("api.schedule", sch.ScheduleID))
	return c.JSON(http.StatusCreated, apijson.FromDescription(d))
}

// GetSchedule answers GET /schedules/{id}; deleted schedules are 404 here.
func (h *API) GetSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	d, err := h.Service.Describe(c.Request().Context(), ns, c.Param("schedule_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromDescription(d))
}

// ListSchedules answers GET /schedules.
func (h *API) ListSchedules(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	if err != nil {
		return err
	}
	statuses := queryList(c, "status")
	if len(statuses) == 1 && statuses[0] == "all" {
		statuses = []string{models.StatusActive, models.StatusPaused, models.StatusDeleted}
	}
	page, err := h.Service.List(c.Request().Context(), scheduling.ListFilter{
		Namespace: ns, Statuses: statuses, Text: c.QueryParam("q"), WorkflowType: c.QueryParam("workflow_type"),
		Label: c.QueryParam("label"), Cursor: c.QueryParam("cursor"), Limit: int(limit),
		Health: c.QueryParam("health"), Sort: c.QueryParam("sort"),
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromSchedulePage(page))
}

// UpdateSchedule answers PATCH /schedules/{id}: only the given fields
// change. With ?dry_run=true it answers what would change (UpdatePlan).
func (h *API) UpdateSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	dry, err := dryRun(c)
	if err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := decodeJSON(c, &raw, false); err != nil {
		return err
	}
	if raw == nil {
		return &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: "the body must be a JSON object of the fields to change, not null"}
	}
	in, err := parseUpdate(raw)
	if err != nil {
		return err
	}
	if dry {
		plan, err := h.Service.PlanUpdate(c.Request().Context(), ns, c.Param("schedule_id"), in)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, apijson.FromUpdatePlan(plan))
	}
	sch, err := h.Service.Update(c.Request().Context(), ns, c.Param("schedule_id"), in, commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	d, err := h.Service.Describe(c.Request().Context(), ns, sch.ScheduleID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromDescription(d))
}

// parseUpdate decodes a PATCH body field by field through the field table
// (scheduling.DecodePatch), so that an absent field and an explicit null
// differ; a value of the wrong shape or an unknown key is a 400.
func parseUpdate(raw map[string]json.RawMessage) (scheduling.UpdateInput, error) {
	in, err := scheduling.DecodePatch(raw)
	var unknown *scheduling.UnknownFieldError
	var bad *scheduling.FieldDecodeError
	switch {
	case errors.As(err, &unknown):
		return in, &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: "unknown field \"" + unknown.Key + "\""}
	case errors.As(err, &bad):
		return in, &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: "field \"" + bad.Key + "\": " + describeJSONError(bad.Err)}
	}
	return in, err
}

// DeleteSchedule answers DELETE /schedules/{id} (idempotent).
func (h *API) DeleteSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	sch, err := h.Service.Delete(c.Request().Context(), ns, c.Param("schedule_id"), commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromSchedule(sch))
}

// PauseSchedule answers POST /schedules/{id}/pause {reason?}.
func (h *API) PauseSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.PauseRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	in, err := pauseInput(req.Reason, req.PausedUntil, req.Until)
	if err != nil {
		return err
	}
	sch, err := h.Service.Pause(c.Request().Context(), ns, c.Param("schedule_id"), in, commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromSchedule(sch))
}

// ResumeSchedule answers POST /schedules/{id}/resume.
func (h *API) ResumeSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req struct{}
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	sch, err := h.Service.Resume(c.Request().Context(), ns, c.Param("schedule_id"), commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromSchedule(sch))
}

// TriggerSchedule answers POST /schedules/{id}/trigger {overlap_policy?}.
func (h *API) TriggerSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.TriggerRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	res, err := h.Service.Trigger(c.Request().Context(), ns, c.Param("schedule_id"), req.OverlapPolicy, commandContext(c, "api", ""))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromTrigger(res))
}

// BackfillSchedule answers POST /schedules/{id}/backfill.
func (h *API) BackfillSchedule(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.BackfillRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	v := &scheduling.ValidationError{Code: scheduling.CodeValidationFailed}
	from, to := parseTime(v, "from", req.From), parseTime(v, "to", req.To)
	if err := v.OrNil(); err != nil {
		return err
	}
	in := scheduling.BackfillJobInput{
		From: from, To: to, OverlapPolicy: req.OverlapPolicy, MaxPerMinute: req.MaxPerMinute, MaxConcurrentRuns: req.MaxConcurrentRuns,
		CommandContext: commandContext(c, "api", req.Reason),
	}
	if req.DryRun {
		if err := in.Validate(); err != nil {
			return err
		}
		rep, err := h.Service.Backfill(c.Request().Context(), ns, c.Param("schedule_id"), scheduling.BackfillInput{
			From: from, To: to, OverlapPolicy: req.OverlapPolicy, DryRun: true,
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, apijson.FromBackfill(rep))
	}
	// Otherwise a job (SPEC §18): accepted at once, its first slice done.
	job, err := h.Service.StartBackfill(c.Request().Context(), ns, c.Param("schedule_id"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, apijson.BackfillJobEnvelope{Backfill: apijson.FromBackfillJob(job, h.Clock.Now())})
}

// ScheduleHistory answers GET /schedules/{id}/history (CONTRACT §6 read contract).
func (h *API) ScheduleHistory(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	q, err := historyQuery(c, scheduling.HistoryOldestFirst)
	if err != nil {
		return err
	}
	page, err := h.Service.History(c.Request().Context(), ns, c.Param("schedule_id"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromHistory(page))
}

// ScheduleOccurrences answers GET /schedules/{id}/occurrences (CONTRACT §12).
func (h *API) ScheduleOccurrences(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	q, err := ledgerQuery(c)
	if err != nil {
		return err
	}
	page, err := h.Service.Ledger(c.Request().Context(), ns, c.Param("schedule_id"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromLedger(page))
}

// ScheduleRuns answers GET /schedules/{id}/runs.
func (h *API) ScheduleRuns(c echo.Context) error {
	return h.listRuns(c, c.Param("schedule_id"))
}

// ListRuns answers GET /runs (?schedule_id=&status=&workflow_type=
// &created_from=&created_to=&cursor=&limit=), the console's runs filters.
func (h *API) ListRuns(c echo.Context) error {
	return h.listRuns(c, c.QueryParam("schedule_id"))
}

func (h *API) listRuns(c echo.Context, scheduleID string) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	if err != nil {
		return err
	}
	from, err := queryTime(c.QueryParam("created_from"), "created_from")
	if err != nil {
		return err
	}
	to, err := queryTime(c.QueryParam("created_to"), "created_to")
	if err != nil {
		return err
	}
	page, err := h.Service.ListRuns(c.Request().Context(), scheduling.RunListFilter{
		Namespace: ns, ScheduleID: scheduleID, Statuses: queryList(c, "status"), Cursor: c.QueryParam("cursor"), Limit: int(limit),
		WorkflowType: c.QueryParam("workflow_type"), CreatedFrom: from, CreatedTo: to,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromRunPage(page))
}

// GetRun answers GET /runs/{run_id} with the run and its history.
func (h *API) GetRun(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	d, err := h.Service.DescribeRun(c.Request().Context(), ns, c.Param("run_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.RunDetail{Run: apijson.FromRun(d.Run), Attempts: apijson.FromAttempts(d.Attempts), History: apijson.FromRunEvents(d.Events)})
}

// CancelRun answers POST /runs/{run_id}/cancel.
func (h *API) CancelRun(c echo.Context) error {
	return h.runAction(c, h.Service.CancelRun)
}

// TerminateRun answers POST /runs/{run_id}/terminate.
func (h *API) TerminateRun(c echo.Context) error {
	return h.runAction(c, h.Service.TerminateRun)
}

// RetryRun answers POST /runs/{run_id}/retry {reason?}: a failed or
// timed-out run back to pending for one more attempt.
func (h *API) RetryRun(c echo.Context) error {
	return h.runAction(c, h.Service.RetryRun)
}

// RunAgain answers POST /runs/{run_id}/again {reason?}: a new manual run
// of the run's schedule with the run's input, answered as a trigger.
func (h *API) RunAgain(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.RunActionRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	res, err := h.Service.RunAgain(c.Request().Context(), ns, c.Param("run_id"), commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromTrigger(res))
}

// RetryMatching answers POST /runs/retry {status?, schedule_id?, reason?}:
// the failed and timed-out runs matching, at most
// scheduling.MaxRetryMatching, retried in one transaction.
func (h *API) RetryMatching(c echo.Context) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.RetryMatchingRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	f := scheduling.RunListFilter{Namespace: ns, ScheduleID: req.ScheduleID}
	if req.Status != "" {
		f.Statuses = []string{req.Status}
	}
	n, more, err := h.Service.RetryMatching(c.Request().Context(), f, commandContext(c, "api", req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.RetryMatchingResult{Retried: n, More: more})
}

func (h *API) runAction(c echo.Context, action func(ctx context.Context, ns, runID string, cc *scheduling.CommandContext) (*models.Run, error)) error {
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	var req apijson.RunActionRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	if _, err := action(c.Request().Context(), ns, c.Param("run_id"), commandContext(c, "api", req.Reason)); err != nil {
		return err
	}
	run, err := h.Service.GetRun(c.Request().Context(), ns, c.Param("run_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromRun(run))
}

// Preview answers POST /schedules/preview {spec, after?, count?}.
func (h *API) Preview(c echo.Context) error {
	var req apijson.PreviewRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	v := &scheduling.ValidationError{Code: scheduling.CodeValidationFailed}
	after := parseTime(v, "after", req.After)
	if after.IsZero() {
		after = h.Clock.Now()
	}
	count := 10 // the range is PreviewSpec's rule
	if req.Count != nil {
		count = *req.Count
	}
	if err := v.OrNil(); err != nil {
		return err
	}
	ns, err := h.ns(c)
	if err != nil {
		return err
	}
	p, err := h.Service.PreviewSpec(c.Request().Context(), ns, req.Spec.Model(), after, count)
	if err != nil {
		return err
	}
	out := apijson.Preview{Description: p.Description, FireTimes: make([]apijson.Time, 0, len(p.FireTimes)), Items: make([]apijson.PreviewItem, 0, len(p.Items))}
	for _, t := range p.FireTimes {
		out.FireTimes = append(out.FireTimes, apijson.At(t))
	}
	for _, o := range p.Items {
		item := apijson.PreviewItem{At: apijson.At(o.At), Status: o.Status, Calendar: o.Calendar}
		if !o.MovedFrom.IsZero() {
			from := apijson.At(o.MovedFrom)
			item.MovedFrom = &from
		}
		out.Items = append(out.Items, item)
	}
	return c.JSON(http.StatusOK, out)
}

// Tick answers POST /tick {limit?}: one evaluation pass, its rows. A tick
// covers every namespace, so callers bound to some namespaces may not run
// it (they would see other tenants' schedule IDs).
func (h *API) Tick(c echo.Context) error {
	if p := PrincipalFrom(c); p != nil && !p.AllNamespaces() {
		return echo.NewHTTPError(http.StatusForbidden, "tick covers every namespace; a token bound to namespaces may not run it")
	}
	var req apijson.TickRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	if req.Limit < 0 || req.Limit > 1000 {
		return scheduling.NewValidationError("limit", "must be between 1 and 1000 (0 or absent: 100)")
	}
	rows, err := h.Service.Tick(c.Request().Context(), req.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.Tick{Rows: apijson.FromTickRows(rows)})
}
