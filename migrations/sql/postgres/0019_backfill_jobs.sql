-- Backfills as durable jobs (SPEC §18, docs/BACKFILLS.md).
--
-- One row per job. The loop's job worker works running jobs in slices: each
-- slice locks the job row (FOR UPDATE SKIP LOCKED, so two replicas never work
-- one job at once), starts the next occurrences after cursor_at and moves the
-- cursor and the counts in the same transaction. The deterministic backfill
-- instance IDs (CONTRACT §5) make a repeated occurrence already_started, so
-- a slice cut short by a crash is simply worked again.
CREATE TABLE backfills (
    id                  text PRIMARY KEY,          -- ULID
    namespace           text NOT NULL,
    schedule_ulid       text NOT NULL,
    schedule_id         text NOT NULL,
    range_from          timestamptz NOT NULL,
    range_to            timestamptz NOT NULL,
    -- The override given, or '' for the schedule's own policy (buffer
    -- policies act as allow_all, as in a synchronous backfill).
    overlap_policy      text NOT NULL,
    -- The ledger's "backfill the missed ones": only these occurrences (a
    -- sorted JSON array of Unix seconds); null = every occurrence.
    only_times          jsonb,
    max_per_minute      integer,
    max_concurrent_runs integer,
    -- running | paused | completed | cancelled | failed
    status              text NOT NULL,
    total               bigint NOT NULL,
    started             bigint NOT NULL DEFAULT 0,
    skipped             bigint NOT NULL DEFAULT 0,
    buffered            bigint NOT NULL DEFAULT 0,
    failed              bigint NOT NULL DEFAULT 0,
    -- The last occurrence handled; null before the first.
    cursor_at           timestamptz,
    -- Why a job ended other than completed (schedule_deleted,
    -- max_runs_exhausted, spec_invalid) or who cancelled it.
    error               text,
    -- Pacing (max_per_minute): a token bucket and the slices of the last
    -- minute ([[unix_ms, n], …]), see scheduling/backfilljob.go.
    pace_tokens         double precision NOT NULL DEFAULT 0,
    pace_at             timestamptz,
    pace_recent         text NOT NULL DEFAULT '[]',
    -- Not before: a paced or throttled job is not claimed again until then.
    next_work_at        timestamptz NOT NULL,
    -- Fairness: the job served longest ago is served first.
    last_worked_at      timestamptz,
    created_by          text NOT NULL,
    source              text NOT NULL,
    reason              text NOT NULL DEFAULT '',
    request_id          text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    finished_at         timestamptz
);
-- The worker's candidates: running jobs only, so finished jobs cost nothing.
CREATE INDEX backfills_work_idx ON backfills (next_work_at) WHERE status = 'running';
-- GET /backfills (keyset by id, newest first) and the schedule page.
CREATE INDEX backfills_namespace_idx ON backfills (namespace, id);
CREATE INDEX backfills_schedule_idx ON backfills (schedule_ulid, id);

-- max_concurrent_runs counts a job's runs that are pending or running: the
-- backfilled runs of its range, read from an index that holds only active
-- backfilled runs (a regular fire's run never enters it).
CREATE INDEX workflow_runs_backfill_active_idx ON workflow_runs (namespace, instance_id)
    WHERE trigger = 'backfilled' AND status IN ('pending', 'running');
