package database

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Dialect is every difference between the two databases that code outside
// this package may depend on: one method per operation (River's driver
// interface is the model), so query code never branches on the database
// and a new difference is added here, with a case in the conformance test
// (dialect_test.go) that runs on both.
type Dialect interface {
	// Name is the dialect's name: PostgreSQL or SQLite.
	Name() string
	// Lock adds a row-locking clause ("UPDATE", "UPDATE OF s SKIP LOCKED")
	// where the database has row locks. SQLite has a single writer (and
	// _txlock=immediate), so a plain SELECT inside the transaction is
	// already exclusive there.
	Lock(q *bun.SelectQuery, clause string) *bun.SelectQuery
	// JSONText is the expression for a top-level JSON string field of
	// column. key must be a constant identifier (it is interpolated).
	JSONText(column, key string) string
	// JSONTextParam is JSONText with the key bound as the query's next
	// argument.
	JSONTextParam(column string) string
	// ScheduleLabel is the registry's label filter: the condition that
	// the schedule s of namespace has a label key whose value is the
	// string value (a number, object or array never matches), with its
	// arguments. PostgreSQL: a containment (@>) the labels' GIN index
	// answers (migration 0026). SQLite: a lookup in the labels' side table
	// (migration 0031), whose form depends on how many schedules carry
	// the label, so it may read the database (see sqlite.ScheduleLabel).
	ScheduleLabel(ctx context.Context, db bun.IDB, namespace, key, value string) (string, []any, error)
	// ScheduleTextCandidates narrows the registry's free-text search (the
	// lower-cased text as a substring of s's schedule ID, note or workflow
	// type; the caller keeps its LIKE condition, which decides) to a
	// superset of the matches an index finds. "" when the LIKE needs no
	// help: PostgreSQL's trigram indexes (migration 0028) serve the LIKE
	// itself. SQLite: the full-text table of migration 0031.
	ScheduleTextCandidates(ctx context.Context, db bun.IDB, lowered string) (string, []any, error)
	// IsUniqueViolation reports whether err is a unique-key violation, by
	// the driver's error code (not by matching message text, which drivers
	// are free to reword).
	IsUniqueViolation(err error) bool
	// Unavailable reports whether err says the database is unreachable or
	// dropped the connection (see the package function Unavailable, which
	// the error handler uses without knowing the dialect).
	Unavailable(err error) bool
	// TypedArrays reports whether a Go slice binds as one typed array
	// parameter (pgdialect.Array), so a batch of rows can be written by
	// unnest with a statement the same size for 1 row or 500. Without it,
	// batches take bun's multi-row VALUES.
	TypedArrays() bool
	// Optimize refreshes the planner's statistics where the database does
	// not keep them itself. SQLite keeps none unless asked, and without
	// them it guesses: with 100,000 schedules it read every one each loop
	// pass to find the failing few (models.ClaimFailing, ~70 ms a pass
	// against ~1.3 ms with statistics; BenchmarkLoopPassIdle). PostgreSQL's
	// autovacuum keeps them where it runs; where it is off, nothing does,
	// and a table never analyzed is planned by default guesses (the ring of
	// recent actions, read for 100 schedules, was scanned whole: 95 ms a
	// page at 100,000 schedules). So on PostgreSQL Optimize analyzes the
	// schema's tables never analyzed or changed by more than a tenth since,
	// as autovacuum would: with it on, it finds nothing to do.
	Optimize(ctx context.Context, db bun.IDB) error
	// Vacuum reclaims the dead row versions of a table that changes all
	// the time (the due queue: a new version per fire) now, instead of at
	// autovacuum's threshold of a fifth of the table, or never where
	// autovacuum is off. It must not run inside a transaction. PostgreSQL:
	// VACUUM (SKIP_LOCKED), which other writers do not wait for. SQLite
	// reuses a freed page at once: nothing to do.
	Vacuum(ctx context.Context, db bun.IDB, table string) error
	// MigrationTx runs fn, the schema changes, in one transaction that
	// several processes serialise on (an advisory lock keyed by key on
	// PostgreSQL, the write lock on SQLite). On SQLite foreign keys are off
	// inside it, as its procedure for rebuilding a table requires (DROP
	// TABLE would otherwise delete the rows that reference it), and every
	// key is checked before the commit: a migration that breaks one fails
	// whole.
	MigrationTx(ctx context.Context, db *bun.DB, key int64, fn func(ctx context.Context, tx bun.Tx) error) error
	// SingleWriter reports whether the database has one connection and one
	// writer (SQLite): no pool to size, writers wait on a file lock.
	SingleWriter() bool
	// CanFireAhead reports whether fires for a coming instant may be
	// written ahead in an open transaction while other transactions go on
	// (scheduling/prepare.go). SQLite's one writer would block everything
	// else for that long.
	CanFireAhead() bool
	// PastBy is a condition true when the time column plus seconds (an
	// SQL integer expression, which may hold parameters of its own) is at
	// or before the query's next argument, a time: "a run pending longer
	// than its schedule's start deadline" is one row's time plus another
	// column. PostgreSQL adds an interval; SQLite stores times as text, so
	// it compares Julian day numbers (millisecond precision, ample for
	// thresholds of seconds).
	PastBy(timeExpr, secondsExpr string) string
}

// Dialect names, as Name returns them.
const (
	PostgreSQL = "postgres"
	SQLite     = "sqlite"
)

// Of is the dialect db speaks.
func Of(db bun.IDB) Dialect {
	if db.Dialect().Name() == dialect.PG {
		return postgres{}
	}
	return sqlite{}
}

// Lock is Of(q.DB()).Lock: every row lock of the product goes through it.
func Lock(q *bun.SelectQuery, clause string) *bun.SelectQuery { return Of(q.DB()).Lock(q, clause) }

type postgres struct{}

func (postgres) Name() string { return PostgreSQL }
func (postgres) Lock(q *bun.SelectQuery, clause string) *bun.SelectQuery {
	return q.For(clause)
}
func (postgres) JSONText(column, key string) string { return column + "->>'" + key + "'" }
func (postgres) JSONTextParam(column string) string { return column + "->>?" }
func (postgres) ScheduleLabel(_ context.Context, _ bun.IDB, _, key, value string) (string, []any, error) {
	return "s.labels @> jsonb_build_object(?::text, ?::text)", []any{key, value}, nil
}
func (postgres) ScheduleTextCandidates(context.Context, bun.IDB, string) (string, []any, error) {
	return "", nil, nil
}
func (postgres) IsUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}
func (postgres) MigrationTx(ctx context.Context, db *bun.DB, key int64, fn func(ctx context.Context, tx bun.Tx) error) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", key); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
		return fn(ctx, tx)
	})
}
func (postgres) TypedArrays() bool { return true }
func (postgres) Optimize(ctx context.Context, db bun.IDB) error {
	var tables []string
	err := db.NewRaw(`SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema()
		AND (COALESCE(last_analyze, last_autoanalyze) IS NULL OR n_mod_since_analyze > 0.1 * GREATEST(n_live_tup, 1000))`).
		Scan(ctx, &tables)
	if err != nil {
		return fmt.Errorf("list tables to analyze: %w", err)
	}
	for _, t := range tables {
		if _, err := db.ExecContext(ctx, "ANALYZE ?", bun.Ident(t)); err != nil {
			return fmt.Errorf("analyze %s: %w", t, err)
		}
	}
	return nil
}
func (postgres) Vacuum(ctx context.Context, db bun.IDB, table string) error {
	if _, err := db.ExecContext(ctx, "VACUUM (SKIP_LOCKED) ?", bun.Ident(table)); err != nil {
		return fmt.Errorf("vacuum %s: %w", table, err)
	}
	return nil
}
func (postgres) SingleWriter() bool { return false }
func (postgres) CanFireAhead() bool { return true }
func (postgres) PastBy(timeExpr, secondsExpr string) string {
	return "(" + timeExpr + " + (" + secondsExpr + ") * INTERVAL '1 second') <= ?"
}

type sqlite struct{}

// SQLite's extended result codes for a violated unique key or primary key.
const (
	sqliteConstraintUnique     = 2067
	sqliteConstraintPrimaryKey = 1555
)

func (sqlite) Name() string                                       { return SQLite }
func (sqlite) Lock(q *bun.SelectQuery, _ string) *bun.SelectQuery { return q }
func (sqlite) JSONText(column, key string) string {
	return "json_extract(" + column + ", '$." + key + "')"
}
func (sqlite) JSONTextParam(column string) string {
	return "json_extract(" + column + ", '$.\"' || ? || '\"')"
}
func (sqlite) TypedArrays() bool { return false }

// Optimize runs PRAGMA optimize, which analyzes only the tables never
// analyzed or whose size changed a lot since, each within analysis_limit
// rows, so calling it often costs little. 0x10002: every table, not only
// those this connection has queried (it is called right after opening).
func (sqlite) Optimize(ctx context.Context, db bun.IDB) error {
	for _, stmt := range []string{"PRAGMA analysis_limit = 1000", "PRAGMA optimize = 0x10002"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("optimize database: %w", err)
		}
	}
	return nil
}
func (sqlite) MigrationTx(ctx context.Context, db *bun.DB, _ int64, fn func(ctx context.Context, tx bun.Tx) error) error {
	// The pragma is a no-op inside a transaction: set it on the
	// connection first.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return fmt.Errorf("migrate: foreign keys off: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON") }()
	return conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return checkForeignKeys(ctx, tx)
	})
}
func (sqlite) SingleWriter() bool                            { return true }
func (sqlite) Vacuum(context.Context, bun.IDB, string) error { return nil }
func (sqlite) CanFireAhead() bool                            { return false }
func (sqlite) PastBy(timeExpr, secondsExpr string) string {
	return "(julianday(" + timeExpr + ") + (" + secondsExpr + ") / 86400.0) <= julianday(?)"
}
func (sqlite) IsUniqueViolation(err error) bool {
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		c := lite.Code()
		return c == sqliteConstraintUnique || c == sqliteConstraintPrimaryKey
	}
	return false
}

// checkForeignKeys fails when any row of the SQLite database breaks a
// foreign key.
func checkForeignKeys(ctx context.Context, tx bun.Tx) error {
	var broken []struct {
		Table  string `bun:"table"`
		RowID  *int64 `bun:"rowid"`
		Parent string `bun:"parent"`
		FKID   int    `bun:"fkid"`
	}
	if err := tx.NewRaw("PRAGMA foreign_key_check").Scan(ctx, &broken); err != nil {
		return fmt.Errorf("migrate: check foreign keys: %w", err)
	}
	if len(broken) > 0 {
		return fmt.Errorf("migrate: %d rows break a foreign key (first: %s → %s)", len(broken), broken[0].Table, broken[0].Parent)
	}
	return nil
}
