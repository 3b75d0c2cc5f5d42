// Package migrations applies Tideline's embedded SQL schema. Each dialect has
// its own numbered files under sql/<dialect>/; a file is applied once, in
// order, inside one transaction together with its bookkeeping row.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

//go:embed sql
var files embed.FS

// lockKey is the PostgreSQL advisory lock that serialises migrations from
// replicas starting at the same moment (an arbitrary constant: "tideline").
const lockKey = 0x7469_6465_6c69_6e65

// Migration is one embedded SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the migrations of db's dialect in version order.
func Load(db bun.IDB) ([]Migration, error) {
	dir := "sql/" + database.Of(db).Name()
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		version, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("read migrations: %s does not start with a version number", name)
		}
		body, err := fs.ReadFile(files, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: version, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	// Versions are the bookkeeping key: two files with one number (branches
	// merged without renumbering) would silently skip one of them.
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("read migrations: %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// Apply brings the schema up to date and returns the names it applied. It is
// safe to call from several processes at once: PostgreSQL serialises them on
// an advisory lock held for the transaction, SQLite on its write lock.
func Apply(ctx context.Context, db *bun.DB) ([]string, error) {
	return applyUpTo(ctx, db, 0)
}

// applyUpTo applies the migrations up to version upTo (all when 0): an
// upgrade test builds an older schema with it.
func applyUpTo(ctx context.Context, db *bun.DB, upTo int) ([]string, error) {
	all, err := Load(db)
	if err != nil {
		return nil, err
	}
	var applied []string
	err = database.Of(db).MigrationTx(ctx, db, int64(lockKey), func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS tideline_migrations (
			version integer PRIMARY KEY,
			name text NOT NULL,
			applied_at text NOT NULL)`); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		done := map[int]bool{}
		var versions []int
		if err := tx.NewSelect().Table("tideline_migrations").Column("version").Scan(ctx, &versions); err != nil {
			return fmt.Errorf("read applied migrations: %w", err)
		}
		for _, v := range versions {
			done[v] = true
		}
		for _, m := range all {
			if done[m.Version] || (upTo > 0 && m.Version > upTo) {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO tideline_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
				return fmt.Errorf("record migration %s: %w", m.Name, err)
			}
			applied = append(applied, m.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// Pending returns how many embedded migrations the database has not applied
// yet; /readyz uses it to refuse traffic before the schema is in place.
func Pending(ctx context.Context, db bun.IDB) (int, error) {
	all, err := Load(db)
	if err != nil {
		return 0, err
	}
	var versions []int
	if err := db.NewSelect().Table("tideline_migrations").Column("version").Scan(ctx, &versions); err != nil {
		return len(all), fmt.Errorf("read applied migrations: %w", err)
	}
	done := map[int]bool{}
	for _, v := range versions {
		done[v] = true
	}
	pending := 0
	for _, m := range all {
		if !done[m.Version] {
			pending++
		}
	}
	return pending, nil
}
