"""Run listing and run detail."""

from __future__ import annotations

from datetime import timezone

import pytest

import tideline
from support import ACTION


async def test_list_runs_newest_first_over_pages(client: tideline.Client) -> None:
    await client.create_schedule("r", cron="@daily", action=ACTION, overlap_policy="allow_all")
    await client.create_schedule("other", cron="@daily", action=ACTION)
    started = [(await client.trigger_schedule("r")).run_id for _ in range(3)]
    other = (await client.trigger_schedule("other")).run_id

    page = await client.list_runs_page(schedule_id="r", limit=2)
    assert [r.run_id for r in page.runs] == started[::-1][:2]
    assert page.has_more and page.next_cursor is not None

    assert [r.run_id async for r in client.list_runs(schedule_id="r", page_size=1)] == started[::-1]
    assert [r.run_id async for r in client.get_schedule("r").runs()] == started[::-1]
    assert [r.run_id async for r in client.list_runs()] == [other, *started[::-1]]
    assert [r.run_id async for r in client.list_runs(status="pending", schedule_id="other")] == [other]
    assert [r async for r in client.list_runs(status=["completed", "failed"])] == []


async def test_get_run_has_typed_fields_and_provenance(client: tideline.Client, ns: str) -> None:
    await client.create_schedule("prov", cron="15 4 * * *", action=ACTION, queue="etl")
    trigger = await client.trigger_schedule("prov")
    assert trigger.run_id is not None

    detail = await client.get_run(trigger.run_id)
    run = detail.run
    assert isinstance(run, tideline.Run)
    assert (run.run_id, run.instance_id, run.namespace, run.schedule_id) == (trigger.run_id, trigger.instance_id, ns, "prov")
    assert (run.workflow_type, run.status, run.trigger, run.queue) == ("sdk-test", "pending", "manual", "etl")
    assert run.input == ACTION.input
    assert run.output is None and run.finished_at is None
    assert run.created_at.tzinfo is timezone.utc
    assert run.occurrence_time is not None and run.occurrence_time.tzinfo is timezone.utc

    (provenance,) = [e for e in detail.history if e.event_type == "ScheduleTriggered"]
    assert provenance.payload["schedule_id"] == "prov"
    assert provenance.payload["cron_expression"] == "15 4 * * *"
    assert provenance.recorded_at.tzinfo is timezone.utc


async def test_cancel_and_terminate(client: tideline.Client) -> None:
    await client.create_schedule("stop", cron="@daily", action=ACTION, overlap_policy="allow_all")
    first, second = [(await client.trigger_schedule("stop")).run_id for _ in range(2)]
    assert first is not None and second is not None

    cancelled = await client.cancel_run(first, reason="not needed")
    assert cancelled.run_id == first
    assert cancelled.cancel_requested or cancelled.status == "cancelled"
    with pytest.raises(tideline.Conflict):
        await client.cancel_run(first)

    terminated = await client.terminate_run(second, reason="now")
    assert (terminated.status, terminated.finished_at is not None) == ("terminated", True)
