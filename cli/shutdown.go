package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/tidelinehq/tideline/scheduling"
)

// Graceful shutdown (SPEC §20, docs/PRODUCTION.md "Shutdown"). On SIGTERM
// (or Ctrl-C) serve goes down in this order, all within --shutdown-timeout:
//
//  1. at once: /readyz answers 503 "shutting down" and polls claim nothing
//     (a long poll waiting is answered empty; scheduling.Service.Drain); the
//     in-process executors are told to stop — they cancel their handlers and
//     report what they hold (a run stopped mid-way fails its attempt as
//     "stopped" and is retried by its policy at once, instead of waiting for
//     its lease to expire), through the HTTP server, which still serves;
//  2. the drain: everything else is served as before and the loop keeps
//     firing, for --shutdown-drain, so a load balancer's next probe sees the
//     503 and moves traffic before the listener closes (a second signal ends
//     the drain at once);
//  3. the loop stops claiming; a set of fires prepared ahead is committed at
//     its instant if that comes within prepareCommitWindow, else rolled back
//     (its schedules are due again for any replica);
//  4. the HTTP server closes its listener and waits for requests in flight.
//
// The process exits 0 when all of it finished in time; past the timeout it
// closes what is left and exits 1.

// Defaults of the shutdown flags.
const (
	defaultShutdownTimeout = 30 * time.Second
	defaultShutdownDrain   = 5 * time.Second
	// prepareCommitWindow: a prepared set whose instant is this close is
	// committed rather than rolled back (preparing a handful of fires
	// starts a quarter of a second ahead; larger sets earlier).
	prepareCommitWindow = 2 * time.Second
)

// shutdownFlags are serve's --shutdown-timeout and --shutdown-drain.
type shutdownFlags struct {
	timeout time.Duration
	drain   time.Duration
	drainOn bool // --shutdown-drain given
}

func (f *shutdownFlags) bind(fs *flag.FlagSet) {
	fs.DurationVar(&f.timeout, "shutdown-timeout", defaultShutdownTimeout, "on SIGTERM, exit within this long: drain, stop the in-process workers, the loop and the HTTP server (exit 1 if they are not done by then)")
	fs.Func("shutdown-drain", fmt.Sprintf("on SIGTERM, keep serving this long with /readyz answering 503, so a load balancer stops sending traffic first (default %s; 0 on a loopback --addr, which no load balancer probes)", defaultShutdownDrain),
		func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil {
				return err
			}
			f.drain, f.drainOn = d, true
			return nil
		})
}

// validate settles the drain's default for addr and checks the pair.
func (f *shutdownFlags) validate(addr string) error {
	if !f.drainOn {
		f.drain = defaultShutdownDrain
		if loopbackAddr(addr) {
			f.drain = 0
		}
	}
	switch {
	case f.timeout < time.Second || f.timeout > 10*time.Minute:
		return usagef("invalid --shutdown-timeout %s: want 1s up to 10m", f.timeout)
	case f.drain < 0 || f.drain >= f.timeout:
		return usagef("invalid --shutdown-drain %s: want 0 up to less than --shutdown-timeout (%s)", f.drain, f.timeout)
	}
	return nil
}

// executors are the in-process parts that hold runs' leases (the demo's
// worker; in-process executors join with add): stopped first on shutdown,
// while the HTTP server still takes their reports.
type executors struct {
	mu    sync.Mutex
	stops []executorStop
}

type executorStop struct {
	name string
	stop func(ctx context.Context) error // cancels the executor and waits for it to hand its runs back
}

// add registers an executor; stop must cancel it and return once it has
// reported (or handed back) every run it holds, or when ctx ends.
func (x *executors) add(name string, stop func(ctx context.Context) error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stops = append(x.stops, executorStop{name, stop})
}

// stopAll stops every executor at once and waits for them all.
func (x *executors) stopAll(ctx context.Context, logger *slog.Logger) {
	x.mu.Lock()
	stops := x.stops
	x.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range stops {
		wg.Go(func() {
			if err := s.stop(ctx); err != nil {
				logger.Warn("shutdown: executor did not stop cleanly", "executor", s.name, "err", err)
			}
		})
	}
	wg.Wait()
}

// shutdownServe runs steps 1–4 above; started is when the signal came.
func shutdownServe(f shutdownFlags, logger *slog.Logger, svc *scheduling.Service, execs *executors, loop *scheduling.Loop, loopRunning bool, httpServer *http.Server) error {
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	// A second signal ends the drain at once; the rest still runs.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)

	logger.Info("shutting down", "drain", f.drain, "timeout", f.timeout)
	svc.Drain()
	execsDone := make(chan struct{})
	go func() {
		// Polls claiming as the drain began answer first, so the
		// executors have in hand every run leased to them.
		if err := svc.AwaitPolls(ctx); err != nil {
			logger.Warn("shutdown: polls still in progress", "err", err)
		}
		execs.stopAll(ctx, logger)
		close(execsDone)
	}()
	drain := time.NewTimer(f.drain)
	defer drain.Stop()
	select {
	case <-drain.C:
	case <-again:
		logger.Info("shutdown: second signal; ending the drain")
	case <-ctx.Done():
	}
	select {
	case <-execsDone:
	case <-ctx.Done():
	}
	if loopRunning {
		if err := loop.Shutdown(ctx, prepareCommitWindow); err != nil {
			logger.Warn("shutdown: the scheduling loop did not stop in time", "err", err)
		}
	}
	err := httpServer.Shutdown(ctx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = httpServer.Close()
		return fmt.Errorf("shut down: not done within --shutdown-timeout %s; closed the connections still open: %w", f.timeout, err)
	}
	logger.Info("shut down", "took", time.Since(started).Round(time.Millisecond))
	return nil
}
