"""Every API error class, with its status, code and field messages."""

from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest

import tideline
from tideline.errors import error_from_response
from support import ACTION, Server

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


async def test_not_found(client: tideline.Client) -> None:
    with pytest.raises(tideline.NotFound) as info:
        await client.describe_schedule("missing")
    err = info.value
    assert isinstance(err, tideline.TidelineError)
    assert (err.status, err.code) == (404, "schedule_not_found")
    assert "missing" in err.message
    assert err.request_id  # the server's X-Request-Id, to find the request in its log

    with pytest.raises(tideline.NotFound) as info:
        await client.get_run("01J0000000000000000000000")
    assert info.value.code == "run_not_found"
    with pytest.raises(tideline.NotFound):
        await client.get_schedule_history("missing")


async def test_conflict(client: tideline.Client) -> None:
    await client.create_schedule("dup", cron="@daily", action=ACTION)
    with pytest.raises(tideline.Conflict) as info:
        await client.create_schedule("dup", cron="@daily", action=ACTION)
    assert (info.value.status, info.value.code) == (409, "schedule_already_exists")

    with pytest.raises(tideline.Conflict) as info:
        await client.resume_schedule("dup")
    assert info.value.code == "schedule_not_paused"

    await client.delete_schedule("dup")
    with pytest.raises(tideline.Conflict) as info:
        await client.update_schedule("dup", note="x")
    assert info.value.code == "schedule_deleted"


async def test_validation_failed_carries_field_messages(client: tideline.Client) -> None:
    with pytest.raises(tideline.ValidationFailed) as info:
        await client.create_schedule("bad", spec=tideline.Spec(cron_expressions=("0 0 0 * * *",)), action={"workflow_type": ""})
    err = info.value
    assert (err.status, err.code) == (422, "validation_failed")
    assert set(err.fields) >= {"spec.cron_expressions[0]", "action.workflow_type"}
    assert all(err.fields.values())

    await client.create_schedule("ok", cron="@daily", action=ACTION)
    with pytest.raises(tideline.ValidationFailed) as info:
        await client.backfill_schedule("ok", start=START, end=START, dry_run=True)
    assert info.value.code == "invalid_time_range"

    with pytest.raises(tideline.ValidationFailed) as info:
        await client.get_schedule_history("ok", after_sequence=-1)
    assert info.value.code == "invalid_after_sequence"
    assert "after_sequence" in info.value.fields

    with pytest.raises(tideline.ValidationFailed) as info:
        await client.create_schedule("never", cron="0 0 30 2 *", action=ACTION)
    assert info.value.code == "spec_never_fires"


async def test_bad_request_for_unknown_fields(client: tideline.Client) -> None:
    with pytest.raises(tideline.BadRequest) as info:
        await client.create_schedule("x", cron="@daily", action={"workflow_type": "w", "bogus": 1})
    assert (info.value.status, info.value.code) == (400, "invalid_json")
    assert "bogus" in info.value.message


async def test_naive_datetimes_are_refused_before_any_request(client: tideline.Client) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        await client.backfill_schedule("anything", start=datetime(2026, 1, 1), end=datetime(2026, 1, 2))


@pytest.mark.parametrize("token", [None, "tl_not-a-real-token"])
async def test_unauthorized(server: Server, ns: str, token: str | None) -> None:
    async with tideline.Client(server.url, token=token, namespace=ns) as anonymous:
        with pytest.raises(tideline.Unauthorized) as info:
            await anonymous.describe_schedule("x")
    assert (info.value.status, info.value.code) == (401, "unauthorized")


async def test_forbidden_by_role(server: Server, client: tideline.Client, ns: str) -> None:
    await client.create_schedule("guarded", cron="@daily", action=ACTION)
    async with tideline.Client(server.url, token=server.tokens.viewer, namespace=ns) as viewer:
        assert (await viewer.describe_schedule("guarded")).schedule_id == "guarded"  # reading is allowed
        with pytest.raises(tideline.Forbidden) as info:
            await viewer.pause_schedule("guarded")
    assert (info.value.status, info.value.code) == (403, "forbidden")

    async with tideline.Client(server.url, token=server.tokens.operator, namespace=ns) as operator:
        await operator.pause_schedule("guarded")  # operators may pause...
        with pytest.raises(tideline.Forbidden):
            await operator.delete_schedule("guarded")  # ...but not delete


async def test_other_statuses_raise_the_base_class(client: tideline.Client) -> None:
    # The server caps request bodies at 1 MiB: 413, which has no subclass.
    with pytest.raises(tideline.TidelineError) as info:
        await client.create_schedule("huge", cron="@daily", action=ACTION, note="x" * (1 << 20))
    assert type(info.value) is tideline.TidelineError
    assert (info.value.status, info.value.code) == (413, "request_too_large")
    assert str(info.value).startswith("413 request_too_large: ")


def test_bodies_that_are_not_tideline_errors_keep_the_status() -> None:
    # e.g. a reverse proxy's HTML page in front of the server
    response = httpx.Response(502, text="<html>Bad Gateway</html>", request=httpx.Request("GET", "http://proxy/x"))
    err = error_from_response(response)
    assert type(err) is tideline.TidelineError
    assert (err.status, err.code, err.message, dict(err.fields)) == (502, "http_502", "Bad Gateway", {})
