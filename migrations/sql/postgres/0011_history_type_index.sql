-- The history page filters the audit stream by event type, newest or oldest
-- first, in keyset pages by sequence. ScheduleTriggered — almost every
-- audit write, on the fire path — stays out of the index: a filter on it
-- matches most of the stream, which the (schedule, sequence) key already
-- walks in order; every other type is found here without reading the fires.
CREATE INDEX workflow_schedule_history_events_type_idx ON workflow_schedule_history_events (workflow_schedule_id, event_type, sequence)
    WHERE event_type <> 'ScheduleTriggered';
