-- A pause keeps its reason, its author and its optional end in columns of
-- their own. The reason used to overwrite note, which belongs to whoever
-- wrote the schedule; notes overwritten before this migration are not
-- recoverable, so nothing is moved back.
ALTER TABLE workflow_schedules ADD COLUMN pause_reason text;
ALTER TABLE workflow_schedules ADD COLUMN paused_by text;
ALTER TABLE workflow_schedules ADD COLUMN paused_until timestamptz;
-- While paused a schedule has no next fire in any surface.
UPDATE workflow_schedules SET next_fire_at = NULL, next_nominal_at = NULL WHERE status = 'paused';
