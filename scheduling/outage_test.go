package scheduling_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// A database outage is one WARN and one count, not an ERROR from every
// part of the loop every period: the pass, the notification dispatcher and
// the preparer all meet it (a relay in front of the real PostgreSQL, taken
// down), and the loop goes on by itself when it is back.
func TestLoopLogsAnOutageOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	raw := dbtest.PostgresURL(t)
	proxy := dbtest.NewProxy(t, raw)
	db, err := database.Open(ctx, proxy.URL(raw))
	require.NoError(t, err)
	dbtest.LimitPool(db)
	t.Cleanup(func() { _ = db.Close() })
	_, err = migrations.Apply(ctx, db)
	require.NoError(t, err)

	var logs lockedLog
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc := scheduling.New(scheduling.Config{DB: db, Clock: scheduling.SystemClock{}, Rand: schedtest.Rand{}, Logger: logger})
	var lost, failedPasses, okPasses atomic.Int64
	// Outages closer than OutageMerge are one; this test's are 20 passes apart.
	loop := &scheduling.Loop{Service: svc, Period: 20 * time.Millisecond, Ahead: time.Second, Logger: logger, OutageMerge: 100 * time.Millisecond,
		OnConnectionLost: func() { lost.Add(1) },
		OnPass: func(_ scheduling.LoopResult, _ time.Duration, err error) {
			if err != nil {
				failedPasses.Add(1)
			} else {
				okPasses.Add(1)
			}
		}}
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	loop.Start(loopCtx)
	defer loop.Stop()

	for outage := int64(1); outage <= 2; outage++ {
		require.Eventually(t, func() bool { return okPasses.Load() >= 20 }, 10*time.Second, 5*time.Millisecond)
		proxy.Down()
		failed := failedPasses.Load()
		require.Eventually(t, func() bool { return failedPasses.Load() >= failed+5 }, 10*time.Second, 5*time.Millisecond,
			"the loop keeps passing during the outage")
		require.Equal(t, outage, lost.Load(), "one count per outage")
		okPasses.Store(0)
		proxy.Up()
		require.Eventually(t, func() bool { return okPasses.Load() > 0 }, 10*time.Second, 5*time.Millisecond,
			"the loop reconnects by itself")
		require.Eventually(t, func() bool {
			return strings.Count(logs.String(), "database connection restored") == int(outage)
		}, 10*time.Second, 5*time.Millisecond)
	}
	out := logs.String()
	require.Equal(t, 2, strings.Count(out, "level=WARN msg=\"database connection lost"), out)
	require.NotContains(t, out, "level=ERROR", out)
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
