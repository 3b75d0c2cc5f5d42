-- The served loop's one reading of its work a period (models.ReadLoopWork:
-- the due queue's first key, and the first entry of each partial index
-- that holds a housekeeping task's work) as a function. Tideline sends
-- every statement with the simple query protocol (PgBouncer in
-- transaction mode: database/open.go), so PostgreSQL plans each one anew;
-- this statement's twelve subqueries, five of them on workflow_runs and its
-- twelve indexes, took ~0.9 ms of planning a call, every second, on every
-- replica, where running it took ~0.3. PL/pgSQL keeps the plan of its
-- statement for the connection. The body is the statement
-- models.LoopWorkQuery builds (SQLite runs that directly);
-- TestReadLoopWorkSeesEveryTasksWork checks that both read the same at
-- every step. Additive for a rolling upgrade: the previous release does
-- not call it.
CREATE OR REPLACE FUNCTION tideline_loop_work(OUT earliest timestamptz, OUT buffered boolean,
    OUT pause_ends timestamptz, OUT health_pending boolean, OUT failing boolean, OUT start_deadline timestamptz,
    OUT lease_expires timestamptz, OUT execution_deadline timestamptz, OUT run_deadline timestamptz,
    OUT cancel_requested timestamptz, OUT delivery_next timestamptz, OUT backfill_next timestamptz)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    SELECT (SELECT "d"."next_fire_at" FROM workflow_schedule_due AS d ORDER BY d.next_fire_at ASC LIMIT 1),
        EXISTS (SELECT 1 FROM "workflow_schedules" AS "s" WHERE (s.status = 'active' AND s.buffer_depth > 0)),
        (SELECT "s"."paused_until" FROM "workflow_schedules" AS "s" WHERE (s.status = 'paused' AND s.paused_until IS NOT NULL) AND (s.paused_until IS NOT NULL) ORDER BY s.paused_until ASC LIMIT 1),
        EXISTS (SELECT 1 FROM "workflow_schedule_health_pending" AS "hp"),
        EXISTS (SELECT 1 FROM "workflow_schedules" AS "s" JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id WHERE (h.consecutive_failures > 0) AND (s.status = 'active' AND s.pause_after_failures IS NOT NULL) AND (h.consecutive_failures >= s.pause_after_failures AND h.consecutive_failures > h.paused_at_failures)),
        (SELECT "r"."start_deadline_at" FROM "workflow_runs" AS "r" WHERE (r.start_deadline_at IS NOT NULL AND r.status = 'pending') AND (r.start_deadline_at IS NOT NULL) ORDER BY r.start_deadline_at ASC LIMIT 1),
        (SELECT "r"."lease_expires_at" FROM "workflow_runs" AS "r" WHERE (r.status IN ('running')) AND (r.lease_expires_at IS NOT NULL) ORDER BY r.lease_expires_at ASC LIMIT 1),
        (SELECT "r"."execution_deadline_at" FROM "workflow_runs" AS "r" WHERE (r.status IN ('pending', 'running')) AND (r.execution_deadline_at IS NOT NULL) ORDER BY r.execution_deadline_at ASC LIMIT 1),
        (SELECT "r"."run_deadline_at" FROM "workflow_runs" AS "r" WHERE (r.status IN ('pending', 'running')) AND (r.run_deadline_at IS NOT NULL) ORDER BY r.run_deadline_at ASC LIMIT 1),
        (SELECT "r"."cancel_requested_at" FROM "workflow_runs" AS "r" WHERE (r.status IN ('pending', 'running')) AND (r.cancel_requested_at IS NOT NULL) ORDER BY r.cancel_requested_at ASC LIMIT 1),
        (SELECT "d"."next_attempt_at" FROM "notification_deliveries" AS "d" WHERE (d.status IN ('pending', 'sending')) AND (d.next_attempt_at IS NOT NULL) ORDER BY d.next_attempt_at ASC LIMIT 1),
        (SELECT "b"."next_work_at" FROM backfills AS b WHERE (b.status = 'running') AND (b.next_work_at IS NOT NULL) ORDER BY b.next_work_at ASC LIMIT 1)
    INTO earliest, buffered, pause_ends, health_pending, failing, start_deadline, lease_expires,
        execution_deadline, run_deadline, cancel_requested, delivery_next, backfill_next;
END
$$;
