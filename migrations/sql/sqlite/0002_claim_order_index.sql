-- The claim query orders due schedules by (next_fire_at, id). With only
-- (status, next_fire_at) indexed, thousands of schedules due at the same
-- instant had to be sorted on every claim; this index serves the order
-- directly, so a claim reads just the rows it takes.
CREATE INDEX workflow_schedules_status_next_fire_at_id_idx ON workflow_schedules (status, next_fire_at, id);
DROP INDEX workflow_schedules_status_next_fire_at_idx;
