package database_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// A duplicate key is told apart from other errors by the driver's code on
// both databases.
func TestIsUniqueViolation(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := t.Context()
		_, err := db.ExecContext(ctx, "CREATE TABLE dup (id text PRIMARY KEY, name text UNIQUE)")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "INSERT INTO dup (id, name) VALUES ('a', 'x')")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "INSERT INTO dup (id, name) VALUES ('b', 'x')")
		require.True(t, database.IsUniqueViolation(err), "unique column: %v", err)
		_, err = db.ExecContext(ctx, "INSERT INTO dup (id, name) VALUES ('a', 'y')")
		require.True(t, database.IsUniqueViolation(err), "primary key: %v", err)
		_, err = db.ExecContext(ctx, "INSERT INTO nosuchtable (id) VALUES ('a')")
		require.Error(t, err)
		require.False(t, database.IsUniqueViolation(err), "another error: %v", err)
		require.False(t, database.IsUniqueViolation(errors.New("UNIQUE constraint failed")), "text alone is not enough")
	})
}
