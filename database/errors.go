package database

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLite's extended result codes for a violated unique key or primary key.
const (
	sqliteConstraintUnique     = 2067
	sqliteConstraintPrimaryKey = 1555
)

// IsUniqueViolation reports whether err is a unique-key violation, by the
// driver's error code on either database (not by matching message text,
// which drivers are free to reword).
func IsUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		c := lite.Code()
		return c == sqliteConstraintUnique || c == sqliteConstraintPrimaryKey
	}
	return false
}
