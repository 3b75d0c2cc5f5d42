-- The loop's deadline sweep looks, every pass, for active runs past an
-- execution or run deadline or a cancellation grace. Each partial index
-- holds only active runs that have such a time, so the sweep reads just the
-- expired ones however many runs are waiting for a worker; runs without
-- deadlines cost nothing extra to write. (Lost leases are found through
-- workflow_runs_active_idx (status, lease_expires_at).)
CREATE INDEX workflow_runs_execution_deadline_idx ON workflow_runs (execution_deadline_at)
    WHERE status IN ('pending', 'running') AND execution_deadline_at IS NOT NULL;
CREATE INDEX workflow_runs_run_deadline_idx ON workflow_runs (run_deadline_at)
    WHERE status IN ('pending', 'running') AND run_deadline_at IS NOT NULL;
CREATE INDEX workflow_runs_cancel_requested_idx ON workflow_runs (cancel_requested_at)
    WHERE status IN ('pending', 'running') AND cancel_requested_at IS NOT NULL;
