-- The audit stream keyed by (schedule, sequence) alone (issue 35, "bytes
-- per fire"). Every event carried two unique indexes: the primary key on
-- its id (a ULID as 26 characters of text) and the (workflow_schedule_id,
-- sequence) key that history pages, versions, compaction and purging
-- read. Nothing looks an event up by its id: the id is only served with
-- the event. The id's index cost ~55 bytes and one B-tree insert per fire
-- (`tideline bench --output json`, bytes_per_fire_by_relation). The
-- (schedule, sequence) key becomes the primary key; the id column stays,
-- filled as before.
--
-- Rolling upgrade: the previous release writes events as this one does
-- (its inserts name no conflict target) and compacts by id within one
-- schedule, which now reads that schedule's events through the key and
-- filters them; its purge of a deleted schedule's events (`id IN` a
-- subquery) may scan the table until that replica is replaced. Neither
-- changes what is stored. Both statements only change the catalog and
-- drop an index: no rewrite, and the unique index becomes the key as is.
ALTER TABLE workflow_schedule_history_events DROP CONSTRAINT workflow_schedule_history_events_pkey;
ALTER TABLE workflow_schedule_history_events
    ADD CONSTRAINT workflow_schedule_history_events_pkey
    PRIMARY KEY USING INDEX workflow_schedule_history_events_schedule_sequence_key;
