// Package web assembles Tideline's HTTP server: the middleware stack, every
// route (routes.go) and the one error handler that turns domain errors into
// JSON or HTML responses.
package web

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/handlers"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/scheduling"
)

// Deps is everything the server needs; main wires it, tests build their own.
type Deps struct {
	DB      *bun.DB
	Service *scheduling.Service
	Logger  *slog.Logger
	Version string
	// Namespace, when set, scopes every request to it (like
	// WATERLINE_NAMESPACE); otherwise requests choose their namespace.
	Namespace string
	// Clock is where handlers read "now" (previews); SystemClock if nil.
	Clock scheduling.Clock
	// Metrics, when set, is served at /metrics and observes every request.
	Metrics *metrics.Metrics
	// Auth configures authentication; the zero value is local mode.
	Auth Auth
	// MaxPollsPerPrincipal caps each token's worker polls in flight
	// (0: DefaultMaxPollsPerPrincipal).
	MaxPollsPerPrincipal int
}

// NewServer returns the configured echo instance.
func NewServer(d Deps) *echo.Echo {
	if d.Clock == nil {
		d.Clock = scheduling.SystemClock{}
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(d.Logger, nil) // registerRoutes sets the console's pages
	// Client addresses (rate limits) come from the connection, unless a
	// trusted proxy in front of us says otherwise.
	e.IPExtractor = echo.ExtractIPDirect()
	if d.Auth.TrustProxy {
		e.IPExtractor = proxiedClientIP(d.Auth.proxies())
	}
	if d.Auth.Store == nil {
		d.Auth.Store = &auth.Store{}
	}
	if d.Auth.Sessions == nil {
		sessions, err := auth.NewSessions("", 0)
		if err != nil {
			panic(err) // only if the OS has no randomness
		}
		d.Auth.Sessions = sessions
	}
	if !d.Auth.Sessions.HasStore() {
		d.Auth.Sessions = d.Auth.Sessions.WithStore(sessionStore{db: d.DB})
	}

	e.Use(requestID)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			d.Logger.Error("panic in handler", "err", err, "path", c.Path(), "stack", string(stack))
			return err
		},
	}))
	e.Use(requestLogger(d.Logger))
	if d.Metrics != nil {
		e.Use(observeRequests(d.Metrics))
	}
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:         "0",
		ContentTypeNosniff:    "nosniff",
		XFrameOptions:         "DENY",
		ReferrerPolicy:        "same-origin",
		ContentSecurityPolicy: "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
	}))
	e.Use(transportHeaders(d.Auth))
	e.Use(compress())
	e.Use(notModified)
	if !d.Auth.Store.Enabled() {
		e.Use(localOnly)
	}
	// 1 MiB = 1,048,576 bytes, as the docs say ("1M" would be 1,000,000).
	e.Use(middleware.BodyLimit("1MiB"))
	e.Use(rejectNUL)

	registerRoutes(e, d)
	return e
}

// MaxHeaderBytes bounds a request's headers. Nothing Tideline reads needs
// more than a few KiB (a bearer token, a session cookie, a request ID);
// Go's default of 1 MiB let a single header fill logs and the audit stream.
const MaxHeaderBytes = 64 << 10

// NewHTTPServer wraps the handler in an http.Server with the limits every
// deployment needs: header size, and timeouts against slow clients.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
}

// hstsMaxAge is a year: browsers that saw Tideline over TLS never try
// plain HTTP for it again (subdomains are left to their own owners).
const hstsMaxAge = "max-age=31536000"

// transportHeaders marks every response no-store (pages and API answers
// carry schedules, runs and CSRF tokens that must not linger in shared or
// browser caches; static assets set their own caching), and adds HSTS when
// the request came over TLS, directly or via a trusted proxy.
func transportHeaders(a Auth) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set(echo.HeaderCacheControl, "no-store")
			if a.secure(c) {
				h.Set(echo.HeaderStrictTransportSecurity, hstsMaxAge)
			}
			return next(c)
		}
	}
}

// observeRequests times every request by its route pattern.
func observeRequests(m *metrics.Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			started := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				status, _ = classify(err)
			}
			m.ObserveHTTP(c.Request().Method, c.Path(), strconv.Itoa(status), time.Since(started))
			return err
		}
	}
}

func requestLogger(logger *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogRequestID: true, LogError: true,
		HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			switch {
			case v.Status == http.StatusServiceUnavailable:
				// Busy or the database away: a retry is expected to work,
				// and an outage must not fill the log with ERRORs.
				level = slog.LevelWarn
			case v.Status >= http.StatusInternalServerError:
				level = slog.LevelError
			case strings.Contains(c.Path(), "/worker/") && v.Status < http.StatusBadRequest:
				// Every poll, heartbeat and completion of every worker: at
				// INFO they flood the log; refused ones stay visible.
				level = slog.LevelDebug
			}
			attrs := []slog.Attr{slog.String("method", v.Method), slog.String("uri", v.URI), slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency), slog.String("request_id", v.RequestID)}
			// Who asked: the authenticated token's name (unset when the
			// request was refused before authentication), and from where.
			if p, ok := c.Get(handlers.PrincipalKey).(*auth.Principal); ok {
				attrs = append(attrs, slog.String("principal", p.Name))
			}
			attrs = append(attrs, slog.String("client", c.RealIP()))
			logger.LogAttrs(c.Request().Context(), level, "request", attrs...)
			return nil
		},
	})
}

// rejectNUL refuses NUL characters in the path, the query and form fields
// with a 400: neither database stores them in text, and letting one through
// would turn bad input into a 500 further down.
func rejectNUL(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		bad := strings.ContainsRune(r.URL.Path, 0) || strings.Contains(r.URL.RawQuery, "%00") || strings.Contains(r.URL.RawPath, "%00")
		// API bodies are JSON, checked for NUL as they are decoded; parsing
		// one as a form here would consume it.
		if !bad && !isAPI(c) && r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get(echo.HeaderContentType), echo.MIMEApplicationForm) {
			if err := r.ParseForm(); err == nil {
				for _, values := range r.PostForm {
					for _, v := range values {
						bad = bad || strings.ContainsRune(v, 0)
					}
				}
			}
		}
		if bad {
			return &handlers.BadRequestError{Code: scheduling.CodeBadRequest, Message: "NUL characters are not allowed in paths, queries or form fields"}
		}
		return next(c)
	}
}
