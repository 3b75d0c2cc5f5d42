-- Run ends not yet folded into their schedule's health row (SPEC §10;
-- docs/PERFORMANCE.md, "Claim + complete").
--
-- Every run's end used to rewrite its schedule's health row (last run,
-- recent-runs strip), so workers finishing runs of one schedule held that
-- row's lock one after another, each until its commit returned. A run's
-- end now inserts its strip entry here — a row of its own, which nobody
-- waits for — and touches the health row only to change a counter. The
-- loop folds these rows into the health row every pass; readers merge the
-- ones not folded yet. No foreign key: checking one would lock the
-- schedule row, which the tick holds while it fires.
CREATE TABLE workflow_schedule_health_pending (
    schedule_ulid text NOT NULL,
    finished_at   timestamptz NOT NULL,
    run_id        text NOT NULL,
    status        text NOT NULL,
    occurrence_ms bigint,
    duration_ms   bigint,
    error_message text,
    PRIMARY KEY (schedule_ulid, finished_at, run_id)
);
