package loadgen

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// Run is one load run: Schedules schedules due together at Instants
// instants Every apart, fired by loops the caller starts.
type Run struct {
	// DB is the observer's own connection pool, never the loops'.
	DB        *bun.DB
	Prefix    string
	Schedules int
	Instants  int
	Every     time.Duration
	// Lead is how long after arming the schedules the first instant comes:
	// at least the loops' fire-ahead window, so that preparing can start
	// as early as it wants.
	Lead time.Duration
	// Start starts the loops once the schedules are armed; stop stops
	// them and waits until they have.
	Start func(ctx context.Context) (stop func(), err error)
	// Meter, when set, is read for the write rate (the loops feed it).
	Meter *Meter
	// Progress, when set, hears what the run is doing.
	Progress func(format string, args ...any)
}

// InstantReport is what the observer saw of one instant.
type InstantReport struct {
	At                   time.Time
	Visible              int     // runs seen by the end of watching
	First, P50, P99, Max float64 // visible lag in ms (of the visible runs)
}

// Report is a run's result.
type Report struct {
	Dialect   string
	Schedules int
	Instants  []InstantReport
	Fires     int // runs stored
	// Lag percentiles over every run of every instant, in ms; a run never
	// seen counts as the end of its watch.
	P50, P99, Max float64
	FiresPerSec   float64 // fires over the time the loops spent writing them
	Prepared      int     // fires prepared ahead of their instant
	Growth        Footprint
	Problems      []Problem // empty: every occurrence fired exactly once
}

// BytesPerFire and RowsPerFire are the table growth over the fires.
func (r Report) BytesPerFire() float64 { return perFire(r.Growth.Bytes, r.Fires) }

// BytesPerFireByRelation is BytesPerFire told apart by table, index and
// TOAST table, for those that grew; nil where the database does not say
// (SQLite).
func (r Report) BytesPerFireByRelation() map[string]float64 {
	if r.Growth.Relations == nil {
		return nil
	}
	out := make(map[string]float64, len(r.Growth.Relations))
	for name, grew := range r.Growth.Relations {
		out[name] = perFire(grew, r.Fires)
	}
	return out
}

// RowsPerFire is rows added per fire.
func (r Report) RowsPerFire() float64 { return perFire(r.Growth.Rows, r.Fires) }

func perFire(n int64, fires int) float64 {
	if fires == 0 {
		return 0
	}
	return float64(n) / float64(fires)
}

// Execute seeds the schedules, arms them for the first instant, starts the
// loops, watches every instant from outside, stops the loops and checks
// what was stored. An error is a failure to measure; broken exactly-once
// is reported in Problems.
func (r Run) Execute(ctx context.Context) (Report, error) {
	rep := Report{Dialect: dialectOf(r.DB), Schedules: r.Schedules}
	say := r.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	if r.Schedules <= 0 || r.Instants <= 0 || r.Every <= 0 {
		return rep, errors.New("load run: schedules, instants and every must be positive")
	}
	// Seed first with a placeholder next fire far away, then arm in one
	// statement: seeding 100,000 takes long enough that an instant chosen
	// before it might already be near.
	parked := time.Now().UTC().Truncate(time.Second).AddDate(10, 0, 0)
	started := time.Now()
	if err := Seed(ctx, r.DB, r.Prefix, r.Schedules, EverySpec(parked, r.Every), parked); err != nil {
		return rep, err
	}
	if err := Analyze(ctx, r.DB, "workflow_schedules"); err != nil {
		return rep, err
	}
	say("seeded %d schedules in %s", r.Schedules, time.Since(started).Round(time.Millisecond))
	first := time.Now().UTC().Add(r.Lead + settle(r.DB) + time.Second).Truncate(time.Second)
	spec := EverySpec(first, r.Every)
	if err := Arm(ctx, r.DB, r.Prefix, spec, first); err != nil {
		return rep, err
	}
	// The footprint the fires grow from: after arming, which is setup (it
	// rewrites every seeded schedule once), and once the statistics of the
	// seeding connections have arrived, before the loop starts.
	before, err := MeasureSettled(ctx, r.DB)
	if err != nil {
		return rep, err
	}
	instants := make([]time.Time, r.Instants)
	for i := range instants {
		instants[i] = first.Add(time.Duration(i) * r.Every)
	}
	stop, err := r.Start(ctx)
	if err != nil {
		return rep, err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	say("first instant %s (in %s), then every %s", first.Format(time.TimeOnly), time.Until(first).Round(time.Second), r.Every)

	var all []float64
	for i, at := range instants {
		// Watch from a little before the instant until a little before
		// the next one's watch begins (the last one as long as another
		// would, but at least 30 s).
		margin := min(2*time.Second, r.Every/4)
		w := Watch{Occurrence: at, Want: r.Schedules, From: at.Add(-margin), Until: at.Add(max(r.Every-margin, 30*time.Second))}
		if i+1 < len(instants) {
			w.Until = instants[i+1].Add(-margin)
		}
		sightings, err := Observe(ctx, r.DB, w)
		if err != nil {
			return rep, err
		}
		lags := Lags(sightings, at, r.Schedules)
		ir := InstantReport{At: at, Visible: len(lags)}
		if len(lags) > 0 {
			ir.First, ir.P50, ir.P99, ir.Max = lags[0], Percentile(lags, 0.5), Percentile(lags, 0.99), lags[len(lags)-1]
		}
		// A run never seen counts as seen when watching ended: the lag
		// is at least that.
		gaveUp := float64(sightings[len(sightings)-1].At.Sub(at).Microseconds()) / 1000
		for len(lags) < r.Schedules {
			lags = append(lags, gaveUp)
		}
		all = append(all, lags...)
		rep.Instants = append(rep.Instants, ir)
		say("instant %s: %d of %d visible, p50 %.0f ms, p99 %.0f ms, max %.0f ms", at.Format(time.TimeOnly), ir.Visible, r.Schedules, ir.P50, ir.P99, ir.Max)
	}
	// The loops report a pass once it is over, after its commit made the
	// runs visible: let the last one report before stopping them.
	if r.Meter != nil {
		visible := 0
		for _, in := range rep.Instants {
			visible += in.Visible
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if _, counted, _ := r.Meter.Rate(); counted >= visible || !sleepUntil(ctx, time.Now().Add(50*time.Millisecond)) {
				break
			}
		}
	}
	stop()
	stopped = true
	slices.Sort(all)
	rep.P50, rep.P99, rep.Max = Percentile(all, 0.5), Percentile(all, 0.99), all[len(all)-1]
	if r.Meter != nil {
		rep.FiresPerSec, _, rep.Prepared = r.Meter.Rate()
	}

	after, err := MeasureAfter(ctx, r.DB, before)
	if err != nil {
		return rep, err
	}
	rep.Growth = after.Sub(before)
	fires, err := LoadFires(ctx, r.DB, r.Prefix)
	if err != nil {
		return rep, err
	}
	rep.Fires = len(fires)
	ids := make([]string, r.Schedules)
	for i := range ids {
		ids[i] = ScheduleID(r.Prefix, i)
	}
	rep.Problems = CheckExactlyOnce(ids, instants, fires)
	return rep, nil
}

func dialectOf(db *bun.DB) string {
	if db.Dialect().Name().String() == "pg" {
		return "postgres"
	}
	return "sqlite"
}
