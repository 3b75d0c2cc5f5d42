"""Exceptions raised for API error answers (CONTRACT §8: {"error": {code, message, fields}})."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import datetime, timezone
from types import MappingProxyType

import httpx


class TidelineError(Exception):
    """An error answer of the Tideline API.

    Raised as is for statuses without a dedicated subclass (405, 413, 429,
    5xx, or a body that is not Tideline's error shape, e.g. from a proxy).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        fields: Mapping[str, str] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields: Mapping[str, str] = MappingProxyType(dict(fields or {}))
        self.request_id = request_id
        # Seconds the server asked to wait before trying again (Retry-After
        # on 503 database_unavailable, 429); None when it said nothing.
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


class BadRequest(TidelineError):
    """400: the body could not be parsed (unknown field, wrong JSON type)."""


class Unauthorized(TidelineError):
    """401: no token, or a token the server does not know."""


class Forbidden(TidelineError):
    """403: the token's role may not do this (namespaces are never 403, see NotFound)."""


class NotFound(TidelineError):
    """404: no such schedule or run, or a namespace the token may not see."""


class Conflict(TidelineError):
    """409: the schedule's state forbids the operation (code says which)."""


class ValidationFailed(TidelineError):
    """422: invalid input; `fields` maps each field's JSON path to its message."""


class Redirected(TidelineError):
    """3xx: the server (or a proxy in front of it) answered with a redirect.

    API calls never follow one: the token and the body (a notifier's secret)
    would go along to wherever it points. ``location`` is where it pointed
    (``None`` when it named nowhere); the base URL is probably not the one
    the API is served from.
    """

    def __init__(self, message: str, *, status: int, location: str | None, request_id: str | None = None) -> None:
        super().__init__(message, status=status, code="redirect_refused", request_id=request_id)
        self.location = location


def redirect_error(method: str, url: str, response: httpx.Response) -> Redirected:
    """Builds the exception for a 3xx answer."""
    location = response.headers.get("Location")
    where = f"Location {location}" if location else "no Location"
    message = (
        f"{method} {url}: the server answered {response.status_code} with a redirect ({where}), "
        "which API calls never follow (the token would go along): check that the base URL is the one the API is served from"
    )
    return Redirected(message, status=response.status_code, location=location, request_id=response.headers.get("X-Request-Id"))


_BY_STATUS: dict[int, type[TidelineError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: ValidationFailed,
}


def error_from_response(response: httpx.Response) -> TidelineError:
    """Builds the exception for a non-2xx answer."""
    status = response.status_code
    code, message, fields = f"http_{status}", response.reason_phrase or "HTTP error", {}
    try:
        detail = response.json()["error"]
        code, message = str(detail["code"]), str(detail["message"])
        fields = {str(k): str(v) for k, v in (detail.get("fields") or {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        pass  # not Tideline's error shape: keep the HTTP status as the code
    cls = _BY_STATUS.get(status, TidelineError)
    return cls(message, status=status, code=code, fields=fields, request_id=response.headers.get("X-Request-Id"),
               retry_after=_retry_after(response.headers.get("Retry-After")))


def _retry_after(value: str | None) -> float | None:
    """Reads Retry-After in seconds or as an HTTP date."""
    if not value:
        return None
    try:
        return max(float(int(value.strip())), 0.0)
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((at - datetime.now(timezone.utc)).total_seconds(), 0.0)
