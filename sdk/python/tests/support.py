"""Shared by the tests and their fixtures (conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

import tideline

# The only namespace the "bound" token may see, and one it may not.
BOUND_NAMESPACE = "team-a"
OTHER_NAMESPACE = "team-b"

ACTION = tideline.Action(workflow_type="sdk-test", input={"region": "eu", "n": 12345678901234567})


@dataclass(frozen=True)
class Tokens:
    admin: str
    operator: str
    viewer: str
    bound: str  # an admin bound to BOUND_NAMESPACE only
    worker: str  # the worker role: the worker protocol only


@dataclass(frozen=True)
class Server:
    url: str
    dialect: str
    tokens: Tokens
