-- A lighter fire (issue 22). A fire used to write five rows: an instance,
-- a run, the run's first history event (ScheduleTriggered), the schedule's
-- audit event and the schedule update. Now it writes three.
--
-- The instance folds into its run. Every instance had exactly one run
-- (retries are attempts of the same run), so the (namespace, instance_id)
-- unique key moves to workflow_runs and keeps an occurrence from starting
-- twice, across replicas as before; the instance's status only mirrored
-- its run's.
CREATE UNIQUE INDEX workflow_runs_namespace_instance_id_key ON workflow_runs (namespace, instance_id);
ALTER TABLE workflow_runs DROP COLUMN workflow_instance_id;
DROP TABLE workflow_instances;

-- The run's ScheduleTriggered provenance lives on the run row and is served
-- as its first history event (sequence 1, recorded at created_at): the
-- other keys of that event (schedule_id, schedule_ulid, occurrence_time)
-- are columns of the run already. Runs fired before this migration keep
-- their stored event and have these columns null.
ALTER TABLE workflow_runs ADD COLUMN trigger_number bigint;
ALTER TABLE workflow_runs ADD COLUMN trigger_cron text;
ALTER TABLE workflow_runs ADD COLUMN trigger_timezone text;
ALTER TABLE workflow_runs ADD COLUMN trigger_overlap_policy text;

-- What else a fire used to maintain for nobody:
--
-- The foreign keys from runs and audit events to their schedule ran a
-- trigger per inserted row (a SELECT … FOR KEY SHARE of the schedule the
-- fire holds locked already). Both are written only under that row lock,
-- by the service, and schedules are never deleted while they have either:
-- delete is a soft delete, and the purge removes runs and events first.
-- (notification_deliveries has no such key for the same reason.)
ALTER TABLE workflow_runs DROP CONSTRAINT workflow_runs_workflow_schedule_id_fkey;
ALTER TABLE workflow_schedule_history_events DROP CONSTRAINT workflow_schedule_history_events_workflow_schedule_id_fkey;
-- Every fire changes latest_run_id, so this index took an entry per fire.
-- Its one reader, retention's "never a schedule's latest run", now looks
-- the run's own schedule up by primary key instead.
DROP INDEX workflow_schedules_latest_run_idx;
