"""Schedule operations: create, describe, list, update, pause, resume, trigger, backfill, delete."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

import tideline
from support import ACTION


async def test_create_and_describe_round_trip(client: tideline.Client, ns: str) -> None:
    spec = tideline.Spec(
        cron_expressions=("30 2 * * *",),
        intervals=(tideline.Interval(every="PT1H", offset="PT5M"),),
        timezone="America/New_York",
    )
    created = await client.create_schedule(
        "nightly", spec=spec, action=ACTION, overlap_policy="buffer_one", jitter_seconds=0, max_runs=3,
        queue="etl", labels={"team": "data"}, memo={"owner": "ana"}, note="keep me",
    )
    described = await client.describe_schedule("nightly")

    assert created == described
    assert isinstance(described, tideline.Schedule)
    assert (described.schedule_id, described.namespace, described.status) == ("nightly", ns, "active")
    assert described.spec == spec
    assert described.action == ACTION  # big integers in input survive the round trip
    assert (described.overlap_policy, described.max_runs, described.remaining_actions) == ("buffer_one", 3, 3)
    assert (described.connection, described.queue, described.note) == (None, "etl", "keep me")
    assert described.labels == {"team": "data"} and described.memo == {"owner": "ana"}
    assert len(described.future_fire_times) == 5
    assert described.spec_description
    times = [described.created_at, described.updated_at, *described.future_fire_times]
    assert all(t.tzinfo is timezone.utc for t in times)
    assert described.next_fire_at is not None and described.next_fire_at == described.future_fire_times[0]
    assert described.future_fire_times == tuple(sorted(described.future_fire_times))


async def test_create_generates_an_id_and_can_start_paused(client: tideline.Client) -> None:
    sch = await client.create_schedule(cron="@hourly", action={"workflow_type": "w"}, paused=True)

    assert sch.schedule_id.startswith("sch-")
    assert sch.status == "paused"
    assert sch.paused_at is not None and sch.paused_at.tzinfo is timezone.utc
    events = [e.event_type async for e in client.iter_schedule_history(sch.schedule_id)]
    assert events == ["ScheduleCreated", "SchedulePaused"]


async def test_list_schedules_pages_and_filters(client: tideline.Client) -> None:
    for i in range(5):
        await client.create_schedule(f"s-{i}", cron="@daily", action=ACTION, labels={"tier": "gold" if i % 2 else "free"})
    await client.pause_schedule("s-3")
    await client.delete_schedule("s-4")

    first = await client.list_schedules_page(limit=2)
    assert [s.schedule_id for s in first.schedules] == ["s-0", "s-1"]
    assert first.has_more and first.next_cursor is not None

    assert [s.schedule_id async for s in client.list_schedules(page_size=2)] == ["s-0", "s-1", "s-2", "s-3"]
    assert [s.schedule_id async for s in client.list_schedules(status="all", page_size=1)] == [f"s-{i}" for i in range(5)]
    assert [s.schedule_id async for s in client.list_schedules(status=["paused", "deleted"])] == ["s-3", "s-4"]
    assert [s.schedule_id async for s in client.list_schedules(label="tier:gold")] == ["s-1", "s-3"]
    assert [s.schedule_id async for s in client.list_schedules(query="s-2")] == ["s-2"]


async def test_update_changes_only_given_fields(client: tideline.Client) -> None:
    await client.create_schedule("u", cron="0 1 * * *", action=ACTION, max_runs=5, connection="db1", note="n")
    handle = client.get_schedule("u")

    sch = await handle.update(note="changed", labels={"k": "v"}, max_runs=None, spec=tideline.Spec(cron_expressions=("0 4 * * *",)))
    assert (sch.note, sch.labels, sch.max_runs, sch.remaining_actions) == ("changed", {"k": "v"}, None, None)
    assert sch.spec.cron_expressions == ("0 4 * * *",)
    assert sch.next_fire_at is not None and sch.next_fire_at.hour == 4
    assert sch.connection == "db1"  # untouched
    assert sch.action == ACTION

    sch = await client.update_schedule("u", connection=None, action=tideline.Action("other", run_timeout_seconds=60))
    assert (sch.connection, sch.action.workflow_type, sch.action.run_timeout_seconds) == (None, "other", 60)

    updates = [e async for e in handle.iter_history() if e.event_type == "ScheduleUpdated"]
    assert [sorted(e.payload["changed_fields"]) for e in updates] == [
        ["labels", "max_runs", "note", "spec"],
        ["action", "connection"],
    ]


async def test_pause_resume_trigger_delete(client: tideline.Client) -> None:
    handle = client.get_schedule("life")
    await client.create_schedule("life", cron="*/5 * * * *", action=ACTION)

    paused = await handle.pause(reason="maintenance")
    assert paused.status == "paused" and paused.paused_at is not None
    resumed = await handle.resume()
    assert resumed.status == "active" and resumed.next_fire_at is not None

    first = await handle.trigger()
    assert isinstance(first, tideline.TriggerResult)
    assert first.outcome == "triggered" and first.run_id is not None
    assert first.instance_id is not None and first.instance_id.startswith("schedule:life:manual:")
    second = await handle.trigger()  # the first run is still pending: the default policy skips
    assert (second.outcome, second.run_id, second.reason) == ("skipped", None, "overlap_policy_skip")
    forced = await handle.trigger(overlap_policy="allow_all")
    assert forced.outcome == "triggered"

    described = await handle.describe()
    assert (described.fires_count, described.skipped_trigger_count) == (2, 1)
    assert described.last_skip_reason == "overlap_policy_skip"
    assert described.latest_run_id == forced.run_id
    assert [a.run_id for a in described.recent_actions if a.run_id] == [forced.run_id, first.run_id]
    assert [a.reason for a in described.recent_actions] == ["", "overlap_policy_skip", ""]

    deleted = await handle.delete()
    assert deleted.status == "deleted" and deleted.deleted_at is not None
    again = await handle.delete()  # idempotent: no second event
    assert again.deleted_at == deleted.deleted_at
    types = [e.event_type async for e in handle.iter_history()]
    assert types == ["ScheduleCreated", "SchedulePaused", "ScheduleResumed", "ScheduleTriggered",
                     "ScheduleTriggerSkipped", "ScheduleTriggered", "ScheduleDeleted"]


async def test_backfill_dry_run_starts_nothing(client: tideline.Client) -> None:
    handle = client.get_schedule("bf")
    await client.create_schedule("bf", cron="0 */6 * * *", action=ACTION)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)

    # The dry run plays the overlap policy as the backfill will: under the
    # default (skip) the first start blocks the rest; allow_all starts all.
    skip = await handle.backfill(start=start, end=start + timedelta(days=1), dry_run=True)
    assert [(r.outcome, r.reason) for r in skip.results] == [("planned", None)] + [("skipped", "overlap_policy_skip")] * 3
    plan = await handle.backfill(start=start, end=start + timedelta(days=1), dry_run=True, overlap_policy="allow_all")
    assert isinstance(plan, tideline.BackfillReport)
    assert (plan.outcome, plan.occurrences) == ("dry_run", 4)
    assert [r.occurrence_time for r in plan.results] == [start + timedelta(hours=6 * i) for i in range(4)]
    assert {(r.outcome, r.run_id) for r in plan.results} == {("planned", None)}
    assert plan.results[0].instance_id == f"schedule:bf:backfill:{int(start.timestamp())}"
    assert [r async for r in handle.runs()] == []
    assert [e.event_type async for e in handle.iter_history()] == ["ScheduleCreated"]

    # A non-UTC aware time means the same instant.
    kyiv = timezone(timedelta(hours=2))
    done = await handle.backfill(start=datetime(2026, 1, 1, 2, tzinfo=kyiv), end=datetime(2026, 1, 1, 14, tzinfo=kyiv),
                                 overlap_policy="allow_all")
    assert isinstance(done, tideline.BackfillJob)
    done = await client.wait_backfill(done.id, poll_seconds=0.1, timeout=30)
    assert (done.status, done.total, done.started, done.remaining) == ("completed", 2, 2, 0)
    runs = [r async for r in handle.runs()]
    assert sorted(r.instance_id for r in runs) == [f"schedule:bf:backfill:{int(start.timestamp()) + h * 3600}" for h in (0, 6)]
    assert {r.trigger for r in runs} == {"backfilled"}


async def test_backfill_job_lifecycle(client: tideline.Client) -> None:
    await client.create_schedule("year", cron="* * * * *", action=ACTION, overlap_policy="allow_all")
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    job = await client.start_backfill("year", start=start, end=start + timedelta(days=365), max_per_minute=1,
                                      max_concurrent_runs=10, reason="replay")
    assert (job.status, job.total, job.started, job.remaining) == ("running", 525_600, 1, 525_599)
    assert (job.max_per_minute, job.max_concurrent_runs, job.reason) == (1, 10, "replay")
    assert job.eta is not None and job.eta > job.created_at
    assert [j.id async for j in client.list_backfills(schedule_id="year")] == [job.id]

    paused = await client.pause_backfill(job.id, reason="workers busy")
    assert (paused.status, paused.eta) == ("paused", None)
    with pytest.raises(tideline.Conflict) as info:
        await client.pause_backfill(job.id)
    assert info.value.code == "backfill_not_running"
    assert (await client.resume_backfill(job.id)).status == "running"
    cancelled = await client.cancel_backfill(job.id)
    assert cancelled.finished and cancelled.status == "cancelled" and cancelled.finished_at is not None
    assert (await client.wait_backfill(job.id)).status == "cancelled"
    with pytest.raises(tideline.NotFound) as missing:
        await client.get_backfill("01KXNR6R809X7XT0RFJDNTWDR2")
    assert missing.value.code == "backfill_not_found"


async def test_pause_hides_next_fire_and_keeps_note(client: tideline.Client) -> None:
    await client.create_schedule("p", cron="@daily", action=ACTION, note="written by the owner")
    until = datetime.now(timezone.utc) + timedelta(hours=2)
    paused = await client.pause_schedule("p", reason="maintenance", until=until)
    assert paused.next_fire_at is None
    assert paused.note == "written by the owner"
    assert paused.pause_reason == "maintenance"
    assert paused.paused_by is not None
    assert paused.paused_until is not None and abs((paused.paused_until - until).total_seconds()) < 1e-3
    resumed = await client.resume_schedule("p")
    assert resumed.note == "written by the owner"
    assert resumed.pause_reason is None and resumed.paused_until is None
    assert resumed.next_fire_at is not None


async def test_health_fields_are_typed(client: tideline.Client) -> None:
    created = await client.create_schedule("h", cron="@daily", action=ACTION)
    assert created.consecutive_failures == 0 and created.last_run is None and created.recent_runs == ()
    assert created.pause_after_failures is None and created.start_failures_count == 0


async def test_http_target_and_retry_policy_round_trip(client: tideline.Client) -> None:
    target = tideline.Target.http(
        "https://jobs.example.com/close", method="PUT", headers={"X-Team": "finance"},
        timeout_seconds=120, secret="s" * 24, auth="bearer",
    )
    policy = tideline.RetryPolicy(max_attempts=5, initial_interval_seconds=2, non_retryable_error_types=("bad_input",))
    action = tideline.Action("finance.Close", retry_policy=policy, target=target)
    sch = await client.create_schedule("close", cron="0 2 * * *", action=action)
    got = sch.action.target
    assert got is not None
    assert (got.kind, got.url, got.method, dict(got.headers), got.auth, got.timeout_seconds) == (
        "http", "https://jobs.example.com/close", "PUT", {"X-Team": "finance"}, "bearer", 120)
    assert got.secret is None and got.secret_set, "the secret is write-only: answers say only that it is set"
    assert sch.action.retry_policy is not None
    assert (sch.action.retry_policy.max_attempts, sch.action.retry_policy.initial_interval_seconds) == (5, 2)
    assert sch.action.retry_policy.non_retryable_error_types == ("bad_input",)

    # An action read back and changed keeps its target, its stored secret
    # and its retry policy.
    changed = dataclasses.replace(sch.action, run_timeout_seconds=60)
    sch = await client.update_schedule("close", action=changed)
    assert sch.action.run_timeout_seconds == 60
    assert sch.action.target == got
    assert sch.action.retry_policy == changed.retry_policy

    # Back to a worker: the default target reads as None.
    sch = await client.update_schedule("close", action=dataclasses.replace(sch.action, target=None))
    assert sch.action.target is None and sch.connection != "@http"


async def test_at_times_and_bounds_round_trip(client: tideline.Client, ns: str) -> None:
    soon = (datetime.now(timezone.utc) + timedelta(days=2)).replace(microsecond=0)
    spec = tideline.Spec(
        cron_expressions=("0 6 * * *",),
        at=(soon.isoformat().replace("+00:00", "Z"),),
        end_at=(soon + timedelta(days=30)).isoformat().replace("+00:00", "Z"),
    )
    created = await client.create_schedule("bounded", spec=spec, action=ACTION)
    assert created.spec == spec  # kept as written, so read-and-write-back changes nothing
    assert created.ended is False and created.next_fire_at is not None
