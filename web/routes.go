package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/handlers"
	"github.com/tidelinehq/tideline/static"
)

// registerRoutes lists every route of the server in one place, each with
// the permission it needs (auth.Read, auth.Operate, auth.Admin, auth.Work).
func registerRoutes(e *echo.Echo, d Deps) {
	g := &guard{Auth: d.Auth, clock: d.Clock}
	read, operate, admin, work := g.api(auth.Read), g.api(auth.Operate), g.api(auth.Admin), g.api(auth.Work)
	previews := concurrencyLimit(previewSlots()) // one pool for API and console previews
	// One pool of backfills for API and console, and a share of it per token.
	backfills := []echo.MiddlewareFunc{slotLimit(backfillSlots(), errBackfillsBusy),
		perPrincipal(MaxBackfillsPerPrincipal, "this token is running as many backfills as it may at once; retry when one has finished")}
	polls := d.MaxPollsPerPrincipal
	if polls <= 0 {
		polls = DefaultMaxPollsPerPrincipal
	}
	pollLimit := perPrincipal(polls, "this token has as many worker polls in flight as it may (--max-polls-per-principal); retry in a moment")

	health := &handlers.Health{DB: d.DB, Clock: d.Clock}
	if d.Service != nil {
		health.Draining = d.Service.Draining
	}
	e.GET("/healthz", health.Live)
	e.GET("/readyz", health.Ready)
	if d.Metrics != nil {
		// Metrics count runs and schedules across every namespace, so a
		// token bound to namespaces may not read them (like tick).
		e.GET("/metrics", echo.WrapHandler(d.Metrics.Handler()), read, unboundOnly)
	}
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", static.Handler())))

	api := &handlers.API{Service: d.Service, Namespace: d.Namespace, Clock: d.Clock}
	// The same handlers answer under /waterline/api/v2 and, for clients that
	// pass the namespace in X-Namespace, under /api.
	for _, prefix := range []string{"/waterline/api/v2", "/api"} {
		a := e.Group(prefix, handlers.CheckSourceHeader)
		a.GET("/schedules", api.ListSchedules, read)
		a.POST("/schedules", api.CreateSchedule, admin)
		a.POST("/schedules/preview", api.Preview, read, previews)
		r := a.GET("/schedules/:schedule_id", api.GetSchedule, read)
		if prefix == "/waterline/api/v2" {
			r.Name = "api.schedule"
		}
		a.PATCH("/schedules/:schedule_id", api.UpdateSchedule, admin)
		a.DELETE("/schedules/:schedule_id", api.DeleteSchedule, admin)
		a.POST("/schedules/:schedule_id/pause", api.PauseSchedule, operate)
		a.POST("/schedules/:schedule_id/resume", api.ResumeSchedule, operate)
		a.POST("/schedules/:schedule_id/trigger", api.TriggerSchedule, operate)
		a.POST("/schedules/:schedule_id/backfill", api.BackfillSchedule, append([]echo.MiddlewareFunc{operate}, backfills...)...)
		a.GET("/schedules/:schedule_id/history", api.ScheduleHistory, read)
		a.GET("/schedules/:schedule_id/runs", api.ScheduleRuns, read)
		a.GET("/schedules/:schedule_id/occurrences", api.ScheduleOccurrences, read)
		a.GET("/schedules/:schedule_id/versions", api.ScheduleVersions, read)
		a.GET("/schedules/:schedule_id/versions/diff", api.ScheduleVersionDiff, read)
		a.GET("/schedules/:schedule_id/versions/:n", api.ScheduleVersion, read)
		a.POST("/schedules/:schedule_id/versions/:n/revert", api.RevertSchedule, admin) // an update
		a.GET("/backfills", api.ListBackfills, read)
		a.GET("/backfills/:backfill_id", api.GetBackfill, read)
		a.POST("/backfills/:backfill_id/pause", api.PauseBackfill, operate)
		a.POST("/backfills/:backfill_id/resume", api.ResumeBackfill, operate)
		a.POST("/backfills/:backfill_id/cancel", api.CancelBackfill, operate)
		a.GET("/runs", api.ListRuns, read)
		a.GET("/runs/:run_id", api.GetRun, read)
		a.POST("/runs/:run_id/cancel", api.CancelRun, operate)
		a.POST("/runs/:run_id/terminate", api.TerminateRun, operate)
		a.POST("/runs/retry", api.RetryMatching, operate)
		a.POST("/runs/:run_id/retry", api.RetryRun, operate)
		a.POST("/runs/:run_id/again", api.RunAgain, operate)
		a.POST("/tick", api.Tick, admin)
		// Notifiers hold a URL and a signing secret: managed by admins,
		// like the schedules whose events they carry.
		a.GET("/notifiers", api.ListNotifiers, admin)
		a.POST("/notifiers", api.CreateNotifier, admin)
		a.GET("/notifiers/:name", api.GetNotifier, admin)
		a.PATCH("/notifiers/:name", api.UpdateNotifier, admin)
		a.DELETE("/notifiers/:name", api.DeleteNotifier, admin)
		a.POST("/notifiers/:name/test", api.TestNotifier, admin)
		a.GET("/notifiers/:name/deliveries", api.NotifierDeliveries, admin)
		a.POST("/notifiers/:name/deliveries/:id/redeliver", api.Redeliver, admin)
		a.POST("/notifiers/:name/redeliver", api.RedeliverDead, admin)
		a.GET("/notifiers/:name/history", api.NotifierHistory, admin)
		// Calendars (CONTRACT §16) are admin-managed; anyone who reads
		// schedules may read the calendars their specs name, and ask what
		// a change would do (it writes nothing).
		a.GET("/calendars", api.ListCalendars, read)
		a.POST("/calendars", api.CreateCalendar, admin)
		a.GET("/calendars/:name", api.GetCalendar, read)
		a.PATCH("/calendars/:name", api.UpdateCalendar, admin)
		a.DELETE("/calendars/:name", api.DeleteCalendar, admin)
		a.POST("/calendars/:name/impact", api.CalendarImpact, read)
		a.GET("/calendars/:name/history", api.CalendarHistory, read)
		a.RouteNotFound("/*", apiFallback(e))
	}
	e.GET("/waterline/api/v2/openapi.json", serveOpenAPI)

	worker := &handlers.WorkerAPI{Service: d.Service, Namespace: d.Namespace}
	for _, prefix := range []string{"/waterline/api/v2/worker", "/api/v2/worker"} {
		w := e.Group(prefix, work)
		w.POST("/poll", worker.Poll, pollLimit)
		w.POST("/runs/:run_id/heartbeat", worker.Heartbeat)
		w.POST("/runs/:run_id/complete", worker.Complete)
		w.POST("/runs/:run_id/fail", worker.Fail)
	}

	// The console: session cookies (or local mode), and a CSRF token on
	// every state change. The API above takes bearer tokens only, so it
	// needs no CSRF token.
	cRead, cOperate, cAdmin := g.console(auth.Read), g.console(auth.Operate), g.console(auth.Admin)
	console := handlers.NewConsole(d.Service, d.Version, d.Namespace, d.Clock)
	e.HTTPErrorHandler = errorHandler(d.Logger, &errorPages{console: console, guard: g})
	login := &handlers.Login{Store: d.Auth.Store, Sessions: d.Auth.Sessions, Clock: d.Clock, Version: d.Version}
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/waterline") })
	w := e.Group("/waterline", g.consoleSession, g.csrf)
	w.GET("", console.Home, cRead)
	w.GET("/", console.Home, cRead) // a typed or bookmarked /waterline/ lands where /waterline does
	w.GET("/login", login.Form)
	w.POST("/login", login.Submit, newLoginLimiter(d.Clock).middleware)
	w.POST("/logout", login.Logout)
	w.GET("/namespace", console.SwitchNamespace, cRead)
	w.GET("/time", console.SetTime, cRead)
	w.GET("/schedules", console.Registry, cRead)
	w.POST("/schedules", console.CreateSchedule, cAdmin)
	w.GET("/schedules/new", console.NewSchedule, cAdmin)
	w.POST("/schedules/preview", console.Preview, cRead, previews)
	w.POST("/schedules/bulk", console.Bulk, cOperate)
	w.GET("/schedules/:schedule_id", console.Detail, cRead)
	w.GET("/schedules/:schedule_id/edit", console.EditSchedule, cAdmin)
	w.POST("/schedules/:schedule_id/edit", console.UpdateSchedule, cAdmin)
	w.POST("/schedules/:schedule_id/pause", console.Pause, cOperate)
	w.POST("/schedules/:schedule_id/resume", console.Resume, cOperate)
	w.POST("/schedules/:schedule_id/trigger", console.Trigger, cOperate)
	w.GET("/schedules/:schedule_id/delete", console.DeleteConfirm, cAdmin)
	w.POST("/schedules/:schedule_id/delete", console.Delete, cAdmin)
	w.GET("/schedules/:schedule_id/backfill", console.BackfillForm, cOperate)
	w.POST("/schedules/:schedule_id/backfill", console.Backfill, append([]echo.MiddlewareFunc{cOperate}, backfills...)...)
	w.GET("/schedules/:schedule_id/history", console.History, cRead)
	w.GET("/schedules/:schedule_id/versions", console.Versions, cRead)
	w.GET("/schedules/:schedule_id/versions/diff", console.VersionDiff, cRead)
	w.GET("/schedules/:schedule_id/versions/:n/revert", console.RevertConfirm, cAdmin)
	w.POST("/schedules/:schedule_id/versions/:n/revert", console.Revert, cAdmin)
	w.GET("/backfills", console.Backfills, cRead)
	w.GET("/backfills/:backfill_id", console.BackfillJob, cRead)
	w.POST("/backfills/:backfill_id/pause", console.PauseBackfill, cOperate)
	w.POST("/backfills/:backfill_id/resume", console.ResumeBackfill, cOperate)
	w.POST("/backfills/:backfill_id/cancel", console.CancelBackfill, cOperate)
	w.GET("/runs", console.Runs, cRead)
	w.GET("/runs/:run_id", console.Run, cRead)
	w.POST("/runs/:run_id/cancel", console.CancelRun, cOperate)
	w.POST("/runs/:run_id/terminate", console.TerminateRun, cOperate)
	// Issue 37: retry a failed run, run one again, retry all matching.
	w.POST("/runs/retry", console.RetryMatching, cOperate)
	w.POST("/runs/:run_id/retry", console.RetryRun, cOperate)
	w.POST("/runs/:run_id/again", console.RunAgain, cOperate)
	w.GET("/calendars", console.Calendars, cRead)
	w.POST("/calendars", console.CreateCalendar, cAdmin)
	w.GET("/calendars/:name", console.Calendar, cRead)
	w.POST("/calendars/:name", console.UpdateCalendar, cAdmin)
	w.POST("/calendars/:name/delete", console.DeleteCalendar, cAdmin)
	w.GET("/notifiers", console.Notifiers, cAdmin)
	w.POST("/notifiers", console.CreateNotifier, cAdmin)
	w.GET("/notifiers/:name", console.Notifier, cAdmin)
	w.POST("/notifiers/:name", console.UpdateNotifier, cAdmin)
	w.POST("/notifiers/:name/test", console.TestNotifier, cAdmin)
	w.POST("/notifiers/:name/rotate", console.RotateNotifierSecret, cAdmin)
	w.POST("/notifiers/:name/delete", console.DeleteNotifier, cAdmin)
	w.POST("/notifiers/:name/redeliver", console.RedeliverDead, cAdmin)
	w.POST("/notifiers/:name/deliveries/:id/redeliver", console.Redeliver, cAdmin)
}

// apiFallback answers API requests no route matches, as JSON like every
// API error: 405 with Allow when the path exists under other methods, else
// 404. Without it, /waterline/api/v2/… fell through to the console's
// catch-all and met its CSRF check (403) or an HTML page.
func apiFallback(e *echo.Echo) echo.HandlerFunc {
	return func(c echo.Context) error {
		var allowed []string
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := e.NewContext(c.Request(), nil)
			e.Router().Find(method, echo.GetPath(c.Request()), probe)
			if probe.Path() != c.Path() {
				allowed = append(allowed, method)
			}
		}
		if len(allowed) == 0 {
			return echo.NewHTTPError(http.StatusNotFound, "no such API route; see /waterline/api/v2/openapi.json")
		}
		c.Response().Header().Set(echo.HeaderAllow, strings.Join(allowed, ", "))
		return echo.NewHTTPError(http.StatusMethodNotAllowed, c.Request().Method+" is not allowed here; allowed: "+strings.Join(allowed, ", "))
	}
}
