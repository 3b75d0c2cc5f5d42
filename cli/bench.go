package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/scheduling"
)

// startCPUProfile profiles this process into path ("" profiles nothing)
// until the returned stop.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usagef("cannot write --cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchPrefix names the schedules a bench seeds.
const benchPrefix = "bench"

// runBench measures the loop serve runs at scale on a database of its own
// (docs/PERFORMANCE.md, "Reproduce"): it seeds schedules due together,
// runs in-process loops, watches the runs appear from a connection of its
// own, checks exactly-once and prints what the fires cost.
func runBench(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("bench", "tideline bench --database postgres://postgres@127.0.0.1/postgres --schedules 10000 --instants 3", e)
	dbURL := fs.String("database", envOr(e, "TIDELINE_DATABASE_URL", ""),
		"postgres://… (a new schema tideline_bench_<ulid> is created in it) or sqlite:PATH (a file that must not exist yet) (env TIDELINE_DATABASE_URL; default: a temporary SQLite file)")
	schedules := fs.Int("schedules", 10000, "schedules to seed, all due at the same instants (1–1,000,000)")
	instants := fs.Int("instants", 3, "instants to fire and measure (1–100)")
	every := fs.Duration("every", time.Minute, "time between instants (whole seconds, at least 1s): the schedules fire on an interval of this length")
	replicas := fs.Int("replicas", 1, "scheduling loops running at once, each with its own connection pool, as separate serve replicas would (1–16)")
	keep := fs.Bool("keep", false, "keep the bench's schema (PostgreSQL) or file (SQLite) afterwards instead of dropping it")
	output := outputFlag(fs, "table", "json")
	logLevel := fs.String("log-level", envOr(e, "TIDELINE_LOG_LEVEL", "warn"), "level of the loops' log on stderr: debug, info, warn or error (env TIDELINE_LOG_LEVEL)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of this process while the loops run to this file (go tool pprof reads it)")
	var lf loopFlags
	lf.bind(fs, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case *schedules < 1 || *schedules > 1_000_000:
		return usagef("invalid --schedules %d: want 1-1000000", *schedules)
	case *instants < 1 || *instants > 100:
		return usagef("invalid --instants %d: want 1-100", *instants)
	case *every < time.Second || *every%time.Second != 0:
		return usagef("invalid --every %s: want whole seconds, at least 1s", *every)
	case *replicas < 1 || *replicas > 16:
		return usagef("invalid --replicas %d: want 1-16", *replicas)
	}
	if err := checkOutput(*output, "table", "json"); err != nil {
		return err
	}
	level, err := parseLevel(*logLevel)
	if err != nil {
		return err
	}
	if err := lf.validate(); err != nil {
		return err
	}
	if u := *dbURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") && !strings.HasPrefix(u, "sqlite:") {
		return usagef("invalid --database %q: want postgres://… or sqlite:PATH", u)
	}

	target, err := newBenchTarget(ctx, *dbURL)
	if err != nil {
		return err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(e.stderr, "bench: "+format+"\n", args...) }
	defer func() {
		if *keep {
			progress("kept %s", target.name)
			return
		}
		if err := target.drop(); err != nil {
			fmt.Fprintf(e.stderr, "bench: could not remove %s: %v\n", target.name, err)
		}
	}()
	progress("using %s", target.name)

	observer, err := database.Open(ctx, target.url)
	if err != nil {
		return err
	}
	defer observer.Close()
	if _, err := migrations.Apply(ctx, observer); err != nil {
		return err
	}

	meter := &loadgen.Meter{}
	cpu := &cpuMeter{db: observer}
	logger := slog.New(meter.Handler(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})))
	start := func(ctx context.Context) (func(), error) {
		var stops []func()
		stopAll := func() {
			for _, stop := range stops {
				stop()
			}
		}
		cpu.begin(ctx)
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopProfile)
		for i := range *replicas {
			db, err := database.Open(ctx, loopURL(target.url))
			if err != nil {
				stopAll()
				return nil, err
			}
			svc := scheduling.New(scheduling.Config{DB: db, Logger: logger.With("replica", i)})
			loop := lf.loop(svc, logger.With("replica", i))
			loop.OnPass = meter.ObservePass
			loop.Start(ctx)
			stops = append(stops, func() {
				loop.Stop()
				_ = db.Close()
			})
		}
		return func() {
			cpu.end(ctx) // before the loops' connections close
			stopAll()
		}, nil
	}
	// Fire-ahead may start preparing up to --fire-ahead before the first
	// instant; give it that, and the loops a moment to start.
	lead := 2 * time.Second
	if database.Of(observer).Name() == database.PostgreSQL {
		lead += lf.ahead
	}
	rep, err := loadgen.Run{DB: observer, Prefix: benchPrefix, Schedules: *schedules, Instants: *instants, Every: *every,
		Lead: lead, Start: start, Meter: meter, Progress: progress}.Execute(ctx)
	if err != nil {
		return err
	}
	if *output == "json" {
		if err := writeJSON(e.stdout, benchJSON(rep, *replicas, lf.ahead, cpu.use)); err != nil {
			return err
		}
	} else if err := printBench(e, rep, *replicas, lf.ahead, *every, cpu.use); err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		for i, p := range rep.Problems {
			if i == 20 {
				fmt.Fprintf(e.stderr, "… and %d more\n", len(rep.Problems)-i)
				break
			}
			fmt.Fprintln(e.stderr, p)
		}
		return ErrSilentFailure
	}
	return nil
}

// benchTarget is the bench's own database: a fresh schema on PostgreSQL, a
// new file on SQLite. It never writes into tables that existed before.
type benchTarget struct {
	name string // for messages
	url  string // connects to it
	drop func() error
}

func newBenchTarget(ctx context.Context, rawURL string) (*benchTarget, error) {
	if path, ok := database.SQLitePath(rawURL); ok {
		if rawURL == "" {
			dir, err := os.MkdirTemp("", "tideline-bench-")
			if err != nil {
				return nil, fmt.Errorf("create bench file: %w", err)
			}
			path = filepath.Join(dir, "bench.db")
			return &benchTarget{name: "SQLite file " + path, url: "sqlite:" + path, drop: func() error { return os.RemoveAll(dir) }}, nil
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			return nil, usagef("refusing to bench in %s: it exists already; give a path that does not exist (or leave --database out for a temporary file)", path)
		}
		return &benchTarget{name: "SQLite file " + path, url: "sqlite:" + path, drop: func() error {
			var errs []error
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}}, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, usagef("invalid --database: %v", err)
	}
	admin, err := database.Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	schema := "tideline_bench_" + strings.ToLower(ulid.MustNew(ulid.Now(), rand.Reader).String())
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA ?", bun.Ident(schema)); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return &benchTarget{name: "PostgreSQL schema " + schema, url: u.String(), drop: func() error {
		// Its own context: the bench's may have ended with Ctrl-C.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin, err := database.Open(ctx, rawURL)
		if err != nil {
			return err
		}
		defer admin.Close()
		_, err = admin.ExecContext(ctx, "DROP SCHEMA ? CASCADE", bun.Ident(schema))
		return err
	}}, nil
}

// benchColumns are the summary table's columns, in order.
var benchColumns = []string{"database", "schedules", "instants", "fires", "lag p50", "lag p99", "lag max", "fires/s", "ahead",
	"bytes/fire", "rows/fire", "inserts/fire", "updates/fire", "cpu/fire", "db cpu/fire", "exactly once"}

func printBench(e env, rep loadgen.Report, replicas int, ahead, every time.Duration, cpu cpuUse) error {
	w := e.stdout
	aheadNote := "--fire-ahead " + ahead.String()
	if rep.Dialect != "postgres" {
		aheadNote = "firing at the instant (SQLite cannot fire ahead)"
	}
	fmt.Fprintf(w, "Tideline %s bench on %s: %d schedules due together at %d instants %s apart, %d replica(s), %s\n\n",
		Version, rep.Dialect, rep.Schedules, len(rep.Instants), every, replicas, aheadNote)
	per := newTable(w, "instant", "visible", "first", "p50", "p99", "max")
	for _, in := range rep.Instants {
		per.row(in.At.Format(time.RFC3339), fmt.Sprint(in.Visible), ms(in.First), ms(in.P50), ms(in.P99), ms(in.Max))
	}
	if err := per.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t := newTable(w, benchColumns...)
	once := "yes"
	if len(rep.Problems) > 0 {
		once = fmt.Sprintf("NO (%d problems)", len(rep.Problems))
	}
	t.row(rep.Dialect, fmt.Sprint(rep.Schedules), fmt.Sprint(len(rep.Instants)), fmt.Sprint(rep.Fires),
		ms(rep.P50), ms(rep.P99), ms(rep.Max), fmt.Sprintf("%.0f", rep.FiresPerSec), percent(rep.Prepared, rep.Fires),
		fmt.Sprintf("%.0f", rep.BytesPerFire()), fmt.Sprintf("%.2f", rep.RowsPerFire()),
		perFireOrDash(rep.Growth.Inserted, rep.Fires), perFireOrDash(rep.Growth.Updated, rep.Fires),
		perFireMicros(cpu.Process, rep.Fires), dbCPUText(cpu, rep.Fires), once)
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nlag: from the instant until a separate connection saw the run (20 ms resolution); ahead: share of fires prepared before their instant;\n"+
		"bytes and rows: growth of every Tideline table (indexes included) per fire; inserts/updates: pg_stat_user_tables per fire;\n"+
		"cpu: user+system CPU of this process while the loops ran (the loops and the observer), per fire; db cpu: of the PostgreSQL backends serving the loops.")
	return nil
}

func ms(v float64) string { return fmt.Sprintf("%.0f ms", v) }

func dbCPUText(cpu cpuUse, fires int) string {
	if !cpu.DatabaseKnown {
		return "-"
	}
	return perFireMicros(cpu.Database, fires)
}

func percent(part, whole int) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

func perFireOrDash(n int64, fires int) string {
	if n < 0 || fires == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(fires))
}

// benchResult is bench --output json.
type benchResult struct {
	Database     string         `json:"database"`
	Schedules    int            `json:"schedules"`
	Replicas     int            `json:"replicas"`
	FireAhead    string         `json:"fire_ahead"`
	Instants     []benchInstant `json:"instants"`
	Fires        int            `json:"fires"`
	LagP50MS     float64        `json:"lag_p50_ms"`
	LagP99MS     float64        `json:"lag_p99_ms"`
	LagMaxMS     float64        `json:"lag_max_ms"`
	FiresPerSec  float64        `json:"fires_per_second"`
	Prepared     int            `json:"prepared_ahead"`
	BytesPerFire float64        `json:"bytes_per_fire"`
	RowsPerFire  float64        `json:"rows_per_fire"`
	Inserted     *int64         `json:"rows_inserted"`
	Updated      *int64         `json:"rows_updated"`
	// Bytes per fire of each table, index and TOAST table that grew
	// (PostgreSQL; null on SQLite): where bytes_per_fire goes.
	BytesPerFireByRelation map[string]float64 `json:"bytes_per_fire_by_relation"`
	// CPU per fire in µs while the loops ran: this process's, and the
	// PostgreSQL backends' of the loops (null when not readable).
	CPUPerFireUS   float64  `json:"cpu_per_fire_us"`
	DBCPUPerFireUS *float64 `json:"db_cpu_per_fire_us"`
	ExactlyOnce    bool     `json:"exactly_once"`
	Problems       []string `json:"problems"`
}

type benchInstant struct {
	At      string  `json:"at"`
	Visible int     `json:"visible"`
	FirstMS float64 `json:"first_ms"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
}

func benchJSON(rep loadgen.Report, replicas int, ahead time.Duration, cpu cpuUse) benchResult {
	out := benchResult{Database: rep.Dialect, Schedules: rep.Schedules, Replicas: replicas, FireAhead: ahead.String(), Fires: rep.Fires,
		LagP50MS: rep.P50, LagP99MS: rep.P99, LagMaxMS: rep.Max, FiresPerSec: rep.FiresPerSec, Prepared: rep.Prepared,
		BytesPerFire: rep.BytesPerFire(), RowsPerFire: rep.RowsPerFire(), ExactlyOnce: len(rep.Problems) == 0, Problems: []string{}}
	if rep.Growth.Inserted >= 0 {
		out.Inserted, out.Updated = &rep.Growth.Inserted, &rep.Growth.Updated
	}
	out.BytesPerFireByRelation = rep.BytesPerFireByRelation()
	if rep.Fires > 0 {
		out.CPUPerFireUS = float64(cpu.Process.Microseconds()) / float64(rep.Fires)
		if cpu.DatabaseKnown {
			v := float64(cpu.Database.Microseconds()) / float64(rep.Fires)
			out.DBCPUPerFireUS = &v
		}
	}
	for _, in := range rep.Instants {
		out.Instants = append(out.Instants, benchInstant{At: scheduling.FormatTime(in.At), Visible: in.Visible, FirstMS: in.First, P50MS: in.P50, P99MS: in.P99, MaxMS: in.Max})
	}
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, p.String())
	}
	return out
}
