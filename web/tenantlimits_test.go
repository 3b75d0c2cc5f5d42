package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/handlers"
)

// Issue 36, finding 6: backfills were not bounded at all. Each principal
// runs at most MaxBackfillsPerPrincipal at once (429 past it), and another
// principal keeps its share. Handlers block on channels, so the test knows
// how many are inside without sleeping.
func TestBackfillsArePerPrincipalCapped(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(slog.New(slog.DiscardHandler), nil)
	entered, release := make(chan struct{}), make(chan struct{})
	as := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(handlers.PrincipalKey, &auth.Principal{Name: c.Request().Header.Get("X-Who"), Role: auth.RoleOperator})
			return next(c)
		}
	}
	e.POST("/waterline/api/v2/schedules/:id/backfill", func(c echo.Context) error {
		entered <- struct{}{}
		<-release
		return c.NoContent(http.StatusOK)
	}, as, perPrincipal(MaxBackfillsPerPrincipal, "this token is running as many backfills as it may at once"))
	call := func(who string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/waterline/api/v2/schedules/s/backfill", nil)
		req.Header.Set("X-Who", who)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	done := make(chan int, 3)
	for range MaxBackfillsPerPrincipal {
		go func() { done <- call("team-a").Code }()
		<-entered
	}
	rec := call("team-a")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), `"code":"too_many_requests"`)

	go func() { done <- call("team-b").Code }()
	<-entered // team-b is let in beside team-a's two
	for range MaxBackfillsPerPrincipal + 1 {
		release <- struct{}{}
		require.Equal(t, http.StatusOK, <-done)
	}
	go func() { done <- call("team-a").Code }()
	<-entered
	release <- struct{}{}
	require.Equal(t, http.StatusOK, <-done, "a finished backfill frees its slot")
}
