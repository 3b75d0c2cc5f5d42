package models

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/tidelinehq/tideline/database"
)

// RingRow is a row of workflow_schedule_rings (migration 0033): a
// schedule's last RecentActionsKept actions packed into one value, newest
// first (ring). It replaces the ten rows a schedule had in
// workflow_schedule_recent_actions (RecentActionRow), which this release
// still reads, for the actions the previous release records during a
// rolling upgrade and for those recorded before it.
//
// An action packs (packAction) as its number n (uvarint), the outcome and
// reason as their code (ringCodes; 0 for a pair without one, followed by
// both as strings), a flags byte, the fire time in Unix microseconds
// (varint) and the occurrence as microseconds before it (varint), then
// what the flags say is stored: the lag when it is not the one FireLagMs
// recomputes, the times' nanoseconds finer than a microsecond, the
// instance ID when it is not the derived one (DerivedInstanceID), the run
// ID as its 16 bytes when it is a ULID in canonical form, else as text. A
// scheduled fire takes ~30 bytes, where its row in the old table took
// ~116 on the page and ~70 in the index.
type RingRow struct {
	bun.BaseModel `bun:"table:workflow_schedule_rings,alias:rg"`

	ScheduleULID string `bun:"schedule_ulid,pk"`
	Ring         ring   `bun:"ring,notnull"`
	// ScheduleID is the schedule's, which derived instance IDs contain;
	// read with the row.
	ScheduleID string `bun:"schedule_id,scanonly"`
}

// ringFormat is the first byte of SQLite's blob of a ring (joinRing): a
// later form of the blob takes another.
const ringFormat = 1

// Flags of a packed action: which optional parts follow its times.
const (
	ringLag      = 1 << iota // the lag, as a varint
	ringNanos                // fired_at's and the occurrence's nanoseconds past the microsecond
	ringInstance             // the instance ID, as a string
	ringRunULID              // the run ID's 16 bytes
	ringRunText              // the run ID, as a string
)

// errRing reports a ring value this release cannot read.
var errRing = errors.New("malformed ring of recent actions")

// packedAction is one action of a ring, still packed: n orders it.
type packedAction struct {
	n     int64
	bytes []byte
}

// packAction packs action n of the schedule scheduleID (which may be ""
// when unknown: the instance ID is then always stored).
func packAction(scheduleID string, n int64, a RecentAction) []byte {
	b := binary.AppendUvarint(nil, uint64(n))
	code, ok := RecentActionCode(a.Outcome, a.Reason)
	if ok {
		b = append(b, byte(code))
	} else {
		b = append(b, 0)
		b = appendString(b, a.Outcome)
		b = appendString(b, a.Reason)
	}
	var flags byte
	if FireLagMs(a.FiredAt, a.OccurrenceTime) != a.FireLagMs {
		flags |= ringLag
	}
	if a.FiredAt.Nanosecond()%1000 != 0 || a.OccurrenceTime.Nanosecond()%1000 != 0 {
		flags |= ringNanos
	}
	if scheduleID == "" || DerivedInstanceID(scheduleID, a.Outcome, a.OccurrenceTime) != a.InstanceID {
		flags |= ringInstance
	}
	// A run ID in ULID's canonical spelling is its 16 bytes; any other
	// (one a test or an older release made) stays text; none is neither.
	var run ulid.ULID
	if id, err := ulid.ParseStrict(a.RunID); err == nil && id.String() == a.RunID {
		flags |= ringRunULID
		run = id
	} else if a.RunID != "" {
		flags |= ringRunText
	}
	b = append(b, flags)
	fired := a.FiredAt.UnixMicro()
	b = binary.AppendVarint(b, fired)
	b = binary.AppendVarint(b, fired-a.OccurrenceTime.UnixMicro())
	if flags&ringLag != 0 {
		b = binary.AppendVarint(b, a.FireLagMs)
	}
	if flags&ringNanos != 0 {
		b = binary.AppendUvarint(b, uint64(a.FiredAt.Nanosecond()%1000))
		b = binary.AppendUvarint(b, uint64(a.OccurrenceTime.Nanosecond()%1000))
	}
	if flags&ringInstance != 0 {
		b = appendString(b, a.InstanceID)
	}
	switch {
	case flags&ringRunULID != 0:
		b = append(b, run[:]...)
	case flags&ringRunText != 0:
		b = appendString(b, a.RunID)
	}
	return b
}

// unpackAction is the action n that packAction packed for scheduleID.
func unpackAction(scheduleID string, b []byte) (int64, RecentAction, error) {
	r := ringReader{b: b}
	n := int64(r.uvarint())
	var a RecentAction
	if code := int(r.byte()); code == 0 {
		a.Outcome, a.Reason = r.string(), r.string()
	} else if code < len(ringCodes) {
		a.Outcome, a.Reason = ringCodes[code].outcome, ringCodes[code].reason
	} else {
		r.err = errRing
	}
	flags := r.byte()
	fired := r.varint()
	occurrence := fired - r.varint()
	a.FiredAt, a.OccurrenceTime = time.UnixMicro(fired).UTC(), time.UnixMicro(occurrence).UTC()
	if flags&ringLag != 0 {
		a.FireLagMs = r.varint()
	}
	if flags&ringNanos != 0 {
		a.FiredAt = a.FiredAt.Add(time.Duration(r.uvarint() % 1000))
		a.OccurrenceTime = a.OccurrenceTime.Add(time.Duration(r.uvarint() % 1000))
	}
	if flags&ringLag == 0 {
		a.FireLagMs = FireLagMs(a.FiredAt, a.OccurrenceTime)
	}
	if flags&ringInstance != 0 {
		a.InstanceID = r.string()
	} else {
		a.InstanceID = DerivedInstanceID(scheduleID, a.Outcome, a.OccurrenceTime)
	}
	switch {
	case flags&ringRunULID != 0:
		var id ulid.ULID
		copy(id[:], r.bytes(len(id)))
		a.RunID = id.String()
	case flags&ringRunText != 0:
		a.RunID = r.string()
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errRing
	}
	return n, a, r.err
}

// splitRing reads SQLite's blob of a ring (joinRing).
func splitRing(blob []byte) (ring, error) {
	if len(blob) == 0 {
		return nil, nil
	}
	if blob[0] != ringFormat {
		return nil, fmt.Errorf("%w: format %d", errRing, blob[0])
	}
	r := ringReader{b: blob[1:]}
	var out ring
	for len(r.b) > 0 && r.err == nil {
		entry := r.bytes(r.length())
		if r.err != nil {
			break
		}
		n, k := binary.Uvarint(entry)
		if k <= 0 {
			return nil, errRing
		}
		out = append(out, packedAction{n: int64(n), bytes: entry})
	}
	return out, r.err
}

// ring is a schedule's packed actions, newest first, as stored: on
// PostgreSQL a bytea[] (read in its text form, {"\\x…",…}), on SQLite one
// blob, ringFormat followed by each action with its length (joinRing).
type ring []packedAction

// newestRing is the newest RecentActionsKept of actions, once each.
func newestRing(actions []packedAction) ring {
	slices.SortStableFunc(actions, func(a, b packedAction) int { return cmpDesc(a.n, b.n) })
	actions = slices.CompactFunc(actions, func(a, b packedAction) bool { return a.n == b.n })
	return ring(actions[:min(len(actions), RecentActionsKept)])
}

// joinRing packs a ring into SQLite's blob: ringFormat, then each action
// with its length (uvarint) before it.
func joinRing(actions ring) []byte {
	out := []byte{ringFormat}
	for _, a := range actions {
		out = binary.AppendUvarint(out, uint64(len(a.bytes)))
		out = append(out, a.bytes...)
	}
	return out
}

// Value is the ring as SQLite stores it (PostgreSQL's are written by
// SaveRecentActions' statement).
func (r ring) Value() (driver.Value, error) { return joinRing(r), nil }

// Scan reads a ring in either database's form.
func (r *ring) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*r = nil
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("%w: a %T", errRing, src)
	}
	var err error
	if len(b) > 0 && b[0] == '{' {
		*r, err = splitArray(b)
	} else {
		*r, err = splitRing(b)
	}
	return err
}

// splitArray reads PostgreSQL's text form of a bytea[]: {} or
// {"\\x0a1b…","\\x…"} (hex output never holds a quote or a comma).
func splitArray(b []byte) (ring, error) {
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, errRing
	}
	body := b[1 : len(b)-1]
	if len(body) == 0 {
		return nil, nil
	}
	var out ring
	for _, elem := range bytes.Split(body, []byte(",")) {
		if !bytes.HasPrefix(elem, []byte(`"\\x`)) || !bytes.HasSuffix(elem, []byte(`"`)) || len(elem) < 5 {
			return nil, errRing
		}
		elem = elem[4 : len(elem)-1]
		entry := make([]byte, hex.DecodedLen(len(elem)))
		if _, err := hex.Decode(entry, elem); err != nil {
			return nil, errRing
		}
		n, k := binary.Uvarint(entry)
		if k <= 0 {
			return nil, errRing
		}
		out = append(out, packedAction{n: int64(n), bytes: entry})
	}
	return out, nil
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// ringReader reads a packed value; its first error sticks, and every read
// after it gives a zero value.
type ringReader struct {
	b   []byte
	err error
}

func (r *ringReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	return advance(r, k, v)
}

func (r *ringReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b)
	return advance(r, k, v)
}

// advance moves r past a varint of k bytes and returns it (k ≤ 0: none could
// be read).
func advance[T uint64 | int64](r *ringReader, k int, v T) T {
	if k <= 0 {
		r.err = errRing
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *ringReader) byte() byte {
	b := r.bytes(1)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func (r *ringReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errRing
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *ringReader) string() string { return string(r.bytes(r.length())) }

// length reads a length prefix: -1 (an error at the next read) for one
// longer than what is left.
func (r *ringReader) length() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		return -1
	}
	return int(n)
}

// SaveRecentActions records actions in their schedules' rings, each kept
// to its newest RecentActionsKept. The caller holds the schedules' row
// locks, as every fire does: only a fire of a schedule writes its ring, and
// its actions are numbered by the schedule's actions_count, so an action
// recorded is always newer than those its ring holds. A row's ScheduleID
// lets its derived instance ID be left out.
//
// On PostgreSQL the ring is a bytea[] of packed actions, newest first, and
// one statement pushes the new ones in front and cuts it to ten (INSERT …
// ON CONFLICT DO UPDATE from typed arrays, see InsertRuns): a fire sends
// its own ~30 bytes, not the ring, and nothing is read. On SQLite, a
// single writer, the ring is one blob (joinRing), read and written back.
func SaveRecentActions(ctx context.Context, db bun.IDB, rows []*RecentActionRow) error {
	if len(rows) == 0 {
		return nil
	}
	if database.Of(db).TypedArrays() {
		ids, numbers, packed := make([]string, len(rows)), make([]int64, len(rows)), make([][]byte, len(rows))
		for i, r := range rows {
			ids[i], numbers[i], packed[i] = r.ScheduleULID, r.N, packAction(r.ScheduleID, r.N, r.Action)
		}
		_, err := db.NewRaw(`INSERT INTO workflow_schedule_rings AS rg (schedule_ulid, ring)
			SELECT a.id, (array_agg(a.packed ORDER BY a.n DESC))[1:?] FROM unnest(?::text[], ?::bigint[], ?::bytea[]) AS a (id, n, packed)
			GROUP BY a.id
			ON CONFLICT (schedule_ulid) DO UPDATE SET ring = (EXCLUDED.ring || rg.ring)[1:?]`,
			RecentActionsKept, pgdialect.Array(ids), pgdialect.Array(numbers), pgdialect.Array(packed), RecentActionsKept).Exec(ctx)
		if err != nil {
			return fmt.Errorf("save recent actions: %w", err)
		}
		return nil
	}
	added := make(map[string][]packedAction, len(rows))
	var ids []string
	for _, r := range rows {
		if _, ok := added[r.ScheduleULID]; !ok {
			ids = append(ids, r.ScheduleULID)
		}
		added[r.ScheduleULID] = append(added[r.ScheduleULID], packedAction{n: r.N, bytes: packAction(r.ScheduleID, r.N, r.Action)})
	}
	var current []RingRow
	if err := db.NewSelect().Model(&current).Column("rg.schedule_ulid", "rg.ring").Where("rg.schedule_ulid IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return fmt.Errorf("read rings of recent actions: %w", err)
	}
	kept := make(map[string]ring, len(current))
	for _, c := range current {
		kept[c.ScheduleULID] = c.Ring
	}
	out := make([]RingRow, len(ids))
	for i, id := range ids {
		out[i] = RingRow{ScheduleULID: id, Ring: newestRing(append(added[id], kept[id]...))}
	}
	if _, err := db.NewInsert().Model(&out).On("CONFLICT (schedule_ulid) DO UPDATE").Set("ring = EXCLUDED.ring").Exec(ctx); err != nil {
		return fmt.Errorf("save recent actions: %w", err)
	}
	return nil
}

// RecentActionsOf reads the rings of the given schedules, each newest
// first, from both tables (migration 0033): one statement each, by primary
// key, with the schedule's ID that derived instance IDs need. Actions are
// merged by their number, the newest RecentActionsKept kept.
func RecentActionsOf(ctx context.Context, db bun.IDB, scheduleULIDs []string) (map[string][]RecentAction, error) {
	out := make(map[string][]RecentAction, len(scheduleULIDs))
	if len(scheduleULIDs) == 0 {
		return out, nil
	}
	var rings []RingRow
	err := db.NewSelect().Model(&rings).ColumnExpr("rg.*").ColumnExpr("s.schedule_id").
		Join("JOIN workflow_schedules AS s ON s.id = rg.schedule_ulid").
		Where("rg.schedule_ulid IN (?)", bun.In(scheduleULIDs)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read recent actions: %w", err)
	}
	var rows []RecentActionRow
	err = db.NewSelect().Model(&rows).ColumnExpr("ra.*").ColumnExpr("s.schedule_id").
		Join("JOIN workflow_schedules AS s ON s.id = ra.schedule_ulid").
		Where("ra.schedule_ulid IN (?)", bun.In(scheduleULIDs)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read recent actions: %w", err)
	}
	type numbered struct {
		n int64
		a RecentAction
	}
	all := make(map[string][]numbered, len(scheduleULIDs))
	for _, rg := range rings {
		for _, p := range rg.Ring {
			n, a, err := unpackAction(rg.ScheduleID, p.bytes)
			if err != nil {
				return nil, fmt.Errorf("ring of schedule %s: %w", rg.ScheduleULID, err)
			}
			all[rg.ScheduleULID] = append(all[rg.ScheduleULID], numbered{n, a})
		}
	}
	// Rows of the ten-row ring come after the ring's actions, so that the
	// stable sort keeps the ring's of a number both hold (none should).
	for i := range rows {
		r := &rows[i]
		all[r.ScheduleULID] = append(all[r.ScheduleULID], numbered{r.N, r.decode()})
	}
	for id, list := range all {
		slices.SortStableFunc(list, func(a, b numbered) int { return cmpDesc(a.n, b.n) })
		list = slices.CompactFunc(list, func(a, b numbered) bool { return a.n == b.n })
		actions := make([]RecentAction, 0, min(len(list), RecentActionsKept))
		for _, x := range list[:min(len(list), RecentActionsKept)] {
			actions = append(actions, x.a)
		}
		out[id] = actions
	}
	return out, nil
}

// VacuumRecentActions reclaims the rings' dead row versions. A fire
// rewrites the ring of each schedule it fires; the fill factor keeps the
// new version on its page, and pruning reclaims the old one there, but
// where a page's versions outran its room (a batch catching up, a
// snapshot held across several fires) the new ones went elsewhere with
// new index entries, which only a vacuum frees for reuse — and where
// autovacuum is off nothing else does. Not inside a transaction. The
// ten-row ring of the previous release is no longer written by this one.
func VacuumRecentActions(ctx context.Context, db bun.IDB) error {
	return database.Of(db).Vacuum(ctx, db, "workflow_schedule_rings")
}
