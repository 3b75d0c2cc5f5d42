-- Schedule health without a hot row (docs/PERFORMANCE.md, "Claim + complete").
--
-- The last run and the recent-runs strip were kept on workflow_schedule_health
-- and rewritten by every run's end: every worker finishing a run of one
-- schedule then held that row's lock until its commit, so completions of a
-- schedule committed one at a time. They are now read from the runs
-- themselves, through this index (a schedule's finished runs, newest
-- first); the row keeps only the counters, which a completion writes only
-- when it has failures to reset. Existing rows keep their counters; their
-- last run and strip are the runs' own, so nothing needs converting.
CREATE INDEX workflow_runs_schedule_finished_idx ON workflow_runs (workflow_schedule_id, finished_at DESC, id DESC)
    WHERE finished_at IS NOT NULL;

ALTER TABLE workflow_schedule_health
    DROP COLUMN last_run_id,
    DROP COLUMN last_run_status,
    DROP COLUMN last_run_finished_at,
    DROP COLUMN last_run_error,
    DROP COLUMN recent_runs;
