package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// Footprint is what Tideline's tables hold at one moment: their size on
// disk with indexes and TOAST (PostgreSQL's pg_total_relation_size; SQLite's
// pages), their rows, and on PostgreSQL the rows ever inserted and updated
// (pg_stat_user_tables). The difference of two footprints over a run,
// divided by its fires, is what one fire costs.
type Footprint struct {
	Bytes    int64
	Rows     int64
	Inserted int64 // -1 where the database does not count it (SQLite)
	Updated  int64 // -1 where the database does not count it (SQLite)
	// Relations is the size of each table, index and TOAST table by name
	// (PostgreSQL only; nil on SQLite), so a run's growth can be told
	// apart relation by relation.
	Relations map[string]int64
}

// Sub is the growth from before to f.
func (f Footprint) Sub(before Footprint) Footprint {
	d := Footprint{Bytes: f.Bytes - before.Bytes, Rows: f.Rows - before.Rows, Inserted: -1, Updated: -1}
	if f.Inserted >= 0 && before.Inserted >= 0 {
		d.Inserted, d.Updated = f.Inserted-before.Inserted, f.Updated-before.Updated
	}
	if f.Relations != nil {
		d.Relations = map[string]int64{}
		for name, size := range f.Relations {
			if grew := size - before.Relations[name]; grew != 0 {
				d.Relations[name] = grew
			}
		}
	}
	return d
}

// Measure reads the footprint of every table in the database's current
// schema (PostgreSQL) or file (SQLite).
func Measure(ctx context.Context, db bun.IDB) (Footprint, error) {
	var tables []string
	f := Footprint{Inserted: -1, Updated: -1}
	if database.Of(db).Name() == database.PostgreSQL {
		err := db.NewRaw(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c
			JOIN pg_namespace AS n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`).Scan(ctx, &f.Bytes)
		if err != nil {
			return f, fmt.Errorf("measure table sizes: %w", err)
		}
		err = db.NewRaw(`SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables
			WHERE schemaname = current_schema()`).Scan(ctx, &f.Inserted, &f.Updated)
		if err != nil {
			return f, fmt.Errorf("read table statistics: %w", err)
		}
		if err := db.NewRaw(`SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind = 'r'`).Scan(ctx, &tables); err != nil {
			return f, fmt.Errorf("list tables: %w", err)
		}
		// Each relation on its own, a table's TOAST under the table's
		// name with " (toast)" added.
		var rels []struct {
			Name string `bun:"name"`
			Size int64  `bun:"size"`
		}
		if err := db.NewRaw(`SELECT c.relname AS name, pg_relation_size(c.oid) AS size FROM pg_class AS c
			JOIN pg_namespace AS n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'i')
			UNION ALL
			SELECT c.relname || ' (toast)', pg_total_relation_size(c.reltoastrelid) FROM pg_class AS c
			JOIN pg_namespace AS n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.reltoastrelid <> 0`).Scan(ctx, &rels); err != nil {
			return f, fmt.Errorf("measure relation sizes: %w", err)
		}
		f.Relations = make(map[string]int64, len(rels))
		for _, r := range rels {
			f.Relations[r.Name] = r.Size
		}
	} else {
		var pages, pageSize int64
		if err := db.NewRaw("PRAGMA page_count").Scan(ctx, &pages); err != nil {
			return f, fmt.Errorf("measure database size: %w", err)
		}
		if err := db.NewRaw("PRAGMA page_size").Scan(ctx, &pageSize); err != nil {
			return f, fmt.Errorf("measure database size: %w", err)
		}
		f.Bytes = pages * pageSize
		if err := db.NewRaw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`).Scan(ctx, &tables); err != nil {
			return f, fmt.Errorf("list tables: %w", err)
		}
	}
	for _, t := range tables {
		var n int64
		if err := db.NewRaw("SELECT count(*) FROM ?", bun.Ident(t)).Scan(ctx, &n); err != nil {
			return f, fmt.Errorf("count rows of %s: %w", t, err)
		}
		f.Rows += n
	}
	return f, nil
}

// MeasureAfter is Measure once PostgreSQL's statistics have caught up with
// the rows written since before: each backend reports its counts at most
// once a second, and an idle one within ten, so a footprint taken at once
// would miss the last transactions' inserts and updates. It gives up after
// 15 s and returns what it has.
func MeasureAfter(ctx context.Context, db bun.IDB, before Footprint) (Footprint, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		f, err := Measure(ctx, db)
		if err != nil || f.Inserted < 0 || f.Inserted-before.Inserted >= f.Rows-before.Rows || time.Now().After(deadline) {
			return f, err
		}
		if !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			return f, ctx.Err()
		}
	}
}

// settleFor is how long MeasureSettled waits: PostgreSQL has every backend
// report its row counts when it goes idle, at the latest ten seconds after
// its last transaction.
const settleFor = 10*time.Second + 500*time.Millisecond

// MeasureSettled is Measure once the row statistics of every connection
// that wrote a moment ago have arrived; counts arriving during a run would
// be charged to its fires.
func MeasureSettled(ctx context.Context, db bun.IDB) (Footprint, error) {
	if !sleepUntil(ctx, time.Now().Add(settle(db))) {
		return Footprint{}, ctx.Err()
	}
	return Measure(ctx, db)
}

// settle is how long MeasureSettled waits on db: SQLite counts nothing.
func settle(db bun.IDB) time.Duration {
	if database.Of(db).Name() == database.PostgreSQL {
		return settleFor
	}
	return 0
}
