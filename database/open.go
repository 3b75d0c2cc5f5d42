// Package database opens Tideline's database — PostgreSQL in production, an
// embedded SQLite file by default — and hides the few places where the two
// dialects need different SQL.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// DefaultSQLiteFile is used when no database URL is configured, so that
// `tideline serve` works on a bare machine.
const DefaultSQLiteFile = "tideline.db"

// Open connects to the database named by rawURL and checks that it answers:
//   - "postgres://…" or "postgresql://…": PostgreSQL through pgx;
//   - "sqlite:PATH" or "": an embedded SQLite file (DefaultSQLiteFile when empty).
func Open(ctx context.Context, rawURL string) (*bun.DB, error) {
	var (
		db  *bun.DB
		err error
	)
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		db, err = openPostgres(rawURL)
	case rawURL == "":
		db, err = openSQLite(DefaultSQLiteFile)
	case strings.HasPrefix(rawURL, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite:"), "//")
		if path == "" {
			return nil, errors.New("open database: sqlite: needs a file path, e.g. sqlite:./tideline.db")
		}
		db, err = openSQLite(path)
	default:
		return nil, fmt.Errorf("open database: unsupported URL %q: use postgres://… or sqlite:PATH", redact(rawURL))
	}
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := ping(pingCtx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open database %s: %w", redact(rawURL), err)
	}
	return db, nil
}

// ping opens the first connection. On SQLite that connection switches the
// file to WAL, and when several processes open a new file at once SQLite
// answers some of them "database is locked" at once instead of waiting (a
// wait could deadlock), busy_timeout notwithstanding; trying again after
// the winner has switched succeeds.
func ping(ctx context.Context, db *bun.DB) error {
	for {
		err := db.PingContext(ctx)
		if err == nil || !Of(db).SingleWriter() || !strings.Contains(err.Error(), "database is locked") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func openPostgres(rawURL string) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database: parse PostgreSQL URL %s: %w", redact(rawURL), err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	// bun writes argument values into the SQL text itself, so every query
	// text is unique: pgx's default (prepare and cache each statement) would
	// add a round trip and fill the server's statement cache for nothing.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	// A statement whose context ends (a shutdown, a worker hanging up on
	// its long poll) is stopped by a deadline on its connection, not by
	// pgx's default of a CancelRequest at once: the connection is dropped
	// instead of reused, and pgx still sends one CancelRequest as it lets
	// the connection go. Closing the database waits for those (cancels.go:
	// PgBouncer 1.18 exits when a cancel client vanishes mid-request).
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	inFlight := &cancels{}
	cfg.DialFunc = inFlight.wrap(cfg.DialFunc)
	sqldb := sql.OpenDB(drainingConnector{Connector: stdlib.GetConnector(*cfg), cancels: inFlight})
	sqldb.SetMaxOpenConns(20)
	sqldb.SetMaxIdleConns(10)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	return bun.NewDB(sqldb, pgdialect.New()), nil
}

func openSQLite(path string) (*bun.DB, error) {
	// _txlock=immediate takes the write lock at BEGIN: a read-then-write
	// transaction can then never fail halfway with SQLITE_BUSY.
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	sqldb, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: sqlite %s: %w", path, err)
	}
	// SQLite has one writer; one connection serialises everything in-process
	// instead of surfacing "database is locked" to callers.
	sqldb.SetMaxOpenConns(1)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// redact hides a password in a connection URL before it reaches a log or an error.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// SQLitePath is the file a SQLite URL ("" or "sqlite:PATH") names; ok is
// false for PostgreSQL URLs.
func SQLitePath(rawURL string) (path string, ok bool) {
	switch {
	case rawURL == "":
		return DefaultSQLiteFile, true
	case strings.HasPrefix(rawURL, "sqlite:"):
		return strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite:"), "//"), true
	}
	return "", false
}
