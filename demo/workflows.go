package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/worker"
)

// Register adds the sample workflows to w: they take a few seconds (a report
// now and then much longer, so overlap policies have something to do),
// fail about one run in ten and stop when their run is cancelled. src drives
// every random choice.
func Register(w *worker.Worker, src rand.Source) {
	newWorkflows(src, time.Second).register(w)
}

// workflows are the sample handlers with their shared randomness.
type workflows struct {
	mu  sync.Mutex // handlers run concurrently; rand.Rand is not safe for that
	rnd *rand.Rand
	// unit is one "second" of simulated work; tests shrink it.
	unit time.Duration
}

func newWorkflows(src rand.Source, unit time.Duration) *workflows {
	return &workflows{rnd: rand.New(src), unit: unit}
}

func (wf *workflows) register(w *worker.Worker) {
	w.Register(WorkflowInvoiceSync, wf.invoiceSync)
	w.Register(WorkflowReport, wf.report)
	w.Register(WorkflowCleanup, wf.cleanup)
}

// between draws an integer in [lo, hi].
func (wf *workflows) between(lo, hi int) int {
	wf.mu.Lock()
	defer wf.mu.Unlock()
	return lo + wf.rnd.IntN(hi-lo+1)
}

// unlucky is true about one time in ten.
func (wf *workflows) unlucky() bool { return wf.between(1, 10) == 1 }

// work simulates lo to hi units of work, stopping early when ctx ends.
func (wf *workflows) work(ctx context.Context, lo, hi int) error {
	t := time.NewTimer(time.Duration(wf.between(lo, hi)) * wf.unit)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inputString reads one string field of the run's input, for outputs and
// messages that mention it.
func inputString(run worker.Run, field, fallback string) string {
	var in map[string]any
	if json.Unmarshal(run.Input, &in) != nil {
		return fallback
	}
	if s, ok := in[field].(string); ok && s != "" {
		return s
	}
	return fallback
}

func (wf *workflows) invoiceSync(ctx context.Context, run worker.Run) (any, error) {
	region := inputString(run, "region", "eu")
	if err := wf.work(ctx, 2, 8); err != nil {
		return nil, fmt.Errorf("invoice sync for %s interrupted: %w", region, err)
	}
	if wf.unlucky() {
		return nil, worker.WithFailureType(fmt.Errorf("billing API answered 503 Service Unavailable for region %s", region), "upstream_unavailable")
	}
	return map[string]any{"region": region, "invoices_synced": wf.between(5, 200)}, nil
}

func (wf *workflows) report(ctx context.Context, run worker.Run) (any, error) {
	name := inputString(run, "report", "usage")
	lo, hi := 3, 12
	if wf.between(1, 4) == 1 {
		lo, hi = 20, 45 // a slow report: longer than several demo intervals
	}
	if err := wf.work(ctx, lo, hi); err != nil {
		return nil, fmt.Errorf("%s report interrupted: %w", name, err)
	}
	if wf.unlucky() {
		return nil, worker.WithFailureType(fmt.Errorf("%s report query exceeded its 30 s statement timeout", name), "query_timeout")
	}
	return map[string]any{"report": name, "format": inputString(run, "format", "csv"), "rows": wf.between(100, 10000)}, nil
}

func (wf *workflows) cleanup(ctx context.Context, run worker.Run) (any, error) {
	target := inputString(run, "target", "cache")
	if err := wf.work(ctx, 1, 4); err != nil {
		return nil, fmt.Errorf("%s cleanup interrupted: %w", target, err)
	}
	if wf.unlucky() {
		// An untyped error: the run fails with the default type "error".
		return nil, errors.New("permission denied removing /var/cache/tideline-demo/" + target + "/tmp-7f3a")
	}
	return map[string]any{"target": target, "files_deleted": wf.between(0, 500)}, nil
}
