package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// Previews beyond the pool are refused at once (503, Retry-After), and a
// slot freed is usable again. Handlers block on channels, so the test knows
// exactly how many are inside without sleeping.
func TestConcurrencyLimitRefusesWhenSaturated(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(slog.New(slog.DiscardHandler), nil)
	entered, release := make(chan struct{}), make(chan struct{})
	e.POST("/waterline/api/v2/schedules/preview", func(c echo.Context) error {
		entered <- struct{}{}
		<-release
		return c.NoContent(http.StatusOK)
	}, concurrencyLimit(2))
	call := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/waterline/api/v2/schedules/preview", nil))
		return rec
	}
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- call().Code }()
		<-entered
	}
	rec := call()
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), `"code":"server_busy"`)
	require.Contains(t, rec.Body.String(), "retry in a moment")

	release <- struct{}{}
	require.Equal(t, http.StatusOK, <-done)
	go func() { done <- call().Code }()
	<-entered // the freed slot is taken again
	close(release)
	require.Equal(t, http.StatusOK, <-done)
	require.Equal(t, http.StatusOK, <-done)
}
