// Package dbtest gives each test its own, migrated database on both dialects:
// a temporary SQLite file, and a fresh PostgreSQL schema in the database named
// by TIDELINE_TEST_DATABASE_URL (dropped when the test ends).
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/migrations"
)

// EnvURL names the PostgreSQL server tests use. The README's test command
// sets it; without it PostgreSQL tests fail rather than silently skip.
const EnvURL = "TIDELINE_TEST_DATABASE_URL"

// Dialects are the names of the sub-tests ForEach runs.
var Dialects = []string{"sqlite", "postgres"}

// ForEach runs fn once per dialect as parallel-safe sub-tests, each with a
// fresh migrated database.
func ForEach(t *testing.T, fn func(t *testing.T, db *bun.DB)) {
	t.Helper()
	for _, name := range Dialects {
		t.Run(name, func(t *testing.T) {
			fn(t, Open(t, name))
		})
	}
}

// Open returns a fresh migrated database of the named dialect.
func Open(t testing.TB, dialect string) *bun.DB {
	t.Helper()
	switch dialect {
	case "sqlite":
		return SQLite(t)
	case "postgres":
		return Postgres(t)
	}
	t.Fatalf("dbtest: unknown dialect %q", dialect)
	return nil
}

// SQLite returns a migrated database in a temporary file.
func SQLite(t testing.TB) *bun.DB {
	t.Helper()
	return migrated(t, "sqlite:"+filepath.Join(t.TempDir(), "tideline.db"))
}

// PostgresURL returns a URL whose connections use a new, empty schema; the
// schema is dropped at cleanup. Callers that need the URL itself (a server
// started in-process, several replicas) use this instead of Postgres.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Fatalf("dbtest: %s is not set; run the README's test command, or export %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable", EnvURL, EnvURL)
	}
	ctx := context.Background()
	schema := "t_" + randomHex(8)
	// The admin connection is opened for each statement and closed again:
	// a test waiting for its turn to run in parallel holds no connection.
	admin := func(stmt string) error {
		db, err := database.Open(ctx, base)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, stmt)
		return err
	}
	if err := admin("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("dbtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := admin("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dbtest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("dbtest: parse %s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres returns a migrated database in a fresh PostgreSQL schema.
func Postgres(t testing.TB) *bun.DB {
	t.Helper()
	return migrated(t, PostgresURL(t))
}

func migrated(t testing.TB, rawURL string) *bun.DB {
	t.Helper()
	ctx := context.Background()
	db, err := database.Open(ctx, rawURL)
	if err != nil {
		t.Fatalf("dbtest: open %s: %v", rawURL, err)
	}
	LimitPool(db)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := migrations.Apply(ctx, db); err != nil {
		t.Fatalf("dbtest: migrate: %v", err)
	}
	return db
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// TestPoolSize is the most connections a test's database pool opens. Tests
// run in parallel, many packages at once, against one PostgreSQL (100
// connections by default); production's pool of 20 per test exhausted it.
// Concurrency tests still run several transactions at once through it.
const TestPoolSize = 6

// LimitPool caps a test's pool at TestPoolSize and lets idle connections go
// after a second: a parallel test opens its database before it waits for
// its turn, and must not hold connections while it waits (SQLite keeps its
// one connection).
func LimitPool(db *bun.DB) {
	if !database.Of(db).SingleWriter() {
		db.SetMaxOpenConns(TestPoolSize)
		db.SetMaxIdleConns(2)
		db.SetConnMaxIdleTime(time.Second)
	}
}
