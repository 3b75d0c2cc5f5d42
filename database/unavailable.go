package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says the database could not be reached
// or dropped the connection the statement was on — a failure that says
// nothing about the request and that the same request, sent again a moment
// later, may not meet (a restart, a failover, a killed backend, a pooler
// that lost its server). The API answers it 503 database_unavailable with
// Retry-After (web/errors.go) and the loop logs it once as a lost
// connection; any other error keeps its own meaning.
//
// It asks every dialect, since an error carries its driver with it and
// callers (the error handler) need not know which database is behind.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	return postgres{}.Unavailable(err) || sqlite{}.Unavailable(err)
}

// pgUnavailableCodes are the SQLSTATEs of a server going away or refusing
// to serve for now, beyond class 08 (connection exception), which counts
// whole:
//   - 57P01 admin_shutdown (pg_terminate_backend, a fast or immediate
//     shutdown), 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up,
//     shutting down, in recovery);
//   - 25006 read_only_sql_transaction: a write reached a standby — a
//     connection opened before a failover demoted its server, or a pooler
//     still pointing at the old primary;
//   - 53300 too_many_connections: the server (or PgBouncer's
//     max_client_conn) is full for now.
var pgUnavailableCodes = map[string]bool{
	"57P01": true, "57P02": true, "57P03": true, "25006": true, "53300": true,
}

// Unavailable (PostgreSQL through pgx): a failed connection attempt (dial
// refused, no server accepting writes for target_session_attrs, the
// server's own refusal while starting), one of pgUnavailableCodes or class
// 08, a connection database/sql or pgx already knows is dead, and an I/O
// failure inside pgx on the connection's socket (reset, unexpected EOF).
// A statement timeout or the caller's own cancellation is not: the database
// answered, or the caller left.
func (postgres) Unavailable(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "08") || pgUnavailableCodes[pg.Code]
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false
	}
	// pgx's own I/O failures ("failed to receive message: unexpected EOF",
	// "write failed: broken pipe") carry SafeToRetry; nothing outside pgx
	// does, so an HTTP error of a notifier is never taken for the database.
	var fromPgx interface{ SafeToRetry() bool }
	if errors.As(err, &fromPgx) {
		return true
	}
	// Some paths of pgx hand the socket's error back bare: a result being
	// read when the server died ended "claim pending runs: unexpected EOF"
	// (TestFailover), and a reset reads as a *net.OpError. What reaches
	// the error handler untyped came from the database (request decoding
	// and notifier posts report typed errors of their own).
	var opErr *net.OpError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &opErr)
}

// Unavailable (SQLite): never. The database is a local file; "database is
// locked" (SQLITE_BUSY) after busy_timeout is contention, not an outage,
// and retrying it blindly is what busy_timeout already did.
func (sqlite) Unavailable(error) bool { return false }
