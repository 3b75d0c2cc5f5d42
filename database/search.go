package database

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
)

// sideTableDriveLimit is how many schedules a label or a search may match
// for SQLite to start a page from the side table (migration 0031) rather
// than walk the namespace's key. SQLite's planner cannot weigh the two: an
// IN (subquery) on an indexed column is always taken as the driver, and
// the subquery is read whole before the first row. For a label on 100 of
// 100,000 schedules that is the cure (a page in ~3 ms instead of a 40–70 ms
// walk; BenchmarkListFiltered); for a label on half of them it reads 50,000
// entries for a page the walk finds in its first hundred rows (25 ms
// against 0.5 ms), and in the health order it overrides the rank's own
// small index (70–110 ms against 0.2 ms). So the side table is first asked
// whether the label (or text) is rare — at most this many entries read —
// and only a rare one drives; a common one is checked row by row as the
// walk meets it (from the row's JSON), which finds a page within a few
// thousand rows in the ID order.
const sideTableDriveLimit = 1000

// ScheduleLabel on SQLite: workflow_schedule_labels holds each schedule's
// string-valued labels, kept by triggers (migration 0031). A rare label
// drives the page (IN on the (namespace, schedule_id) key, which also
// keeps the ID order without a sort); a common one is read from each
// row's JSON as the walk meets it.
func (sqlite) ScheduleLabel(ctx context.Context, db bun.IDB, namespace, key, value string) (string, []any, error) {
	args := []any{namespace, key, value}
	var n int
	if err := db.NewRaw(`SELECT count(*) FROM (SELECT 1 FROM workflow_schedule_labels
		WHERE namespace = ? AND label_key = ? AND label_value = ? LIMIT ?)`, namespace, key, value, sideTableDriveLimit+1).
		Scan(ctx, &n); err != nil {
		return "", nil, fmt.Errorf("count label: %w", err)
	}
	if n <= sideTableDriveLimit {
		return `s.schedule_id IN (SELECT l.schedule_id FROM workflow_schedule_labels AS l
			WHERE l.namespace = ? AND l.label_key = ? AND l.label_value = ?)`, args, nil
	}
	// The row's own labels, as before the side table: in the next-fire
	// order the walk meets every schedule of the namespace, and a probe of
	// the side table per row cost more than reading the row's JSON (a page
	// of a label on half of 100,000: 276 ms against 115 ms). json_type
	// keeps the meaning to string values, as the side table and
	// PostgreSQL's containment have it.
	path := "'$.\"' || ? || '\"'"
	return "(json_type(s.labels, " + path + ") = 'text' AND json_extract(s.labels, " + path + ") = ?)", []any{key, key, value}, nil
}

// ScheduleTextCandidates on SQLite: workflow_schedule_search is an FTS5
// table with the trigram tokenizer over each schedule's ID, note and
// workflow type (migration 0031), which finds any substring of three
// characters or more. Its case folding is Unicode's where SQLite's LOWER
// and LIKE fold ASCII only, so it may find more than the LIKE ("école"
// finds "École"); the caller's LIKE decides, on the candidates only.
// A shorter text has no trigram to look up, and a common one (more than
// sideTableDriveLimit candidates) is cheaper to meet on the walk: both
// keep the LIKE alone, as before.
func (sqlite) ScheduleTextCandidates(ctx context.Context, db bun.IDB, lowered string) (string, []any, error) {
	if utf8.RuneCountInString(lowered) < 3 || strings.ContainsRune(lowered, 0) || !utf8.ValidString(lowered) {
		return "", nil, nil
	}
	// One FTS5 string: its trigrams in a row, a phrase ("" is a quote).
	phrase := `"` + strings.ReplaceAll(lowered, `"`, `""`) + `"`
	var n int
	if err := db.NewRaw(`SELECT count(*) FROM (SELECT 1 FROM workflow_schedule_search
		WHERE workflow_schedule_search MATCH ? LIMIT ?)`, phrase, sideTableDriveLimit+1).Scan(ctx, &n); err != nil {
		return "", nil, fmt.Errorf("count search: %w", err)
	}
	if n > sideTableDriveLimit {
		return "", nil, nil
	}
	return `s.id IN (SELECT d.schedule_ulid FROM workflow_schedule_search_docs AS d
		WHERE d.doc IN (SELECT rowid FROM workflow_schedule_search WHERE workflow_schedule_search MATCH ?))`, []any{phrase}, nil
}
