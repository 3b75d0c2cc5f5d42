package database_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// Unavailable tells a database that went away from every other failure,
// with the errors the drivers really return (no hand-made error values
// except where a wrapper is the point).
func TestUnavailablePostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.Postgres(t)
	d := database.Of(db)

	t.Run("nothing listens", func(t *testing.T) {
		_, err := database.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
		require.Error(t, err)
		require.True(t, database.Unavailable(err), "dial refused: %v", err)
		require.True(t, d.Unavailable(err))
	})
	t.Run("backend terminated between statements", func(t *testing.T) {
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()
		terminate(t, db, conn)
		_, err = conn.ExecContext(ctx, "SELECT 1")
		require.Error(t, err)
		require.True(t, database.Unavailable(err), "statement on a terminated backend: %v", err)
		// The pool replaces the dead connection by itself.
		require.NoError(t, db.PingContext(ctx))
	})
	t.Run("backend terminated inside a transaction", func(t *testing.T) {
		var stmtErr error
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var pid int
			if err := tx.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid); err != nil {
				return err
			}
			if _, err := db.ExecContext(ctx, "SELECT pg_terminate_backend(?)", pid); err != nil {
				return err
			}
			waitGone(t, db, pid)
			_, stmtErr = tx.ExecContext(ctx, "SELECT 1")
			return fmt.Errorf("save things: %w", stmtErr)
		})
		require.Error(t, err)
		require.True(t, database.Unavailable(stmtErr), "statement: %v", stmtErr)
		require.True(t, database.Unavailable(err), "wrapped by RunInTx and the caller: %v", err)
	})
	t.Run("read-only transaction (a write that reached a standby)", func(t *testing.T) {
		err := db.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO workflow_schedules (id) VALUES ('x')")
			return err
		})
		require.Error(t, err)
		require.True(t, database.Unavailable(err), "25006: %v", err)
	})
	t.Run("errors of the request itself", func(t *testing.T) {
		_, err := db.ExecContext(ctx, "SELEC 1")
		require.Error(t, err)
		require.False(t, database.Unavailable(err), "syntax error: %v", err)

		_, err = db.ExecContext(ctx, "CREATE TABLE uniq (id text PRIMARY KEY)")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "INSERT INTO uniq VALUES ('a'), ('a')")
		require.True(t, d.IsUniqueViolation(err))
		require.False(t, database.Unavailable(err), "unique violation: %v", err)

		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, err = db.ExecContext(cancelled, "SELECT 1")
		require.Error(t, err)
		require.False(t, database.Unavailable(err), "the caller's cancellation: %v", err)

		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err = db.ExecContext(short, "SELECT pg_sleep(5)")
		require.Error(t, err)
		require.False(t, database.Unavailable(err), "the caller's deadline: %v", err)

		err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL statement_timeout = '20ms'"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "SELECT pg_sleep(5)")
			return err
		})
		require.Error(t, err)
		require.False(t, database.Unavailable(err), "statement_timeout (57014): %v", err)

		require.False(t, database.Unavailable(errors.New("connection refused")), "text alone is not enough")
		// The shape pgx returned when the server died while a result was
		// read (TestFailover): the socket's error, bare.
		require.True(t, database.Unavailable(fmt.Errorf("claim pending runs: %w", io.ErrUnexpectedEOF)))
		require.False(t, database.Unavailable(nil))
	})
}

// SQLite is never unavailable: "database is locked" is contention.
func TestUnavailableSQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "busy.db")
	open := func() *sql.DB {
		db, err := sql.Open(sqliteshim.ShimName, "file:"+path+"?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)&_txlock=immediate")
		require.NoError(t, err)
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	a, b := open(), open()
	_, err := a.ExecContext(ctx, "CREATE TABLE t (id int)")
	require.NoError(t, err)
	tx, err := a.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = b.BeginTx(ctx, nil)
	require.Error(t, err, "a second writer while the first holds the lock")
	require.Contains(t, err.Error(), "locked")
	require.False(t, database.Unavailable(err), "SQLITE_BUSY: %v", err)

	lite := dbtest.SQLite(t)
	require.False(t, database.Of(lite).Unavailable(err))
	_, err = lite.ExecContext(ctx, "SELEC 1")
	require.False(t, database.Unavailable(err), "syntax error: %v", err)
}

// terminate kills conn's backend from another connection and waits until
// it is gone.
func terminate(t *testing.T, db *bun.DB, conn bun.Conn) {
	t.Helper()
	var pid int
	require.NoError(t, conn.NewRaw("SELECT pg_backend_pid()").Scan(t.Context(), &pid))
	_, err := db.ExecContext(t.Context(), "SELECT pg_terminate_backend(?)", pid)
	require.NoError(t, err)
	waitGone(t, db, pid)
}

func waitGone(t *testing.T, db *bun.DB, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := db.NewRaw("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid).Scan(t.Context(), &n)
		return err == nil && n == 0
	}, 10*time.Second, 10*time.Millisecond, "backend %d still there", pid)
}
