package cli

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/demo"
	"github.com/tidelinehq/tideline/worker"
)

// startDemo seeds the demo schedules and runs the sample workflows
// in-process, through this server's own worker API, until ctx ends. The
// returned wait blocks until the worker has handed in its last results:
// serve calls it before closing the HTTP server, so a Ctrl-C does not turn
// into warnings about results that could not be reported.
func startDemo(ctx context.Context, a *app, namespace, addr string, tls bool, store *auth.Store, logger *slog.Logger) (wait func(), err error) {
	if tls {
		return nil, usagef("--demo is for trying Tideline locally over plain HTTP; leave out --tls-cert/--tls-key")
	}
	if err := demo.Seed(ctx, a.service, namespace); err != nil {
		return nil, fmt.Errorf("seed demo schedules: %w", err)
	}
	// The worker dials this server on loopback, whatever interface it
	// listens on.
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("demo worker address: %w", err)
	}
	opts := worker.Options{BaseURL: "http://127.0.0.1:" + port, Namespace: namespace, Concurrency: 4, Logger: logger, WorkerID: "demo-worker"}
	if store.Enabled() {
		if opts.Token, err = store.AddEphemeral("demo-worker", auth.RoleWorker); err != nil {
			return nil, err
		}
	}
	w, err := worker.New(opts)
	if err != nil {
		return nil, fmt.Errorf("demo worker: %w", err)
	}
	demo.Register(w, rand.NewPCG(rand.Uint64(), rand.Uint64()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			logger.Error("demo worker stopped", "err", err)
		}
	}()
	logger.Info("demo mode: example schedules seeded; sample workflows run in-process", "namespace", namespace)
	return func() { <-done }, nil
}
