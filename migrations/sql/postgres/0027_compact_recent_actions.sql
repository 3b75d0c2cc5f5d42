-- The ring of recent actions, compacted (issue 35, "halve the ring").
-- A ring row stored, as text, values the fire path can recompute on read:
-- the outcome and skip reason (a handful of constant strings, ~10-28
-- bytes), the fire lag (fired_at - occurrence_time, 8 bytes) and the
-- instance ID (~35 bytes), which for a scheduled fire without jitter is
-- schedule:<schedule_id>:<unix occurrence> and for a backfill
-- schedule:<schedule_id>:backfill:<unix occurrence>; and the run ID, a
-- ULID, as 26 characters of text (27 bytes) where its 16 bytes would do.
-- Rows written from this release on carry the outcome and reason as one
-- small code and the run ID in run_ulid, and leave fire_lag_ms and
-- instance_id NULL whenever the read can recompute them exactly
-- (models.SaveRecentActions checks that per row; a jittered fire, a manual
-- trigger or a drained manual fire keeps its instance ID). A NULL costs
-- one bit of the row's null bitmap. BenchmarkRingFootprint has
-- the bytes (docs/PERFORMANCE.md, "The ring of recent actions, halved").
--
-- Expand only, for a rolling upgrade: the previous release still reads
-- and writes every old column. Its upsert sets outcome, so a row whose
-- outcome is not NULL is in the old shape whatever code it still carries,
-- and this release reads it from the old columns alone. The previous
-- release reads a compact row without an error, but shows its outcome,
-- instance and run ID empty and its lag as 0 (display only, until that
-- replica is replaced: docs/PRODUCTION.md's rolling order). Both ALTERs only
-- change the catalog (no rewrite). The contract step, once no replica of
-- the previous release runs: rewrite the rows still in the old shape (a
-- schedule's next ten fires do; one that stopped firing keeps them), then
-- drop fire_lag_ms and the old-shape read (run_id stays for a run ID that
-- is not a ULID). outcome and reason stay, as
-- the text of an outcome/reason pair that has no code yet.
ALTER TABLE workflow_schedule_recent_actions
    ADD COLUMN code smallint,
    ADD COLUMN run_ulid bytea,
    ALTER COLUMN outcome DROP NOT NULL,
    ALTER COLUMN fire_lag_ms DROP NOT NULL;
