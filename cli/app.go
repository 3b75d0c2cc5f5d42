package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/scheduling"
)

// app is what a command works with once its flags are parsed: a migrated
// database and the service over it.
type app struct {
	db      *bun.DB
	service *scheduling.Service
	logger  *slog.Logger
}

// startAttempts and startRetryWait bound how long openApp waits for an
// unavailable database (about five seconds).
const (
	startAttempts  = 6
	startRetryWait = time.Second
)

// openApp opens and migrates the configured database and builds the service.
func openApp(ctx context.Context, cfg *config, logger *slog.Logger) (*app, error) {
	db, err := database.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	// A database that is briefly unavailable (a failover in progress, or
	// PgBouncer handing over a connection whose last statement it was
	// cancelling: "successfully sent cancel request") is waited for a few
	// times rather than ending the process at start.
	var applied []string
	for attempt := 1; ; attempt++ {
		applied, err = migrations.Apply(ctx, db)
		if err == nil || attempt == startAttempts || !database.Unavailable(err) {
			break
		}
		logger.Warn("database unavailable at start; trying again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(startRetryWait):
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	for _, name := range applied {
		logger.Info("applied migration", "name", name)
	}
	svc := scheduling.New(scheduling.Config{DB: db, Logger: logger, Notify: cfg.Notify, Targets: cfg.Targets})
	return &app{db: db, service: svc, logger: logger}, nil
}

func (a *app) Close() error { return a.db.Close() }

// namespaceOrDefault is the namespace a CLI command acts in: --namespace,
// else the service's default (scheduling.NamespaceOr, as every surface).
func (c *config) namespaceOrDefault() string { return scheduling.NamespaceOr(c.Namespace) }
