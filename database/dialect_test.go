package database_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// The conformance suite of database.Dialect: every method, on both
// databases, asserting what query code relies on.
func TestDialectConformance(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := t.Context()
		d := database.Of(db)
		_, err := db.ExecContext(ctx, "CREATE TABLE dup (id text PRIMARY KEY, name text UNIQUE, doc "+jsonType(d)+")")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO dup (id, name, doc) VALUES ('a', 'x', '{"kind": "k1", "odd key": "v", "list": [1, 2]}')`)
		require.NoError(t, err)

		t.Run("IsUniqueViolation", func(t *testing.T) {
			// A duplicate key is told apart from other errors by the driver's code.
			_, err := db.ExecContext(ctx, "INSERT INTO dup (id, name) VALUES ('b', 'x')")
			require.True(t, d.IsUniqueViolation(err), "unique column: %v", err)
			_, err = db.ExecContext(ctx, "INSERT INTO dup (id, name) VALUES ('a', 'y')")
			require.True(t, d.IsUniqueViolation(err), "primary key: %v", err)
			_, err = db.ExecContext(ctx, "INSERT INTO nosuchtable (id) VALUES ('a')")
			require.Error(t, err)
			require.False(t, d.IsUniqueViolation(err), "another error: %v", err)
			require.False(t, d.IsUniqueViolation(errors.New("UNIQUE constraint failed")), "text alone is not enough")
		})
		t.Run("JSONText", func(t *testing.T) {
			var got []string
			require.NoError(t, db.NewRaw("SELECT id FROM dup WHERE "+d.JSONText("doc", "kind")+" = ?", "k1").Scan(ctx, &got))
			require.Equal(t, []string{"a"}, got)
			got = nil
			require.NoError(t, db.NewRaw("SELECT id FROM dup WHERE "+d.JSONTextParam("doc")+" = ?", "odd key", "v").Scan(ctx, &got))
			require.Equal(t, []string{"a"}, got, "a key with a space, bound as a parameter")
		})
		t.Run("PastBy", func(t *testing.T) {
			// A stored time plus a per-row number of seconds, compared with
			// a time parameter, on both sides of the boundary.
			_, err := db.ExecContext(ctx, "CREATE TABLE waits (id text PRIMARY KEY, at "+timeType(d)+", secs integer)")
			require.NoError(t, err)
			base := time.Date(2026, 12, 2, 6, 0, 0, 250_000_000, time.UTC)
			for _, row := range []struct {
				id   string
				secs int
			}{{"short", 60}, {"long", 3600}} {
				_, err := db.NewRaw("INSERT INTO waits (id, at, secs) VALUES (?, ?, ?)", row.id, base, row.secs).Exec(ctx)
				require.NoError(t, err)
			}
			past := func(now time.Time) []string {
				var ids []string
				require.NoError(t, db.NewRaw("SELECT id FROM waits WHERE "+d.PastBy("at", "COALESCE(secs, ?)")+" ORDER BY id", 5, now).Scan(ctx, &ids))
				return ids
			}
			require.Empty(t, past(base.Add(59*time.Second)))
			require.Equal(t, []string{"short"}, past(base.Add(61*time.Second)))
			require.Equal(t, []string{"long", "short"}, past(base.Add(2*time.Hour)))
		})
		t.Run("Lock", func(t *testing.T) {
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				var ids []string
				q := database.Lock(tx.NewSelect().Table("dup").Column("id"), "UPDATE SKIP LOCKED")
				if err := q.Scan(ctx, &ids); err != nil {
					return err
				}
				require.Equal(t, []string{"a"}, ids)
				return nil
			})
			require.NoError(t, err)
		})
		t.Run("MigrationTx", func(t *testing.T) {
			// Its changes commit together, and a failure rolls them back.
			err := d.MigrationTx(ctx, db, 42, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO dup (id) VALUES ('m1')")
				return err
			})
			require.NoError(t, err)
			err = d.MigrationTx(ctx, db, 42, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "INSERT INTO dup (id) VALUES ('m2')"); err != nil {
					return err
				}
				return errors.New("migration failed")
			})
			require.Error(t, err)
			var ids []string
			require.NoError(t, db.NewSelect().Table("dup").Column("id").Where("id LIKE 'm%'").Scan(ctx, &ids))
			require.Equal(t, []string{"m1"}, ids)
		})
		t.Run("Vacuum", func(t *testing.T) {
			_, err := db.ExecContext(ctx, "CREATE TABLE churn (id integer PRIMARY KEY, n integer)")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO churn (id, n) SELECT i, 0 FROM (SELECT 1 AS i UNION ALL SELECT 2 UNION ALL SELECT 3) AS v")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "UPDATE churn SET n = n + 1")
			require.NoError(t, err)
			require.NoError(t, d.Vacuum(ctx, db, "churn"))
			if d.Name() != database.PostgreSQL {
				return
			}
			// VACUUM records what it found in the catalog: a table never
			// vacuumed has reltuples -1.
			var tuples float64
			require.NoError(t, db.NewRaw("SELECT reltuples FROM pg_class WHERE oid = 'churn'::regclass").Scan(ctx, &tuples))
			require.Equal(t, 3.0, tuples)
		})
		t.Run("capabilities", func(t *testing.T) {
			// One writer and fires ahead exclude each other: a transaction
			// held open until an instant would stop every other writer.
			require.NotEqual(t, d.SingleWriter(), d.CanFireAhead())
			require.Contains(t, []string{database.PostgreSQL, database.SQLite}, d.Name())
		})
	})
}

func jsonType(d database.Dialect) string {
	if d.Name() == database.PostgreSQL {
		return "jsonb"
	}
	return "text"
}

func timeType(d database.Dialect) string {
	if d.Name() == database.PostgreSQL {
		return "timestamptz"
	}
	return "text"
}
