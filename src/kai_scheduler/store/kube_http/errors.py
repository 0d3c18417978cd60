"""The API store's errors: Kubernetes `Status` answers become the store's errors with the server's message, so a
component sees NotFound or Conflict whichever store it runs on; a request that reached no answer is one short line.
"""

from __future__ import annotations

import re
from typing import Final

import orjson
import urllib3

from kai_scheduler.store import interface
from kai_scheduler.store.interface import JSON, AlreadyExists, Conflict, Gone, Invalid, NotFound, StoreError


class Throttled(StoreError):
    """The API server kept answering 429 Too Many Requests after the allowed retries."""

    reason = "TooManyRequests"


class Unavailable(StoreError):
    """The API server could not be reached, or answered 502/503/504: transient, try again later."""

    reason = "ServiceUnavailable"


class Cancelled(Unavailable, interface.Cancelled):
    """The request was cut or refused because its store was cancelled (a process stopping); an Unavailable too,
    for the callers that retry those."""


class ConfigurationError(StoreError):
    """No usable kubeconfig or in-cluster service account: a startup error, not a transient one."""

    reason = "InvalidConfiguration"


class NoAnswer(Exception):
    """A request that got no whole answer, in one short line (`str`); `status`: the answer's status when its
    head came and its body broke off, else 0; `elapsed`: seconds since the request started."""

    def __init__(self, text: str, status: int = 0, elapsed: float = 0.0) -> None:
        super().__init__(text)
        self.status, self.elapsed = status, elapsed


def unreachable(origin: str, err: urllib3.exceptions.HTTPError | NoAnswer) -> str:
    """One short line for a request that reached no answer: "cannot reach the API server https://h:6443:
    Connection refused", not urllib3's nest of pool, URL and connection reprs (the retries are its own)."""
    return f"cannot reach the API server {origin}: {err if isinstance(err, NoAnswer) else cause(err)}"


def cause(err: urllib3.exceptions.HTTPError) -> str:
    """Why urllib3 got no answer, in a few words ("Connection refused", "TLS failed: …")."""
    reason: BaseException = err
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        reason = err.reason
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        text = str(reason).rsplit("Failed to establish a new connection: ", 1)[-1]
        return re.sub(r"^\[Errno -?\d+\] ", "", text)
    if isinstance(reason, urllib3.exceptions.ConnectTimeoutError):
        return "connection timed out"
    if isinstance(reason, urllib3.exceptions.SSLError):
        return f"TLS failed: {reason.args[0] if reason.args else reason}"
    return str(reason)


def status_of(raw: bytes) -> JSON:
    """The Kubernetes Status in an error body, or an empty one if the body is not a Status."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace").strip()
        return {"message": text[:500]} if text else {}
    return doc if isinstance(doc, dict) else {}


_BY_STATUS: Final[dict[int, type[StoreError]]] = {
    400: Invalid,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: Throttled,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def error_from(code: int, raw: bytes, what: str, *, retry_after: str | None = None) -> StoreError:
    """The store error for an HTTP error status, carrying the API server's message.

    409 is AlreadyExists or Conflict by the Status reason; 400 and 422 are Invalid; statuses without an
    interface class (401, 403, 500…) are a plain StoreError whose `reason` is the Status reason."""
    return error_from_status(code, status_of(raw), what, retry_after=retry_after)


def error_from_status(code: int, status: JSON, what: str, *, retry_after: str | None = None) -> StoreError:
    """`what: message`, where `what` names the request and its object ("create Queue team-a") and the message
    is the server's, with the field causes of a 422 that it does not already spell out. The error keeps the
    HTTP code, the causes as (field, message) pairs and the Retry-After header."""
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or f"HTTP {code}")
    causes = field_causes(status)
    missing = [
        f"{field}: {text}" if field else text
        for field, text in causes
        if (field and field not in message) or (not field and text not in message)
    ]
    if missing:
        message = f"{message} [{'; '.join(missing)}]"
    cls = AlreadyExists if code == 409 and reason == "AlreadyExists" else _BY_STATUS.get(code, StoreError)
    err = cls(f"{what}: {message}")
    if cls is StoreError:
        err.reason = reason or ("InternalError" if code >= 500 else f"HTTP{code}")
    err.code, err.causes, err.retry_after = code, causes, retry_after
    return err


def field_causes(status: JSON) -> list[tuple[str, str]]:
    """The (field, message) pairs of a Status's `details.causes` (a 422's invalid fields)."""
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    out = []
    for cause in causes if isinstance(causes, list) else ():
        if isinstance(cause, dict) and (cause.get("field") or cause.get("message")):
            out.append((str(cause.get("field") or ""), str(cause.get("message") or cause.get("reason") or "")))
    return out
