package cli

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/demo"
	"github.com/tidelinehq/tideline/worker"
)

// startDemo seeds the demo schedules and runs the sample workflows
// in-process, through this server's own worker API: most as Go handlers,
// those of demo.CommandQueue as shell commands through the command runner
// of `tideline worker`. The workers run until stop, not until ctx ends: on shutdown serve stops it
// first, while the HTTP server still takes its reports (cli/shutdown.go).
func startDemo(ctx context.Context, a *app, namespace, addr string, tls bool, store *auth.Store, logger *slog.Logger) (stop func(context.Context) error, err error) {
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
	workers := []*worker.Worker{w}
	// Two schedules run shell commands through the command runner, the path
	// `tideline worker --run TYPE=COMMAND` takes.
	opts.WorkerID, opts.Queue, opts.StopGrace = "demo-command-runner", demo.CommandQueue, 5*time.Second
	commands, err := demo.NewRunner(logger, time.Second)
	if err != nil {
		// A machine without sh still gets the rest of the demo.
		logger.Warn("demo: no command runner; the runs of queue "+demo.CommandQueue+" stay pending", "err", err)
	} else {
		cw, err := worker.New(opts)
		if err != nil {
			return nil, fmt.Errorf("demo command runner: %w", err)
		}
		commands.Register(cw)
		workers = append(workers, cw)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var running sync.WaitGroup
	for _, w := range workers {
		running.Go(func() {
			if err := w.Run(runCtx); err != nil {
				logger.Error("demo worker stopped", "err", err)
			}
		})
	}
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	logger.Info("demo mode: example schedules seeded; sample workflows run in-process, two of them as shell commands", "namespace", namespace)
	return func(ctx context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, nil
}
