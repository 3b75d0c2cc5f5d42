package migrations_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// insertOlder writes model (a row, or a slice of rows, of today's models)
// into db's schema as it is now — an older version, in an upgrade test —
// with the columns both have: a column a later migration adds to the
// table, and to the model, is left out, so adding one changes no upgrade
// test.
func insertOlder(t *testing.T, db bun.IDB, model any) {
	t.Helper()
	ctx := context.Background()
	typ := reflect.TypeOf(model)
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	table := db.Dialect().Tables().Get(typ)
	var have []string
	query := `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`
	if database.Of(db).Name() == database.SQLite {
		query = `SELECT name FROM pragma_table_info(?)`
	}
	require.NoError(t, db.NewRaw(query, table.Name).Scan(ctx, &have))
	require.NotEmpty(t, have, "table %s", table.Name)
	var cols []string
	for _, f := range table.Fields {
		for _, c := range have {
			if c == f.Name {
				cols = append(cols, c)
			}
		}
	}
	_, err := db.NewInsert().Model(model).Column(cols...).Exec(ctx)
	require.NoError(t, err, "insert into %s", table.Name)
}
