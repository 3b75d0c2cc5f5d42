package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

func runServe(ctx context.Context, e env, args []string) error {
	var cfg config
	fs := newFlagSet("serve", "tideline serve --addr 127.0.0.1:8080 --database postgres://tideline@db/tideline", e)
	cfg.bindServer(fs, e)
	noLoop := fs.Bool("no-loop", envOr(e, "TIDELINE_NO_LOOP", "") == "1", "do not run the scheduling loop (UI/API-only replica) (env TIDELINE_NO_LOOP=1)")
	loopPeriod := fs.Duration("loop-period", time.Second, "how often the scheduling loop looks for due schedules")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cfg.validate(true); err != nil {
		return err
	}
	if *loopPeriod < 10*time.Millisecond {
		return usagef("invalid --loop-period %s: want at least 10ms", *loopPeriod)
	}
	logger := cfg.logger(e.stderr)

	a, err := openApp(ctx, &cfg, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	db := a.db

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m := metrics.New(db)
	srv := web.NewServer(web.Deps{DB: db, Service: a.service, Logger: logger, Version: Version, Namespace: cfg.Namespace, Metrics: m})
	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}

	loop := &scheduling.Loop{Service: a.service, Period: *loopPeriod, Logger: logger, OnPass: m.ObservePass}
	if !*noLoop {
		loop.Start(ctx)
		defer loop.Stop()
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()
	fmt.Fprintf(e.stdout, "Tideline %s is running. Open http://%s/waterline\n", Version, ln.Addr())
	logger.Info("serving", "addr", ln.Addr().String(), "database", dialectName(db.Dialect().Name().String()))

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down http: %w", err)
	}
	return nil
}

func dialectName(s string) string {
	if s == "pg" {
		return "postgres"
	}
	return s
}

func runMigrate(ctx context.Context, e env, args []string) error {
	var cfg config
	fs := newFlagSet("migrate", "tideline migrate --database postgres://tideline@db/tideline", e)
	cfg.bindDatabase(fs, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cfg.validate(false); err != nil {
		return err
	}
	db, err := database.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := migrations.Apply(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(e.stdout, "Database is up to date.")
		return nil
	}
	for _, name := range applied {
		fmt.Fprintf(e.stdout, "Applied %s\n", name)
	}
	return nil
}
