"""What the status controllers share: a problem logged once per object, a status write whose key is finished in
the controller's `WorkQueue`, and what was last written.

Each pass recomputes every object a change reaches, so a problem that lasts (a refused write, an unparsable
object) would be logged on every pass: `Problems` logs each (object, reason) once. A status write the API server
refused is requeued after its key's backoff (`store.workqueue`); one to an object that is gone is dropped.

A copy of an object the watch brings after this controller wrote its status may be older than the write (the
object changed before the write: another component's annotation, or this controller's own previous status), so
its status is one the write replaced: `Written` says what the status is then, so that the same status is not
written again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kai_scheduler.store.interface import JSON, ClusterStore, NotFound, StoreError
from kai_scheduler.store.workqueue import WorkQueue


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


@dataclass(slots=True)
class _Write:
    uid: str
    status: JSON  # what was written
    replaced: list[JSON | None] = field(default_factory=list)  # the statuses it replaced since the watch last caught up


class Written:
    """The status each object was last given by this controller, until the watch brings a copy that has it."""

    def __init__(self) -> None:
        self._writes: dict[str, _Write] = {}

    def status(self, key: str, uid: str, seen: JSON | None) -> JSON | None:
        """The object's status, `seen` on its latest copy: the status last written when that copy holds one the
        write replaced (the copy is older than the write); `seen` otherwise, and then the write is forgotten (the
        watch has caught up, or another writer has changed the status since)."""
        write = self._writes.get(key)
        if write is None:
            return seen
        if write.uid == uid and seen != write.status and any(seen == old for old in write.replaced):
            return write.status
        del self._writes[key]
        return seen

    def wrote(self, key: str, uid: str, replaced: JSON | None, status: JSON) -> None:
        """`status` written over `replaced`, on the object `key` of `uid`."""
        write = self._writes.get(key)
        if write is None or write.uid != uid:
            write = self._writes[key] = _Write(uid, status)
        write.status = status
        write.replaced.append(replaced)

    def forget(self, key: str) -> None:
        self._writes.pop(key, None)


def patch_status(
    store: ClusterStore,
    resource: str,
    key: str,
    namespace: str,
    name: str,
    status: JSON,
    *,
    queue: WorkQueue,
    problems: Problems,
    gone: Callable[[], object] | None = None,
) -> JSON | None:
    """PATCH `status` onto the status subresource of the object `key`; the object written, or None.

    `key` is being processed in `queue`, and is finished here. Refused: requeued after its backoff, and the refusal
    reported once. Gone (NotFound): forgotten, and `gone` called. Written: done (its backoff starts over)."""
    try:
        written = store.patch(resource, name, namespace, {"status": status}, "status")
    except NotFound:
        queue.forget(key)
        if gone is not None:
            gone()
        return None
    except StoreError as err:
        queue.retry(key)
        problems.report(key, f"{err.reason}: {err}")
        return None
    queue.done(key)
    return written
