"""The queue tree of a snapshot, and why a PodGroup's queue cannot take it: not a leaf of this pool's tree
(`queue_problem`), or refusing its namespace under queue access control (`access_problem`)."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kai_scheduler.api import constants
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.queue import Queue, namespace_refusal
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.snapshot.inputs import ClusterObjects, Problem, SnapshotParams


def queue_tree(
    queues: list[Queue], problems: list[Problem], left_out: dict[str, str] | None = None
) -> dict[str, QueueInfo]:
    """The queue tree; a queue with a missing parent or in a parent cycle is dropped with its subtree, with a
    problem on the queue, and (into `left_out`, name → why) the reason a job naming it is told."""
    infos = {q.name: QueueInfo.from_queue(q) for q in sorted(queues, key=lambda q: q.name)}
    dropped: dict[str, str] = {}
    for name, q in infos.items():
        seen, cur = [name], q.parent
        while cur:
            if cur not in infos:
                why = f"parent queue {cur!r} of queue {seen[-1]!r} does not exist"
                problems.append(Problem("Queue", name, "ParentQueueDoesNotExist", why))
                dropped[name] = why
                break
            if cur in seen:
                why = f"queue {name!r} is in a parent cycle (spec.parentQueue): {' → '.join([*seen, cur])}"
                problems.append(Problem("Queue", name, "QueueCycle", why))
                dropped[name] = why
                break
            seen.append(cur)
            cur = infos[cur].parent
    if left_out is not None:
        left_out.update(dropped)
    tree = {n: q for n, q in infos.items() if n not in dropped}
    for name, q in tree.items():
        if q.parent:
            tree[q.parent].children.append(name)
    return tree


@dataclass(frozen=True, slots=True)
class QueueTree:
    """A queue tree with what made it: the cache's Queue objects, in order (an object stands for its version:
    the cache makes a new one for every change), and the problems and left-out queues it found."""

    queues: tuple[Queue, ...]
    tree: dict[str, QueueInfo]
    problems: tuple[Problem, ...]
    left_out: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, queues: list[Queue], last: QueueTree | None) -> QueueTree:
        """The tree of `queues`: `last` again when they are its very objects (most cycles: building every
        queue's vectors again cost tens of milliseconds a cycle with thousands of queues), or its tree when they
        differ from its objects only in their resource versions (a status written to a Queue, as the queue
        controller does after pods start or end: a new object the tree does not read)."""
        if last is not None and len(last.queues) == len(queues):
            if all(map(operator.is_, last.queues, queues)):
                return last
            if all(a is b or _same_but_version(a, b) for a, b in zip(last.queues, queues, strict=True)):
                return cls(tuple(queues), last.tree, last.problems, last.left_out)
        problems: list[Problem] = []
        left_out: dict[str, str] = {}
        tree = queue_tree(queues, problems, left_out)
        return cls(tuple(queues), tree, tuple(problems), tuple(left_out.items()))


def _same_but_version(old: Queue, new: Queue) -> bool:
    """Whether two versions of a queue are equal in everything parsed but the resource version."""
    a, b = old.meta, new.meta
    return all(getattr(a, f) == getattr(b, f) for f in _META_BUT_VERSION) and all(
        getattr(old, f) == getattr(new, f) for f in _QUEUE_BUT_META
    )


_META_BUT_VERSION = tuple(f.name for f in dataclasses.fields(ObjectMeta) if f.name != "resource_version")
_QUEUE_BUT_META = tuple(f.name for f in dataclasses.fields(Queue) if f.name != "meta")


@dataclass(frozen=True, slots=True)
class QueueNotes:
    """Why a queue a job names is not in the tree: `left_out` (name → the parent problem that dropped it) and
    `other_pools` (name → the node-pool label value of a queue of another pool)."""

    left_out: Mapping[str, str] = field(default_factory=dict)
    other_pools: Mapping[str, str] = field(default_factory=dict)
    invalid: Mapping[str, str] = field(default_factory=dict)  # name → the parse error of a queue the cache refused

    def signature(self) -> tuple[object, ...]:
        """The notes as a comparable value (a change rebuilds the carried model)."""
        return (
            tuple(sorted(self.left_out.items())),
            tuple(sorted(self.other_pools.items())),
            tuple(sorted(self.invalid.items())),
        )


def refused_queues(problems: Iterable[Problem]) -> dict[str, str]:
    """The queues that failed to parse (name → their error), for the jobs that name them."""
    return {p.key: p.message for p in problems if p.kind == "Queue" and p.reason == "InvalidObject"}


def queue_problem(
    pg: PodGroup, queues: Mapping[str, QueueInfo], notes: QueueNotes, params: SnapshotParams
) -> Problem | None:
    """The PodGroup's `QueueDoesNotExist` problem when its queue is not a leaf of this pool's tree, saying why:
    missing, left out for its parents, of another node pool (a shard sees only its pool's queues), or not a
    leaf."""
    queue = queues.get(pg.queue)
    if queue is not None and queue.is_leaf:
        return None
    if queue is not None:
        why = "is not a leaf queue"
    elif pg.queue in notes.invalid:
        why = f"is invalid: {notes.invalid[pg.queue]}"
    elif pg.queue in notes.left_out:
        why = f"is left out of the queue tree: {notes.left_out[pg.queue]}"
    elif pg.queue in notes.other_pools:
        key, pool = params.node_pool_label_key, params.partition_label_value
        theirs = (
            f"is labelled {key}={notes.other_pools[pg.queue]}" if notes.other_pools[pg.queue] else f"has no {key} label"
        )
        ours = f"node pool {pool!r}" if pool else f"the node pool of objects without {key}"
        why = f"is not in {ours}, which schedules this job: the queue {theirs} (label the queue and the job alike)"
    else:
        why = "does not exist"
    return Problem("PodGroup", pg.meta.key, constants.REASON_QUEUE_DOES_NOT_EXIST, f"queue {pg.queue!r} {why}")


def access_labels(objects: ClusterObjects, params: SnapshotParams) -> dict[str, Mapping[str, str]]:
    """Each namespace's labels, when queue access control is on (else empty: nothing reads them)."""
    if not params.queue_access_control:
        return {}
    return {ns.name: ns.meta.labels for ns in objects.namespaces}


def access_problem(
    pg: PodGroup, queues: Mapping[str, QueueInfo], labels: Mapping[str, Mapping[str, str]], params: SnapshotParams
) -> Problem | None:
    """The PodGroup's problem when access control is on and its queue (or an ancestor) refuses its namespace."""
    if not params.queue_access_control:
        return None
    namespace = pg.meta.namespace

    def lookup(name: str) -> Queue | None:
        info = queues.get(name)
        return info.queue if info is not None else None

    why = namespace_refusal(pg.queue, namespace, lookup, lambda: labels.get(namespace))
    if why is None:
        return None
    return Problem("PodGroup", pg.meta.key, constants.REASON_NAMESPACE_NOT_ALLOWED, why)
