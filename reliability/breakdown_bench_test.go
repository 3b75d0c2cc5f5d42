package reliability

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// statementClock is a bun query hook that adds up the wall time of each
// kind of statement (operation + first table), for BenchmarkFireBreakdown.
type statementClock struct {
	mu    sync.Mutex
	total map[string]time.Duration
	count map[string]int
}

var firstTable = regexp.MustCompile(`(?i)(?:FROM|INTO|UPDATE)\s+"?([a-z_]+)"?`)

func (c *statementClock) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *statementClock) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	op := strings.ToUpper(e.Operation())
	switch e.IQuery.(type) {
	case *bun.SelectQuery:
		op = "SELECT"
	case *bun.InsertQuery:
		op = "INSERT"
	case *bun.UpdateQuery:
		op = "UPDATE"
	case *bun.RawQuery: // the fire's unnest statements: named by their first word
		if word, _, ok := strings.Cut(strings.TrimSpace(e.Query), " "); ok {
			op = strings.ToUpper(word)
		}
	}
	table := ""
	if m := firstTable.FindStringSubmatch(e.Query); m != nil {
		table = m[1]
	}
	switch {
	case op == "UPDATE" && strings.HasPrefix(strings.TrimSpace(e.Query), "WITH"):
		table = "workflow_schedules (bulk)"
	case op == "SELECT" && strings.Contains(e.Query, "buffer_depth > 0"):
		table = "workflow_schedules (drain claim)"
	case op == "SELECT" && strings.Contains(e.Query, "next_fire_at <="):
		table = "workflow_schedules (due claim)"
	}
	key := op + " " + table
	c.mu.Lock()
	c.total[key] += time.Since(e.StartTime)
	c.count[key]++
	c.mu.Unlock()
}

// BenchmarkFireBreakdown runs what BenchmarkFireThroughput runs (10,000 due
// schedules, one loop pass, batches of 500, or of 100 as `serve` uses) and
// splits the pass's wall time by statement, to show where a fire's time
// goes. Each statement kind is reported in milliseconds per 10,000 fires;
// "other-ms" is the rest: the service's Go work plus BEGIN/COMMIT.
//
//	go test ./reliability -run '^$' -bench FireBreakdown -count 3
//
// The "+claim-index" variants (PostgreSQL) are an experiment, not the
// product: they add an index on (status, next_fire_at, id) to the test's own
// schema, so that ClaimDue's ORDER BY next_fire_at, id LIMIT n can stop after
// n rows instead of sorting every due schedule (docs/PERFORMANCE.md).
func BenchmarkFireBreakdown(b *testing.B) {
	type variant struct {
		dialect    string
		limit      int
		claimIndex bool
	}
	var variants []variant
	for _, dialect := range dbtest.Dialects {
		for _, limit := range []int{500, 100} {
			variants = append(variants, variant{dialect, limit, false})
			if dialect == "postgres" {
				variants = append(variants, variant{dialect, limit, true})
			}
		}
	}
	for _, v := range variants {
		name := fmt.Sprintf("%s/batch=%d", v.dialect, v.limit)
		if v.claimIndex {
			name += "+claim-index"
		}
		b.Run(name, func(b *testing.B) {
			const n = 10000
			db := dbtest.Open(b, v.dialect)
			clock := schedtest.NewClock(benchT0)
			svc := schedtest.Service(db, clock)
			seedMinutely(b, db, "due", n, benchT0)
			if v.claimIndex {
				if _, err := db.ExecContext(context.Background(),
					"CREATE INDEX bench_claim_idx ON workflow_schedules (status, next_fire_at, id)"); err != nil {
					b.Fatal(err)
				}
			}
			// Fresh statistics, as autovacuum keeps them in production.
			if _, err := db.ExecContext(context.Background(), "ANALYZE workflow_schedules"); err != nil {
				b.Fatal(err)
			}
			hook := &statementClock{total: map[string]time.Duration{}, count: map[string]int{}}
			db.AddQueryHook(hook)
			loop := &scheduling.Loop{Service: svc, Limit: v.limit}
			var elapsed, last time.Duration
			var fired int
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				at := benchT0.Add(time.Duration(i) * time.Minute)
				makeAllDue(b, db, at)
				clock.Set(at.Add(time.Second))
				hook.mu.Lock()
				clear(hook.total)
				clear(hook.count)
				hook.mu.Unlock()
				b.StartTimer()
				started := time.Now()
				res, err := loop.RunOnce(context.Background())
				last = time.Since(started)
				elapsed += last
				if err != nil || len(res.Rows) != n {
					b.Fatalf("pass: %d rows, %v", len(res.Rows), err)
				}
				fired += len(res.Rows)
			}
			// The hook holds the last pass: 10,000 fires.
			keys := make([]string, 0, len(hook.total))
			var statements time.Duration
			for k, d := range hook.total {
				keys = append(keys, k)
				statements += d
			}
			sort.Strings(keys)
			for _, k := range keys {
				b.ReportMetric(float64(hook.total[k].Microseconds())/1000, metricName(k)+"-ms")
				b.Logf("%-45s %6d statements %8.1f ms", k, hook.count[k], float64(hook.total[k].Microseconds())/1000)
			}
			b.ReportMetric(float64((last-statements).Microseconds())/1000, "other-ms")
			b.ReportMetric(float64(fired)/elapsed.Seconds(), "fires/s")
		})
	}
}

func metricName(key string) string {
	r := strings.NewReplacer(" ", "_", "(", "", ")", "", "workflow_", "")
	return strings.ToLower(r.Replace(key))
}
