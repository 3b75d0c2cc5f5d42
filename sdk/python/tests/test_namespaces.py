"""Namespaces: X-Namespace isolates tenants; a bound token sees only its own (404, never 403)."""

from __future__ import annotations

import secrets

import pytest

import tideline
from support import ACTION, BOUND_NAMESPACE, OTHER_NAMESPACE, Server


async def test_two_namespaces_are_isolated(server: Server) -> None:
    suffix = secrets.token_hex(4)
    async with (
        tideline.Client(server.url, token=server.tokens.admin, namespace=f"a-{suffix}") as a,
        tideline.Client(server.url, token=server.tokens.admin, namespace=f"b-{suffix}") as b,
    ):
        in_a = await a.create_schedule("same-id", cron="@daily", action=ACTION, note="a")
        in_b = await b.create_schedule("same-id", cron="@hourly", action=ACTION, note="b")
        assert (in_a.namespace, in_b.namespace) == (f"a-{suffix}", f"b-{suffix}")
        assert in_a.id != in_b.id

        await a.create_schedule("only-a", cron="@daily", action=ACTION)
        await a.trigger_schedule("only-a")
        assert [s.schedule_id async for s in a.list_schedules()] == ["only-a", "same-id"]
        assert [s.note async for s in b.list_schedules()] == ["b"]
        assert [r.schedule_id async for r in b.list_runs()] == []
        with pytest.raises(tideline.NotFound):
            await b.describe_schedule("only-a")
        with pytest.raises(tideline.NotFound):
            await b.get_schedule_history("only-a")

        await b.pause_schedule("same-id")
        assert (await a.describe_schedule("same-id")).status == "active"


async def test_bound_token_sees_only_its_namespace(server: Server) -> None:
    schedule_id = f"bound-{secrets.token_hex(4)}"
    async with tideline.Client(server.url, token=server.tokens.admin, namespace=OTHER_NAMESPACE) as admin:
        await admin.create_schedule(schedule_id, cron="@daily", action=ACTION)

    # Without a namespace the server picks the token's only one.
    async with tideline.Client(server.url, token=server.tokens.bound) as bound:
        mine = await bound.create_schedule(schedule_id, cron="@daily", action=ACTION)
        assert mine.namespace == BOUND_NAMESPACE
        assert schedule_id in [s.schedule_id async for s in bound.list_schedules()]

    async with tideline.Client(server.url, token=server.tokens.bound, namespace=OTHER_NAMESPACE) as elsewhere:
        for call in (elsewhere.describe_schedule(schedule_id), elsewhere.get_schedule_history(schedule_id),
                     elsewhere.pause_schedule(schedule_id), elsewhere.list_schedules_page()):
            with pytest.raises(tideline.NotFound) as info:
                await call
            assert (info.value.status, info.value.code) == (404, "not_found")


async def test_invalid_namespace_is_a_validation_error(server: Server) -> None:
    async with tideline.Client(server.url, token=server.tokens.admin, namespace="Not Valid!") as c:
        with pytest.raises(tideline.ValidationFailed) as info:
            await c.list_schedules_page()
    assert "namespace" in info.value.fields
