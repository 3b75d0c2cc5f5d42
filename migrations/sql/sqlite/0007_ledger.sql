-- Missed-fire policy and the occurrence ledger (CONTRACT §12); see the
-- PostgreSQL migration of the same number for why these indexes.
ALTER TABLE workflow_schedules ADD COLUMN catchup_window_seconds integer;
CREATE INDEX workflow_schedules_paused_until_idx ON workflow_schedules (paused_until) WHERE status = 'paused' AND paused_until IS NOT NULL;
CREATE INDEX workflow_schedule_history_events_skips_idx ON workflow_schedule_history_events (workflow_schedule_id, workflow_instance_id)
    WHERE event_type = 'ScheduleTriggerSkipped';
CREATE INDEX workflow_schedule_history_events_lifecycle_idx ON workflow_schedule_history_events (workflow_schedule_id, recorded_at)
    WHERE event_type IN ('ScheduleCreated', 'SchedulePaused', 'ScheduleResumed', 'ScheduleUpdated', 'ScheduleDeleted');
