"""What the status controllers share: a problem logged once per object, status writes sent by several writer
threads at once (`store.writers`, `--max-concurrent-reconciles`) whose keys are finished in the controller's
`WorkQueue`, and what was last written.

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
from collections.abc import Sequence
from dataclasses import dataclass, field

from kai_scheduler.store import metrics
from kai_scheduler.store.interface import JSON, Cancelled, ClusterStore, NotFound, StoreError
from kai_scheduler.store.workqueue import WorkQueue
from kai_scheduler.store.writers import Writers


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


@dataclass(slots=True)
class StatusWrite:
    """One status PATCH a pass decided on: `status` onto the object `key` (of `uid`), whose status the controller
    took to be `replaced`, so that it becomes `want` (`Written`). `planning`: seconds the pass spent on the key
    before (they count in its reconcile time). `written`, `error`: what the API server answered."""

    key: str
    namespace: str
    name: str
    uid: str
    status: JSON
    replaced: JSON | None
    want: JSON
    planning: float = 0.0
    written: JSON | None = None
    error: StoreError | None = None

    @property
    def gone(self) -> bool:
        return isinstance(self.error, NotFound)


def write_all(
    store: ClusterStore,
    resource: str,
    writes: Sequence[StatusWrite],
    *,
    writers: Writers,
    work: metrics.Controller,
    queue: WorkQueue,
    problems: Problems,
    written: Written,
) -> None:
    """PATCH every write onto the status subresource of its object, by `writers` at once, each one reconcile of
    `work`; then, on the caller's thread and in the writes' order, finish each key (being processed in `queue`).

    The writer threads only send the PATCH and keep the answer on the write: the controller's own state (its
    `queue` bookkeeping aside, which is thread-safe) changes on the caller's thread alone. Refused: requeued after
    its backoff, and the refusal reported once. Gone (NotFound): forgotten. Written: done (its backoff starts
    over) and recorded in `written`."""
    writers.map(lambda write: _send(store, resource, write, work), writes)
    for write in writes:
        if write.gone:
            queue.forget(write.key)
        elif write.error is not None:
            queue.retry(write.key)
            if not isinstance(write.error, Cancelled):  # the process is stopping, and says so once itself
                problems.report(write.key, f"{write.error.reason}: {write.error}")
        else:
            queue.done(write.key)
            written.wrote(write.key, write.uid, write.replaced, write.want)


def _send(store: ClusterStore, resource: str, write: StatusWrite, work: metrics.Controller) -> None:
    item = work.start(write.key, write.planning)
    try:
        write.written = store.patch(resource, write.name, write.namespace, {"status": write.status}, "status")
    except StoreError as err:
        write.error = err
    except BaseException:
        work.done(item, "error")
        raise
    if write.error is not None and not write.gone:  # refused: written again after a backoff
        work.retry()
        work.done(item, "error")
    else:
        work.done(item)
