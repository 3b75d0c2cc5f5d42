-- HTTP targets (CONTRACT §15).
--
-- A target's secret is write-only: it lives here, not in the action
-- column, so the audit stream (which copies the action), history, export and
-- every answer never hold it. Purged with its schedule.
CREATE TABLE workflow_schedule_secrets (
    schedule_ulid text PRIMARY KEY,
    target_secret text NOT NULL,
    updated_at    timestamptz NOT NULL
);

-- The executor claims ready runs of HTTP targets (connection '@http', queue
-- = the target's host) lane by lane. A worker's run never matches the
-- predicate, so the fire path of worker runs adds no index entry here.
CREATE INDEX workflow_runs_http_ready_idx ON workflow_runs (namespace, queue, id)
    WHERE status = 'pending' AND connection = '@http';

-- A pending run now names the attempt it will run next (SPEC §10): 1 for a
-- run never claimed, n + 1 for one sent back after attempt n. Before, it
-- named the attempt that had failed and the claim added one.
UPDATE workflow_runs SET attempt = attempt + 1 WHERE status = 'pending';
