package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/handlers"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// apiError is the error part of the JSON error body (apijson.ErrorBody).
type apiError = apijson.ErrorDetail

// classify maps any error to a status and a client-safe body. Unknown errors
// become a generic 500: their text may hold internals and is only logged.
func classify(err error) (int, apiError) {
	var (
		nf   *scheduling.NotFoundError
		val  *scheduling.ValidationError
		conf *scheduling.ConflictError
		bad  *handlers.BadRequestError
		he   *echo.HTTPError
	)
	switch {
	case errors.As(err, &nf):
		return http.StatusNotFound, apiError{Code: nf.Code, Message: nf.Message}
	case errors.Is(err, scheduling.ErrNotFound):
		return http.StatusNotFound, apiError{Code: scheduling.CodeNotFound, Message: "not found"}
	case errors.As(err, &val):
		code := val.Code
		if code == "" {
			code = scheduling.CodeValidationFailed
		}
		return http.StatusUnprocessableEntity, apiError{Code: code, Message: validationMessage(val), Fields: val.Fields}
	case errors.As(err, &conf):
		return http.StatusConflict, apiError{Code: conf.Code, Message: conf.Message, Schedules: conf.Schedules}
	case errors.As(err, &bad):
		return http.StatusBadRequest, apiError{Code: bad.Code, Message: bad.Message}
	case errors.As(err, &he):
		return he.Code, apiError{Code: httpCode(he.Code), Message: httpMessage(he)}
	case database.Unavailable(err):
		return http.StatusServiceUnavailable, apiError{Code: scheduling.CodeDatabaseUnavailable,
			Message: "the database is unavailable (restarting, failing over, or a lost connection); retry in a moment"}
	}
	return http.StatusInternalServerError, apiError{Code: scheduling.CodeInternalError, Message: "internal server error; the request was logged with its request ID"}
}

func validationMessage(v *scheduling.ValidationError) string {
	if len(v.Fields) == 1 {
		for field, msg := range v.Fields {
			return field + ": " + msg
		}
	}
	return "some fields are invalid; see fields"
}

func httpCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return scheduling.CodeNotFound
	case http.StatusMethodNotAllowed:
		return scheduling.CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return scheduling.CodeRequestTooLarge
	case http.StatusUnauthorized:
		return scheduling.CodeUnauthorized
	case http.StatusForbidden:
		return scheduling.CodeForbidden
	case http.StatusBadRequest:
		return scheduling.CodeBadRequest
	case http.StatusTooManyRequests:
		return scheduling.CodeTooManyRequests
	case http.StatusServiceUnavailable:
		return scheduling.CodeServerBusy
	}
	if status >= 500 {
		return scheduling.CodeInternalError
	}
	return strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
}

func httpMessage(he *echo.HTTPError) string {
	if he.Code >= 500 && he.Code != http.StatusServiceUnavailable { // 503s are ours: "busy, retry"
		return "internal server error"
	}
	if he.Code == http.StatusRequestEntityTooLarge { // echo's body limit says only "Request Entity Too Large"
		return "request body is larger than 1 MiB (1,048,576 bytes)"
	}
	if s, ok := he.Message.(string); ok {
		return s
	}
	return strings.ToLower(http.StatusText(he.Code))
}

// databaseRetryAfter is the Retry-After of a database_unavailable answer,
// in seconds. A restart or a promoted standby takes a few seconds; clients
// back off from this first wait (the Go client, the worker, the Python SDK
// double it up to a bound), so a short first wait costs little.
const databaseRetryAfter = "1"

// isAPI reports whether the request expects JSON rather than a console page.
func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, "/waterline/api/") || strings.HasPrefix(p, "/api/") ||
		p == "/healthz" || p == "/readyz"
}

// errorPages renders the console's HTML error pages inside its layout.
// The route guard may have refused the request before naming the caller
// (a 403 for a role, a CSRF refusal, an unknown path), so the caller is
// established here the way the guard would: local mode, or the session.
type errorPages struct {
	console *handlers.Console
	guard   *guard
}

func (p *errorPages) render(c echo.Context, status int, v views.ErrorView) error {
	if p == nil {
		return handlers.Render(c, status, views.ErrorPage(views.LayoutView{Title: "Error"}, v))
	}
	signedIn := handlers.PrincipalFrom(c) != nil
	if !signedIn {
		switch {
		case p.guard.local():
			setPrincipal(c, auth.Local)
			c.Set(handlers.BannerKey, LocalModeBanner)
			signedIn = true
		case sessionFrom(c) != nil:
			setPrincipal(c, sessionFrom(c).Principal)
			signedIn = true
		}
	}
	return p.console.ErrorPage(c, status, v, signedIn)
}

// errorHandler answers every error: JSON for the API, a console page for
// the rest (pages may be nil: a bare page, for tests of one middleware).
func errorHandler(logger *slog.Logger, pages *errorPages) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, body := classify(err)
		switch {
		case c.Request().Context().Err() != nil && errors.Is(err, context.Canceled):
			// The client hung up (a worker stopping, a closed tab): nobody
			// reads this answer and nothing failed on our side.
			logger.Info("request abandoned by its client", "path", c.Request().URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		case body.Code == scheduling.CodeDatabaseUnavailable:
			// An outage answers every request this way: one WARN each,
			// not an ERROR with a stack of wrapped driver text.
			c.Response().Header().Set("Retry-After", databaseRetryAfter)
			logger.Warn("request failed: database unavailable", "err", err, "path", c.Request().URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		case status >= 500:
			logger.Error("request failed", "err", err, "path", c.Request().URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		}
		var writeErr error
		switch {
		case c.Request().Method == http.MethodHead:
			writeErr = c.NoContent(status)
		case isAPI(c):
			writeErr = c.JSON(status, apijson.ErrorBody{Error: body})
		default:
			writeErr = pages.render(c, status, views.ErrorView{
				Status: status, Title: http.StatusText(status), Message: body.Message, Fields: body.Fields,
			})
		}
		if writeErr != nil {
			logger.Error("write error response", "err", writeErr)
		}
	}
}
