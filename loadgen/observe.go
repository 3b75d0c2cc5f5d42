package loadgen

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"
)

// Sighting is one observation: Count runs of an instant were visible At.
type Sighting struct {
	At    time.Time
	Count int
}

// Watch describes how an observer watches one instant.
type Watch struct {
	// Occurrence is the instant the runs are for.
	Occurrence time.Time
	// Want is how many runs make it complete; watching stops there.
	Want int
	// From is when watching starts (two seconds before Occurrence if zero).
	From time.Time
	// Until is when watching gives up.
	Until time.Time
	// Every is the polling period, the measurement's resolution (20 ms if
	// zero).
	Every time.Duration
}

// Observe watches the runs of one instant appear, from outside the loop:
// on its own connection, from two seconds before the occurrence, it counts
// every w.Every the runs of the occurrence whose ID is at least the
// occurrence minus a second. Run IDs are ULIDs stamped with the fire time
// (or the instant, for fires prepared ahead), so that is one range on the
// primary key, not the whole table; and
// a run counts the moment its transaction commits — when a worker could
// first claim it. That is why lag is measured here and not from the stored
// created_at, which for prepared fires is the instant by construction.
func Observe(ctx context.Context, db bun.IDB, w Watch) ([]Sighting, error) {
	if w.Every <= 0 {
		w.Every = 20 * time.Millisecond
	}
	// The occurrence filter keeps late fires of an earlier instant out
	// when a load is too heavy to finish before the next one.
	q := "SELECT count(*) FROM workflow_runs WHERE id >= ? AND occurrence_time = ?"
	args := []any{runIDAt(w.Occurrence.Add(-time.Second)), w.Occurrence.UTC()}
	if w.From.IsZero() {
		w.From = w.Occurrence.Add(-2 * time.Second)
	}
	if !sleepUntil(ctx, w.From) {
		return nil, ctx.Err()
	}
	var out []Sighting
	for {
		var count int
		if err := db.NewRaw(q, args...).Scan(ctx, &count); err != nil {
			return out, fmt.Errorf("count visible runs: %w", err)
		}
		now := time.Now()
		out = append(out, Sighting{At: now, Count: count})
		if count >= w.Want || !now.Before(w.Until) {
			return out, nil
		}
		if !sleepUntil(ctx, now.Add(w.Every)) {
			return out, ctx.Err()
		}
	}
}

// runIDAt is the smallest ULID stamped at t.
func runIDAt(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), zeroReader{}).String()
}

// Lags turns counts over time into one visible lag per run, in
// milliseconds, in order: the k-th run is taken to have appeared at the
// first sighting of k or more. At most n are returned; fewer when some
// never appeared.
func Lags(sightings []Sighting, occurrence time.Time, n int) []float64 {
	lags := make([]float64, 0, n)
	for _, s := range sightings {
		for len(lags) < min(s.Count, n) {
			lags = append(lags, float64(s.At.Sub(occurrence).Microseconds())/1000)
		}
	}
	return lags
}

// Percentile of sorted values, nearest rank; 0 for none.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// sleepUntil waits for t or the context; false when the context ended.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
