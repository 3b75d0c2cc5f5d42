package loadgen

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/scheduling"
)

// Meter adds up how many fires the loops wrote and how long writing them
// took: a pass that fired (Loop.OnPass) and a preparation ahead of an
// instant (the loop's "prepared fires committed" debug record, which is
// where it reports how long preparing took). Fires over that time is the
// write rate, whether the fires were written before or at their instant.
type Meter struct {
	mu       sync.Mutex
	fires    int
	prepared int
	took     time.Duration
}

// ObservePass matches scheduling.Loop.OnPass.
func (m *Meter) ObservePass(res scheduling.LoopResult, took time.Duration, _ error) {
	n := 0
	for _, r := range res.Rows {
		if r.Outcome == scheduling.OutcomeTriggered {
			n++
		}
	}
	if n == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fires += n
	m.took += took
}

// Rate is fires per second of writing, the fires counted, and how many of
// them were prepared ahead.
func (m *Meter) Rate() (perSecond float64, fires, prepared int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.took > 0 {
		perSecond = float64(m.fires) / m.took.Seconds()
	}
	return perSecond, m.fires, m.prepared
}

// Handler wraps the loops' log handler: it reads the preparation records
// (whatever the log level) and passes on what inner wants.
func (m *Meter) Handler(inner slog.Handler) slog.Handler { return meterHandler{m, inner} }

type meterHandler struct {
	m     *Meter
	inner slog.Handler
}

// preparedRecord is the message the loop logs after committing prepared
// fires, with their count ("fires") and how long preparing took
// ("prepared_in").
const preparedRecord = "prepared fires committed"

func (h meterHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelDebug || h.inner.Enabled(ctx, l)
}

func (h meterHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == preparedRecord {
		var fires int64
		var took time.Duration
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "fires":
				if a.Value.Kind() == slog.KindInt64 {
					fires = a.Value.Int64()
				}
			case "prepared_in":
				if a.Value.Kind() == slog.KindDuration {
					took = a.Value.Duration()
				}
			}
			return true
		})
		h.m.mu.Lock()
		h.m.fires += int(fires)
		h.m.prepared += int(fires)
		h.m.took += took
		h.m.mu.Unlock()
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h meterHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return meterHandler{h.m, h.inner.WithAttrs(as)}
}

func (h meterHandler) WithGroup(name string) slog.Handler {
	return meterHandler{h.m, h.inner.WithGroup(name)}
}
