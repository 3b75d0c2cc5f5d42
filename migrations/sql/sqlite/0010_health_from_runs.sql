-- Schedule health reads the last run and the recent-runs strip from the
-- runs; see the PostgreSQL migration of the same number for why.
CREATE INDEX workflow_runs_schedule_finished_idx ON workflow_runs (workflow_schedule_id, finished_at DESC, id DESC)
    WHERE finished_at IS NOT NULL;

ALTER TABLE workflow_schedule_health DROP COLUMN last_run_id;
ALTER TABLE workflow_schedule_health DROP COLUMN last_run_status;
ALTER TABLE workflow_schedule_health DROP COLUMN last_run_finished_at;
ALTER TABLE workflow_schedule_health DROP COLUMN last_run_error;
ALTER TABLE workflow_schedule_health DROP COLUMN recent_runs;
