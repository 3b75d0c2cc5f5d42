package models

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"
)

var ringT0 = time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)

// ringCases are actions of every shape a ring stores: derived or kept
// instance IDs, run IDs as ULIDs, text or none, outcome pairs with and
// without a code, a lag that is not the recomputed one, times finer than
// a microsecond, and times before 1970.
func ringCases(scheduleID string) []RecentAction {
	return []RecentAction{
		{Outcome: "scheduled", InstanceID: ScheduledInstanceID(scheduleID, ringT0), RunID: "01KJ6Y3W4ZQ5V8XG1H2N3P4R5S",
			FiredAt: ringT0.Add(12 * time.Millisecond), OccurrenceTime: ringT0, FireLagMs: 12},
		{Outcome: "backfilled", InstanceID: BackfillInstanceID(scheduleID, ringT0), RunID: "run-text-id",
			FiredAt: ringT0.Add(time.Hour), OccurrenceTime: ringT0, FireLagMs: 3_600_000},
		{Outcome: "skipped", Reason: "overlap_policy_skip", InstanceID: ScheduledInstanceID(scheduleID, ringT0.Add(time.Minute)),
			FiredAt: ringT0.Add(time.Minute - time.Second), OccurrenceTime: ringT0.Add(time.Minute), FireLagMs: -1000},
		{Outcome: "manual", InstanceID: "01KJ6Y3W4ZQ5V8XG1H2N3P4R5T", RunID: "01KJ6Y3W4ZQ5V8XG1H2N3P4R5V",
			FiredAt: ringT0.Add(1234567), OccurrenceTime: ringT0.Add(999), FireLagMs: 1},
		{Outcome: "scheduled", InstanceID: ScheduledInstanceID(scheduleID, ringT0) + ":jittered", RunID: "",
			FiredAt: ringT0, OccurrenceTime: ringT0, FireLagMs: 77},
		{Outcome: "future_outcome", Reason: "reason ünïcode", InstanceID: "",
			FiredAt: time.Date(1969, 7, 20, 20, 17, 40, 500, time.UTC), OccurrenceTime: time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC), FireLagMs: 40000},
		{Outcome: "buffered", InstanceID: ScheduledInstanceID(scheduleID, ringT0), FiredAt: ringT0, OccurrenceTime: ringT0},
		// A run ID that parses as a ULID but is not in its canonical spelling.
		{Outcome: "drained", InstanceID: "x", RunID: "01kj6y3w4zq5v8xg1h2n3p4r5s", FiredAt: ringT0, OccurrenceTime: ringT0},
	}
}

func TestPackedActionsReadBackExactly(t *testing.T) {
	for _, scheduleID := range []string{"daily-report", ""} {
		for i, a := range ringCases("daily-report") {
			packed := packAction(scheduleID, int64(1000+i), a)
			n, got, err := unpackAction("daily-report", packed)
			if err != nil {
				t.Fatalf("case %d (schedule ID %q): %v", i, scheduleID, err)
			}
			if n != int64(1000+i) {
				t.Errorf("case %d: n = %d", i, n)
			}
			if !got.FiredAt.Equal(a.FiredAt) || !got.OccurrenceTime.Equal(a.OccurrenceTime) {
				t.Errorf("case %d: times %v %v, want %v %v", i, got.FiredAt, got.OccurrenceTime, a.FiredAt, a.OccurrenceTime)
			}
			got.FiredAt, got.OccurrenceTime = a.FiredAt, a.OccurrenceTime
			if got != a {
				t.Errorf("case %d (schedule ID %q):\n got %+v\nwant %+v", i, scheduleID, got, a)
			}
		}
	}
}

// A scheduled fire — the action of almost every ring — packs into about
// thirty bytes: what a read can recompute is left out.
func TestAScheduledFirePacksSmall(t *testing.T) {
	a := ringCases("daily-report")[0]
	if n := len(packAction("daily-report", 123456, a)); n > 32 {
		t.Fatalf("a scheduled fire packs into %d bytes", n)
	}
	if n := len(packAction("", 123456, a)); n <= 32 {
		t.Fatalf("without the schedule's ID the instance ID must be kept, but the action packs into %d bytes", n)
	}
}

func TestJoinRingKeepsTheNewestTenOnce(t *testing.T) {
	var actions []packedAction
	for n := int64(0); n < 25; n++ {
		actions = append(actions, packedAction{n: n, bytes: packAction("s", n, ringCases("s")[n%3])})
	}
	// A number twice (a caller should not, but one value must not hold it twice).
	actions = append(actions, packedAction{n: 24, bytes: packAction("s", 24, ringCases("s")[0])})
	blob := joinRing(newestRing(actions))
	got, err := splitRing(blob)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != RecentActionsKept {
		t.Fatalf("%d actions kept", len(got))
	}
	for i, p := range got {
		if want := int64(24 - i); p.n != want {
			t.Fatalf("action %d is number %d, want %d", i, p.n, want)
		}
	}
	// Split and joined again, a ring is the same value.
	if again := joinRing(got); !bytes.Equal(again, blob) {
		t.Fatal("a ring joined from its own actions differs")
	}
}

// PostgreSQL's text form of a bytea[] reads as the actions it holds.
func TestRingReadsPostgreSQLsArrayText(t *testing.T) {
	first, second := packAction("s", 7, ringCases("s")[0]), packAction("s", 6, ringCases("s")[2])
	var r ring
	if err := r.Scan(`{"\\x` + hex.EncodeToString(first) + `","\\x` + hex.EncodeToString(second) + `"}`); err != nil {
		t.Fatal(err)
	}
	if len(r) != 2 || r[0].n != 7 || !bytes.Equal(r[0].bytes, first) || r[1].n != 6 || !bytes.Equal(r[1].bytes, second) {
		t.Fatalf("read %+v", r)
	}
	if err := r.Scan("{}"); err != nil || len(r) != 0 {
		t.Fatalf("an empty array reads %+v, %v", r, err)
	}
	for _, bad := range []string{"{", `{"\\xzz"}`, `{"x"}`, `{"\\x"}`} {
		if err := r.Scan(bad); err == nil {
			t.Errorf("%q read without an error", bad)
		}
	}
}

// FuzzRingRead: whatever a ring column holds, in either database's form,
// reading it returns an error or actions, never panics; and what it reads
// packs back into the same actions.
func FuzzRingRead(f *testing.F) {
	var actions []packedAction
	for i, a := range ringCases("s") {
		actions = append(actions, packedAction{n: int64(i), bytes: packAction("s", int64(i), a)})
	}
	f.Add(joinRing(newestRing(actions)))
	f.Add([]byte{ringFormat})
	f.Add([]byte{ringFormat, 3, 1, 0, 0})
	f.Add([]byte{2})
	f.Add([]byte(`{"\\x` + hex.EncodeToString(actions[0].bytes) + `"}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		var list ring
		if err := list.Scan(value); err != nil {
			return
		}
		for _, p := range list {
			n, a, err := unpackAction("s", p.bytes)
			if err != nil {
				continue
			}
			if n != p.n {
				t.Fatalf("split says number %d, unpacked %d", p.n, n)
			}
			_, again, err := unpackAction("s", packAction("s", n, a))
			if err != nil {
				t.Fatalf("%+v packed again: %v", a, err)
			}
			again.FiredAt, again.OccurrenceTime = again.FiredAt.UTC(), again.OccurrenceTime.UTC()
			a.FiredAt, a.OccurrenceTime = a.FiredAt.UTC(), a.OccurrenceTime.UTC()
			if again != a {
				t.Fatalf("%+v packed again reads %+v", a, again)
			}
		}
	})
}
