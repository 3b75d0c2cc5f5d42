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
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
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
		if err == nil || IsPostgres(db) || !strings.Contains(err.Error(), "database is locked") {
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
	sqldb := stdlib.OpenDB(*cfg)
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

// IsPostgres reports whether db speaks PostgreSQL.
func IsPostgres(db bun.IDB) bool {
	return db.Dialect().Name() == dialect.PG
}

// Lock adds a row-locking clause ("UPDATE", "UPDATE OF s SKIP LOCKED")
// where the database has row locks. SQLite has a single writer (and
// _txlock=immediate), so a plain SELECT inside the transaction is already
// exclusive there. Every row lock of the product goes through here.
func Lock(q *bun.SelectQuery, clause string) *bun.SelectQuery {
	if IsPostgres(q.DB()) {
		return q.For(clause)
	}
	return q
}

// JSONText is the dialect's expression for a top-level JSON string field of
// column. key must be a constant identifier (it is interpolated).
func JSONText(db bun.IDB, column, key string) string {
	if IsPostgres(db) {
		return column + "->>'" + key + "'"
	}
	return "json_extract(" + column + ", '$." + key + "')"
}

// JSONTextParam is JSONText with the key bound as the query's next argument.
func JSONTextParam(db bun.IDB, column string) string {
	if IsPostgres(db) {
		return column + "->>?"
	}
	return "json_extract(" + column + ", '$.\"' || ? || '\"')"
}

// JSONWithFields is the dialect's expression for the JSON object in column
// with the top-level keys set to the given column expressions, in the
// order of keys (SQLite appends new keys in that order; PostgreSQL's jsonb
// orders keys itself). keys and expressions must be constants.
func JSONWithFields(db bun.IDB, column string, keys []string, exprs map[string]string) string {
	var b strings.Builder
	if IsPostgres(db) {
		b.WriteString("(" + column + " || jsonb_build_object(")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("'" + k + "', " + exprs[k])
		}
		b.WriteString("))")
		return b.String()
	}
	b.WriteString("json_set(" + column)
	for _, k := range keys {
		b.WriteString(", '$." + k + "', " + exprs[k])
	}
	b.WriteString(")")
	return b.String()
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
