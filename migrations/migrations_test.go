package migrations_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
)

// columns lists "table.column" for every Tideline table of db.
func columns(t *testing.T, db *bun.DB) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	if database.IsPostgres(db) {
		require.NoError(t, db.NewRaw(`SELECT table_name || '.' || column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name LIKE 'workflow_%'`).Scan(ctx, &out))
	} else {
		require.NoError(t, db.NewRaw(`SELECT m.name || '.' || p.name FROM sqlite_master m, pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.name LIKE 'workflow_%'`).Scan(ctx, &out))
	}
	sort.Strings(out)
	return out
}

func TestBothDialectsHaveTheSameTablesAndColumns(t *testing.T) {
	t.Parallel()
	sqlite := columns(t, dbtest.SQLite(t))
	pg := columns(t, dbtest.Postgres(t))
	require.Equal(t, pg, sqlite)

	tables := map[string]bool{}
	for _, c := range pg {
		tables[strings.SplitN(c, ".", 2)[0]] = true
	}
	require.Equal(t, map[string]bool{
		"workflow_schedules": true, "workflow_schedule_history_events": true,
		"workflow_instances": true, "workflow_runs": true, "workflow_history_events": true, "workflow_schedule_health": true,
		"workflow_schedule_health_pending": true,
	}, tables)
	require.Contains(t, pg, "workflow_schedules.next_nominal_at")
}

func TestApplyIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	for _, name := range dbtest.Dialects {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var rawURL string
			if name == "postgres" {
				rawURL = dbtest.PostgresURL(t)
			} else {
				rawURL = "sqlite:" + t.TempDir() + "/m.db"
			}
			const replicas = 4
			var wg sync.WaitGroup
			applied := make([][]string, replicas)
			errs := make([]error, replicas)
			for i := range replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					db, err := database.Open(ctx, rawURL)
					if err != nil {
						errs[i] = err
						return
					}
					defer db.Close()
					applied[i], errs[i] = migrations.Apply(ctx, db)
				}()
			}
			wg.Wait()
			total := 0
			for i := range replicas {
				require.NoError(t, errs[i], "replica %d", i)
				total += len(applied[i])
			}
			db, err := database.Open(ctx, rawURL)
			require.NoError(t, err)
			defer db.Close()
			all, err := migrations.Load(db)
			require.NoError(t, err)
			require.Equal(t, len(all), total, "each migration applied exactly once across replicas")
			pending, err := migrations.Pending(ctx, db)
			require.NoError(t, err)
			require.Zero(t, pending)
			again, err := migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.Empty(t, again)
		})
	}
}
