-- Missed-fire policy and the occurrence ledger (CONTRACT §12).
--
-- catchup_window_seconds: null keeps Part I's rule (fire the overdue
-- occurrence once, drop the rest); a window fires the occurrences inside it.
ALTER TABLE workflow_schedules ADD COLUMN catchup_window_seconds integer;
-- Timed pauses are resumed by the loop; paused schedules with an end are few.
CREATE INDEX workflow_schedules_paused_until_idx ON workflow_schedules (paused_until) WHERE status = 'paused' AND paused_until IS NOT NULL;
-- The ledger reads a page's skips by the instance IDs of its occurrences, and
-- the lifecycle events (created, paused, resumed, updated, deleted) by time.
-- Both indexes leave ScheduleTriggered out, so the fire path — almost all
-- audit writes — maintains neither.
CREATE INDEX workflow_schedule_history_events_skips_idx ON workflow_schedule_history_events (workflow_schedule_id, workflow_instance_id)
    WHERE event_type = 'ScheduleTriggerSkipped';
CREATE INDEX workflow_schedule_history_events_lifecycle_idx ON workflow_schedule_history_events (workflow_schedule_id, recorded_at)
    WHERE event_type IN ('ScheduleCreated', 'SchedulePaused', 'ScheduleResumed', 'ScheduleUpdated', 'ScheduleDeleted');
