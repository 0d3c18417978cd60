"""What the status controllers share: a problem logged once per object, and a status write kept by `Retries`.

Each pass recomputes every object a change reaches, so a problem that lasts (a refused write, an unparsable
object) would be logged on every pass: `Problems` logs each (object, reason) once. A status write the API server
refused is due again after a backoff (`store.retries`); one to an object that is gone is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kai_scheduler.store.interface import JSON, ClusterStore, NotFound, StoreError
from kai_scheduler.store.retries import Retries


class Problems:
    """Logs `message` as a warning once per object and reason, on the caller's logger."""

    def __init__(self, log: logging.Logger, message: str) -> None:
        self._log = log
        self._message = message
        self._reported: set[tuple[str, str]] = set()

    def report(self, key: str, reason: str) -> None:
        if (key, reason) not in self._reported:
            self._reported.add((key, reason))
            self._log.warning(self._message, extra={"object": key, "reason": reason})


def patch_status(
    store: ClusterStore,
    resource: str,
    key: str,
    namespace: str,
    name: str,
    status: JSON,
    *,
    retries: Retries,
    problems: Problems,
    gone: Callable[[], object] | None = None,
) -> JSON | None:
    """PATCH `status` onto the status subresource of the object `key`; the object written, or None.

    Refused: `key` is due again after a backoff in `retries`, and the refusal reported once. Gone (NotFound):
    `key` is forgotten and `gone` called. Written: `key` is forgotten by `retries`."""
    try:
        written = store.patch(resource, name, namespace, {"status": status}, "status")
    except NotFound:
        retries.forget(key)
        if gone is not None:
            gone()
        return None
    except StoreError as err:
        retries.failed(key)
        problems.report(key, f"{err.reason}: {err}")
        return None
    retries.succeeded(key)
    return written
