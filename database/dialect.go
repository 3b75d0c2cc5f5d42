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
	// JSONArrayHead is the expression for the first n elements of the JSON
	// array head followed by the elements of tail.
	JSONArrayHead(head, tail string, n int) string
	// IsUniqueViolation reports whether err is a unique-key violation, by
	// the driver's error code (not by matching message text, which drivers
	// are free to reword).
	IsUniqueViolation(err error) bool
	// LockForMigration serialises schema changes of several processes for
	// the rest of tx (SQLite's write lock already does).
	LockForMigration(ctx context.Context, tx bun.Tx, key int64) error
	// SingleWriter reports whether the database has one connection and one
	// writer (SQLite): no pool to size, writers wait on a file lock.
	SingleWriter() bool
	// CanFireAhead reports whether fires for a coming instant may be
	// written ahead in an open transaction while other transactions go on
	// (scheduling/prepare.go). SQLite's one writer would block everything
	// else for that long.
	CanFireAhead() bool
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
func (postgres) JSONArrayHead(head, tail string, n int) string {
	return fmt.Sprintf("jsonb_path_query_array(%s || %s, '$[0 to %d]')", head, tail, n-1)
}
func (postgres) IsUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}
func (postgres) LockForMigration(ctx context.Context, tx bun.Tx, key int64) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", key); err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	return nil
}
func (postgres) SingleWriter() bool { return false }
func (postgres) CanFireAhead() bool { return true }

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
func (sqlite) LockForMigration(context.Context, bun.Tx, int64) error { return nil }
func (sqlite) SingleWriter() bool                                    { return true }
func (sqlite) CanFireAhead() bool                                    { return false }
func (sqlite) JSONArrayHead(head, tail string, n int) string {
	return fmt.Sprintf(`(SELECT json_group_array(json(value)) FROM (
		SELECT value FROM (SELECT key AS k, value FROM json_each(%s)
			UNION ALL SELECT 1000000 + key, value FROM json_each(%s))
		ORDER BY k LIMIT %d))`, head, tail, n)
}
func (sqlite) IsUniqueViolation(err error) bool {
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		c := lite.Code()
		return c == sqliteConstraintUnique || c == sqliteConstraintPrimaryKey
	}
	return false
}
