package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// freezeBeforeCommit is a bun query hook that stops a tick right after the
// last statement of its fast-path batch (the multi-row UPDATE of the
// claimed schedules) and before COMMIT: the batch has claimed its rows with
// FOR UPDATE SKIP LOCKED and written every instance, run and audit event,
// but nothing is committed yet.
type freezeBeforeCommit struct {
	// runs counts the rows the frozen batch inserted into workflow_runs
	// (uncommitted when the hook freezes).
	runs    int64
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (h *freezeBeforeCommit) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (h *freezeBeforeCommit) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if e.Err == nil && e.Result != nil && strings.HasPrefix(e.Query, "INSERT INTO workflow_runs") {
		n, _ := e.Result.RowsAffected()
		h.runs += n
	}
	if e.Err != nil || !strings.Contains(e.Query, "UPDATE workflow_schedules") {
		return
	}
	h.once.Do(func() {
		close(h.reached)
		<-h.release
	})
}

// TestCrashBetweenClaimAndCommitLosesNothing kills a scheduler between
// "claim" and "commit", deterministically:
//
//  1. 40 schedules (interval P1D) are made due at the last midnight.
//  2. A "crasher" — the real scheduling.Service in this test process, on its
//     own connection pool — ticks with limit 20. A query hook freezes it
//     after the batch's last write and before COMMIT, so it holds row locks
//     on 20 schedules and has written (uncommitted) their 20 runs
//     and audit events.
//  3. A `tideline serve` replica starts. It fires the 20 free schedules;
//     over several further loop passes it does not fire (or wait for) the
//     20 locked ones: SKIP LOCKED passes them over.
//  4. The crasher's backend is terminated (pg_terminate_backend: what
//     PostgreSQL does when the client process dies), which rolls its
//     transaction back.
//  5. The replica then fires the 20 formerly locked schedules. Every one of
//     the 40 has fired its occurrence exactly once: one instance named
//     schedule:{id}:{midnight}, one run, one ScheduleTriggered, fires_count 1.
func TestCrashBetweenClaimAndCommitLosesNothing(t *testing.T) {
	t.Parallel()
	const (
		locked = 20
		free   = 20
	)
	url := dbtest.PostgresURL(t)
	db := openDB(t, url)
	ctx := ctxTimeout(t)
	if _, err := migrations.Apply(ctx, db); err != nil {
		t.Fatal(err)
	}

	// Schedules: the locked group first, so the crasher's claim (oldest
	// next_fire_at, then id) takes exactly that group.
	svc := scheduling.New(scheduling.Config{DB: db})
	for i := range locked + free {
		id := fmt.Sprintf("locked-%04d", i)
		if i >= locked {
			id = fmt.Sprintf("free-%04d", i-locked)
		}
		_, err := svc.Create(ctx, scheduling.CreateInput{
			ScheduleID: id, Spec: models.Spec{Intervals: []models.Interval{{Every: "P1D"}}},
			Action: models.Action{WorkflowType: "crash"}, OverlapPolicy: scheduling.OverlapAllowAll,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).
		Set("next_fire_at = ?", midnight).Set("next_nominal_at = ?", midnight).
		Where("TRUE").Exec(ctx); err != nil {
		t.Fatal(err)
	}

	// The crasher, frozen before COMMIT.
	app := "tideline-crasher-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	crasherDB, err := database.Open(ctx, url+"&application_name="+app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crasherDB.Close() })
	hook := &freezeBeforeCommit{reached: make(chan struct{}), release: make(chan struct{})}
	crasherDB.AddQueryHook(hook)
	crasher := scheduling.New(scheduling.Config{DB: crasherDB})
	crashCtx, crash := context.WithCancel(context.Background())
	defer crash()
	tickDone := make(chan error, 1)
	var releaseOnce sync.Once
	releaseHook := func() { releaseOnce.Do(func() { close(hook.release) }) }
	t.Cleanup(releaseHook)
	go func() {
		_, err := crasher.Tick(crashCtx, locked)
		tickDone <- err
	}()
	select {
	case <-hook.reached:
	case err := <-tickDone:
		t.Fatalf("the crasher's tick ended before its commit: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the crasher never reached its commit")
	}
	if hook.runs != locked {
		t.Fatalf("the frozen batch inserted %d runs, want %d", hook.runs, locked)
	}
	// A run is its occurrence's instance (migration 0009).
	countInstances := func(prefix string) (int64, error) {
		return db.NewSelect().Table("workflow_runs").Where("schedule_id LIKE ?", prefix+"-%").Count(ctx)
	}
	if n, err := countInstances("locked"); err != nil || n != 0 {
		t.Fatalf("before the crash: %d committed instances of locked schedules (err %v), want 0", n, err)
	}

	// A replica fires the free group and passes over the locked one.
	r := newReplica(t, "replica", url, "--loop-period", "100ms")
	r.start()
	waitFor(t, 30*time.Second, 20*time.Millisecond, "the free schedules fire", func() (bool, error) {
		n, err := countInstances("free")
		return n == free, err
	})
	passes, err := r.metric("tideline_loop_pass_duration_seconds_count")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, 20*time.Millisecond, "three more loop passes", func() (bool, error) {
		n, err := r.metric("tideline_loop_pass_duration_seconds_count")
		return n >= passes+3, err
	})
	if n, err := countInstances("locked"); err != nil || n != 0 {
		t.Fatalf("while the crasher holds its claim: %d instances of locked schedules (err %v), want 0", n, err)
	}

	// The crash: PostgreSQL ends the crasher's session and rolls it back.
	var terminated []bool
	if err := db.NewRaw("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND state = 'idle in transaction'", app).
		Scan(ctx, &terminated); err != nil {
		t.Fatal(err)
	}
	if len(terminated) != 1 || !terminated[0] {
		t.Fatalf("pg_terminate_backend of the crasher's transaction: %v, want exactly one backend", terminated)
	}
	crash() // a dead process does not retry its batch
	releaseHook()
	if err := <-tickDone; err == nil {
		t.Fatal("the crasher's tick committed although its backend was terminated")
	}
	_ = crasherDB.Close()

	waitFor(t, 30*time.Second, 20*time.Millisecond, "the formerly locked schedules fire", func() (bool, error) {
		n, err := countInstances("locked")
		return n == locked, err
	})
	passes, err = r.metric("tideline_loop_pass_duration_seconds_count")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, 20*time.Millisecond, "three more loop passes", func() (bool, error) {
		n, err := r.metric("tideline_loop_pass_duration_seconds_count")
		return n >= passes+3, err
	})
	r.stop()

	for _, prefix := range []string{"locked", "free"} {
		var rows []struct {
			ScheduleID string `bun:"schedule_id"`
			FiresCount int64  `bun:"fires_count"`
			Skipped    int64  `bun:"skipped_trigger_count"`
			Instances  int64  `bun:"instances"`
			Runs       int64  `bun:"runs"`
			Triggered  int64  `bun:"triggered"`
			Named      int64  `bun:"named"`
		}
		err := db.NewRaw(`SELECT s.schedule_id, s.fires_count, s.skipped_trigger_count,
			(SELECT count(DISTINCT r.instance_id) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id) AS instances,
			(SELECT count(*) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id) AS runs,
			(SELECT count(*) FROM workflow_schedule_history_events e WHERE e.workflow_schedule_id = s.id AND e.event_type = 'ScheduleTriggered') AS triggered,
			(SELECT count(*) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id AND r.instance_id = 'schedule:' || s.schedule_id || ':' || ?) AS named
			FROM workflow_schedules s WHERE s.schedule_id LIKE ? ORDER BY s.schedule_id`, strconv.FormatInt(midnight.Unix(), 10), prefix+"-%").
			Scan(ctx, &rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 20 {
			t.Fatalf("%d %s schedules, want 20", len(rows), prefix)
		}
		for _, row := range rows {
			if row.FiresCount != 1 || row.Instances != 1 || row.Runs != 1 || row.Triggered != 1 || row.Named != 1 || row.Skipped != 0 {
				t.Errorf("%s: fires_count %d, instances %d (named for midnight: %d), runs %d, ScheduleTriggered %d, skipped %d: want exactly one fire of the midnight occurrence",
					row.ScheduleID, row.FiresCount, row.Instances, row.Named, row.Runs, row.Triggered, row.Skipped)
			}
		}
	}
	errorsLogged := strings.Count(tail(r.log.Name(), 1000), "level=ERROR")
	if errorsLogged > 0 {
		t.Errorf("the replica logged %d errors:\n%s", errorsLogged, tail(r.log.Name(), 20))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("verification ran out of time")
	}
}
