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

	if d.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(d.Metrics.Handler()))
	}
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", static.Handler())))

	api := &handlers.API{Service: d.Service, Namespace: d.Namespace, Clock: d.Clock}
	// The same handlers answer under /waterline/api/v2 and, for clients that
	// pass the namespace in X-Namespace, under /api.
	for _, prefix := range []string{"/waterline/api/v2", "/api"} {
		g := e.Group(prefix)
		g.GET("/schedules", api.ListSchedules)
		g.POST("/schedules", api.CreateSchedule)
		g.POST("/schedules/preview", api.Preview)
		r := g.GET("/schedules/:schedule_id", api.GetSchedule)
		if prefix == "/waterline/api/v2" {
			r.Name = "api.schedule"
		}
		g.PATCH("/schedules/:schedule_id", api.UpdateSchedule)
		g.DELETE("/schedules/:schedule_id", api.DeleteSchedule)
		g.POST("/schedules/:schedule_id/pause", api.PauseSchedule)
		g.POST("/schedules/:schedule_id/resume", api.ResumeSchedule)
		g.POST("/schedules/:schedule_id/trigger", api.TriggerSchedule)
		g.POST("/schedules/:schedule_id/backfill", api.BackfillSchedule)
		g.GET("/schedules/:schedule_id/history", api.ScheduleHistory)
		g.GET("/schedules/:schedule_id/runs", api.ScheduleRuns)
		g.GET("/runs", api.ListRuns)
		g.GET("/runs/:run_id", api.GetRun)
		g.POST("/runs/:run_id/cancel", api.CancelRun)
		g.POST("/runs/:run_id/terminate", api.TerminateRun)
		g.POST("/tick", api.Tick)
	}

	e.GET("/waterline/api/v2/openapi.json", serveOpenAPI)

	worker := &handlers.Worker{Service: d.Service, Namespace: d.Namespace}
	for _, prefix := range []string{"/waterline/api/v2/worker", "/api/v2/worker"} {
		g := e.Group(prefix)
		g.POST("/poll", worker.Poll)
		g.POST("/runs/:run_id/heartbeat", worker.Heartbeat)
		g.POST("/runs/:run_id/complete", worker.Complete)
		g.POST("/runs/:run_id/fail", worker.Fail)
	}

	console := &handlers.Console{Version: d.Version}
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/waterline") })
	e.GET("/waterline", console.Home)
}
