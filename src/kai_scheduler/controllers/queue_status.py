"""The Queue status controller (KAI `queuecontroller`, BEHAVIOR.md §1.1, §8.4).

For every queue: `status.allocated`, `allocatedNonPreemptible` and `requested` = the sums of its own
PodGroups' `status.resourcesStatus` (PodGroups whose `spec.queue` names it) plus its child queues' totals;
`status.childQueues` = the names of the queues whose `parentQueue` is this queue (sorted; left out when none).
A queue whose parent does not exist is a root of its own. A parent cycle is broken where it closes: that edge
is not counted. Each queue's sums of its own PodGroups are kept as they change (`amounts.RunningTotal`), so a pass
costs what changed, not the queue's size; where kept sums could differ from summing the floats afresh (a fractional
GPU, an amount past 2**53) the queue's PodGroups are summed again in their key order.
A status is written once per queue and pass, and only when it differs from the queue's (or from the one last
written, while the watch brings copies older than that write: `status_write.Written`); a pass computes every
status first, then its PATCHes go out by the writer threads at once (`status_write.write_all`).

Metrics (gauges, labels `queue_name` and `queue_metadata_name` (both the Queue's name, as KAI's queue controller
sets them; the scheduler's `queue_name` is the display name when there is one), `queue_display_name`), prefixed
with the metrics namespace (default `kai`): `kai_queue_info` (1), `kai_queue_deserved_gpus`,
`kai_queue_quota_cpu_cores`, `kai_queue_quota_memory_bytes` (the spec's quotas; -1 = unlimited stays -1),
`kai_queue_allocated_gpus`, `kai_queue_allocated_cpu_cores`, `kai_queue_allocated_memory_bytes`. They live in
the `CollectorRegistry` given (a private one if none): never the process-wide default, so tests and simulations
do not collide.

`MetricLabels` adds labels from the Queue's own labels, as KAI's `--queue-label-to-metric-label` and
`--queue-label-to-default-metric-value` do: after the three above, one metric label per queue label key (in the
keys' order), valued by the queue's label, else the key's default, else "". A queue whose labels change gets
its series under the new values (the old ones go).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Gauge

from kai_scheduler.api import constants
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.queue import UNLIMITED, Queue
from kai_scheduler.controllers import amounts, status_write
from kai_scheduler.controllers.amounts import Amounts
from kai_scheduler.store import metrics
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, ClusterStore
from kai_scheduler.store.metric_names import check_label_name, check_namespace
from kai_scheduler.store.workqueue import WorkQueue
from kai_scheduler.store.writers import Writers

log = logging.getLogger(__name__)

CONTROLLER = "queue"  # in the `controller` label of controller-runtime's series

FIELDS = ("allocated", "allocatedNonPreemptible", "requested")
LABELS = ("queue_name", "queue_metadata_name", "queue_display_name")
MEGABYTE = 1_000_000


@dataclass(frozen=True, slots=True)
class _GroupFigures:
    queue: str
    figures: tuple[Amounts, Amounts, Amounts]  # as FIELDS
    raw: JSON  # the `resourcesStatus` they were read from


Totals = tuple[amounts.RunningTotal, amounts.RunningTotal, amounts.RunningTotal]  # as FIELDS


@dataclass(frozen=True, slots=True)
class MetricLabels:
    """Queue label key → metric label (`to_metric`), and → the value when a queue has no such label (`defaults`)."""

    to_metric: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        taken: dict[str, str] = {}  # metric label → the queue label key it reads
        for key in sorted(self.to_metric):
            name = self.to_metric[key]
            try:
                check_label_name(name)
            except ValueError as err:
                raise ValueError(f"queue label {key!r}: {err}") from None
            if name in LABELS:
                raise ValueError(f"queue label {key!r}: {name!r} is already a label of every queue series")
            if name in taken:
                raise ValueError(
                    f"queue label {key!r}: {name!r} is already the metric label of queue label {taken[name]!r}"
                )
            taken[name] = key

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.to_metric[key] for key in sorted(self.to_metric))

    def values(self, queue_labels: Mapping[str, str]) -> tuple[str, ...]:
        return tuple(queue_labels.get(key, self.defaults.get(key, "")) for key in sorted(self.to_metric))


class QueueMetrics:
    """The kai_queue_* gauges of one registry; one label set per queue."""

    def __init__(self, registry: CollectorRegistry, namespace: str = "kai", extra: MetricLabels | None = None) -> None:
        check_namespace(namespace)
        self.extra = extra if extra is not None else MetricLabels()
        labels = (*LABELS, *self.extra.names)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, labels, namespace=namespace, registry=registry)

        self.info = gauge("queue_info", "Queues known to the queue controller (always 1)")
        self.deserved_gpus = gauge("queue_deserved_gpus", "GPU quota of the queue (-1: unlimited)")
        self.quota_cpu = gauge("queue_quota_cpu_cores", "CPU quota of the queue in cores (-1: unlimited)")
        self.quota_memory = gauge("queue_quota_memory_bytes", "Memory quota of the queue in bytes (-1: unlimited)")
        self.allocated_gpus = gauge("queue_allocated_gpus", "GPUs allocated to the queue and its children")
        self.allocated_cpu = gauge("queue_allocated_cpu_cores", "CPU cores allocated to the queue and its children")
        self.allocated_memory = gauge(
            "queue_allocated_memory_bytes", "Memory bytes allocated to the queue and its children"
        )
        self._labels: dict[str, tuple[str, ...]] = {}
        self._last: dict[str, tuple[object, ...]] = {}  # what each queue's gauges were last set from

    def set(self, queue: Queue, allocated: Amounts, queue_labels: Mapping[str, str] | None = None) -> None:
        """The queue's gauges; `queue_labels`: the Queue's labels as stored (its parsed ones when not given)."""
        own = queue.meta.labels if queue_labels is None else queue_labels
        labels = (queue.name, queue.name, queue.display_name, *self.extra.values(own))
        figures = (
            queue,
            *(
                allocated.get(r, 0.0)
                for r in (constants.RESOURCE_GPU, constants.RESOURCE_CPU, constants.RESOURCE_MEMORY)
            ),
        )
        if self._labels.get(queue.name, labels) != labels:
            self.remove(queue.name)
        elif self._last.get(queue.name) == figures:
            return
        self._labels[queue.name] = labels
        self._last[queue.name] = figures
        quota = queue.resources
        self.info.labels(*labels).set(1)
        self.deserved_gpus.labels(*labels).set(quota["gpu"].quota)
        self.quota_cpu.labels(*labels).set(_scaled(quota["cpu"].quota, 1 / 1000))
        self.quota_memory.labels(*labels).set(_scaled(quota["memory"].quota, MEGABYTE))
        self.allocated_gpus.labels(*labels).set(allocated.get(constants.RESOURCE_GPU, 0.0))
        self.allocated_cpu.labels(*labels).set(allocated.get(constants.RESOURCE_CPU, 0.0) / 1000)
        self.allocated_memory.labels(*labels).set(allocated.get(constants.RESOURCE_MEMORY, 0.0))

    def remove(self, name: str) -> None:
        labels = self._labels.pop(name, None)
        self._last.pop(name, None)
        if labels is None:
            return
        for gauge in (
            self.info,
            self.deserved_gpus,
            self.quota_cpu,
            self.quota_memory,
            self.allocated_gpus,
            self.allocated_cpu,
            self.allocated_memory,
        ):
            gauge.remove(*labels)

    def names(self) -> list[str]:
        return sorted(self._labels)


class QueueStatusController:
    def __init__(
        self,
        store: ClusterStore,
        registry: CollectorRegistry | None = None,
        queue: WorkQueue | None = None,
        metrics_namespace: str = "kai",
        metric_labels: MetricLabels | None = None,
        informers: Informers | None = None,
        writers: Writers | None = None,
    ) -> None:
        """`informers`: the process's shared informers (a private set when none is given). `queue`: the Queues to
        write, a refused write requeued after the key's backoff (a new one when none is given). `writers`: the
        threads that send the status writes (none given: one at a time, on the caller's thread)."""
        self.store = store
        self._writers = writers if writers is not None else Writers(1, "kai-status")
        self.queue = queue if queue is not None else WorkQueue()
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = QueueMetrics(self.registry, metrics_namespace, metric_labels)
        # controller-runtime's series of KAI's `queue` controller: a reconcile is one Queue's status and gauges.
        self.work = metrics.controller(registry, CONTROLLER, self._writers.count)
        informers = informers or Informers(store)
        self._queue_changes = Changes(informers.informer("queues"))
        self._group_changes = Changes(informers.informer("podgroups"))
        self._queues: dict[str, JSON] = {}
        self._groups: dict[str, _GroupFigures] = {}
        self._members: dict[str, set[str]] = defaultdict(set)  # queue → its PodGroup keys
        self._running: dict[str, Totals] = {}  # queue → the sums of its PodGroups' figures, kept as they change
        self._own: dict[str, tuple[Amounts, Amounts, Amounts]] = {}
        self._totals: dict[str, tuple[Amounts, Amounts, Amounts]] = {}
        self._children_of: dict[str, list[str]] = {}
        self._parsed: dict[str, tuple[JSON, Queue | None]] = {}  # name → (the spec it was parsed from, queue)
        self._problems = status_write.Problems(log, "Queue status not computed as asked")
        self._written = status_write.Written()

    def reconcile(self) -> list[str]:
        """Bring every queue's status and metrics up to date after what changed; return the queues written.

        Only the queues whose own PodGroups changed and their ancestors are revisited, unless a queue came,
        went or changed its spec (then all are)."""
        dirty: set[str] = set()  # the queues whose PodGroups changed
        resum: set[str] = set()  # those of them whose PodGroups' figures changed
        for key, obj in self._group_changes.poll():
            self._group_changed(key, obj, dirty, resum)
        reshaped = False
        relabelled: set[str] = set()  # queues whose own labels changed while metric labels are read from them
        for name, obj in self._queue_changes.poll():
            old = self._queues.pop(name, None)
            if obj is None:
                self.metrics.remove(name)
                self._parsed.pop(name, None)
                self.queue.forget(name)
                self._written.forget(name)
                reshaped = True
                continue
            self._queues[name] = obj
            reshaped = reshaped or old is None or old.get("spec") != obj.get("spec")
            if self.metrics.extra.to_metric and old is not None and _labels(old) != _labels(obj):
                relabelled.add(name)
        for queue in resum:
            self._own[queue] = self._own_figures(queue)
        if reshaped:
            self._children_of = self._children()
            affected = set(self._queues)
        else:
            affected = self._with_ancestors(dirty) | relabelled
        self.queue.add(affected & self._queues.keys())
        names = self.queue.take()  # with those whose backoff is over
        for name in set(names) - self._queues.keys():
            self.queue.forget(name)
        names = [name for name in names if name in self._queues]
        if not names:
            return []
        totals = {name: figures for name, figures in self._totals.items() if name not in names}
        work = self.work
        work.add(names)
        writes: dict[str, status_write.StatusWrite] = {}
        try:
            # Every status is computed here, from the controller's state at this pass; only the PATCHes go to the
            # writer threads, and what they answered is taken in on this thread (`status_write.write_all`).
            for name in names:
                began = work.now()
                try:
                    figures = self._total(name, self._children_of, totals, set())
                    write = self._plan(name, self._children_of.get(name, []), figures)
                except BaseException:
                    work.done(work.start(name, work.now() - began), "error")
                    raise
                if write is None:  # nothing to write: its reconcile was the planning
                    work.done(work.start(name, work.now() - began))
                else:
                    write.planning = work.now() - began
                    writes[name] = write
            status_write.write_all(
                self.store,
                "queues",
                list(writes.values()),
                writers=self._writers,
                work=work,
                queue=self.queue,
                problems=self._problems,
                written=self._written,
            )
        finally:  # an error no step expects: the queues it left are written again after the backoff
            self.queue.retry_unfinished(names)
        for name in names:
            done = writes.get(name)
            if done is not None and done.written is not None:
                self._queues[name] = done.written
            self._set_metrics(name, totals[name][0])
        self._totals = {name: totals[name] for name in self._queues if name in totals}
        return [name for name, write in writes.items() if write.written is not None]

    def _with_ancestors(self, queues: set[str]) -> set[str]:
        out: set[str] = set()
        for name in queues:
            while name in self._queues and name not in out:
                out.add(name)
                parent = (self._queues[name].get("spec") or {}).get("parentQueue")
                name = parent if isinstance(parent, str) else ""
        return out

    def _group_changed(self, key: str, obj: JSON | None, dirty: set[str], resum: set[str]) -> None:
        old = self._groups.pop(key, None)
        queue = str((obj.get("spec") or {}).get("queue") or "") if obj is not None else ""
        status = ((obj.get("status") or {}).get("resourcesStatus") or {}) if obj is not None else {}
        if old is not None and (obj is None or old.queue != queue):
            left = self._members[old.queue]
            left.discard(key)
            if not left:
                del self._members[old.queue]
            self._move(old.queue, old.figures, None)
            dirty.add(old.queue)
            resum.add(old.queue)
            old = None
        if obj is None:
            return
        dirty.add(queue)
        if old is not None and old.raw == status:  # another field changed (an annotation, the spec): same figures
            self._groups[key] = old
            return
        figures = tuple(
            old.figures[i]
            if old is not None and old.raw.get(f) == status.get(f)
            else amounts.from_resource_list(status.get(f))
            for i, f in enumerate(FIELDS)
        )
        group = _GroupFigures(queue, (figures[0], figures[1], figures[2]), status)
        self._groups[key] = group
        self._members[queue].add(key)
        if self._move(queue, old.figures if old is not None else None, group.figures):
            resum.add(queue)

    def _move(
        self,
        queue: str,
        old: tuple[Amounts, Amounts, Amounts] | None,
        new: tuple[Amounts, Amounts, Amounts] | None,
    ) -> bool:
        """Take a PodGroup's `old` figures out of the queue's running totals and put its `new` ones in; whether
        they changed."""
        running = self._running.get(queue)
        if running is None:
            running = self._running[queue] = (amounts.RunningTotal(), amounts.RunningTotal(), amounts.RunningTotal())
        changed = False
        for i, total in enumerate(running):
            before, after = old[i] if old is not None else None, new[i] if new is not None else None
            if before == after:
                continue
            changed = True
            if before is not None:
                total.add(before, -1)
            if after is not None:
                total.add(after)
        if not any(running):
            del self._running[queue]
        return changed

    def _own_figures(self, queue: str) -> tuple[Amounts, Amounts, Amounts]:
        """The sums of the queue's own PodGroups' figures: from the running totals where they are what summing
        afresh gives, else summed afresh in the PodGroups' key order."""
        running = self._running.get(queue)
        if running is None:
            return {}, {}, {}
        kept = running[0].value(), running[1].value(), running[2].value()
        if kept[0] is not None and kept[1] is not None and kept[2] is not None:
            return kept[0], kept[1], kept[2]
        members = [self._groups[k].figures for k in sorted(self._members.get(queue, ()))]
        return (
            amounts.total(f[0] for f in members),
            amounts.total(f[1] for f in members),
            amounts.total(f[2] for f in members),
        )

    def _children(self) -> dict[str, list[str]]:
        children: dict[str, list[str]] = defaultdict(list)
        for name, queue in sorted(self._queues.items()):
            parent = (queue.get("spec") or {}).get("parentQueue")
            if isinstance(parent, str) and parent in self._queues and parent != name:
                children[parent].append(name)
        return children

    def _total(
        self,
        name: str,
        children: dict[str, list[str]],
        totals: dict[str, tuple[Amounts, Amounts, Amounts]],
        path: set[str],
    ) -> tuple[Amounts, Amounts, Amounts]:
        """Own figures plus the children's totals, memoised; a child already on the path (a cycle) is skipped."""
        if name in totals:
            return totals[name]
        path.add(name)
        own = self._own.get(name, ({}, {}, {}))
        figures = (dict(own[0]), dict(own[1]), dict(own[2]))
        for child in children.get(name, ()):
            if child in path:
                continue
            sub = self._total(child, children, totals, path)
            for i in range(3):
                amounts.add(figures[i], sub[i])
        path.discard(name)
        totals[name] = figures
        return figures

    def _plan(
        self, name: str, children: list[str], figures: tuple[Amounts, Amounts, Amounts]
    ) -> status_write.StatusWrite | None:
        """The queue's status write; None (the key done) when its status already holds these figures and children."""
        queue = self._queues[name]
        seen = queue.get("status") or {}
        uid = str((queue.get("metadata") or {}).get("uid") or "")
        status = self._written.status(name, uid, {f: seen.get(f) for f in (*FIELDS, "childQueues")}) or {}
        want: JSON = {f: amounts.to_resource_list(figures[i]) for i, f in enumerate(FIELDS)}
        patch = {f: amounts.replacing(status.get(f), want[f]) for f in FIELDS if status.get(f) != want[f]}
        if children != (status.get("childQueues") or []):
            patch["childQueues"] = children or None
        if not patch:
            self.queue.done(name)
            return None
        return status_write.StatusWrite(name, "", name, uid, patch, status, want | {"childQueues": children or None})

    def _set_metrics(self, name: str, allocated: Amounts) -> None:
        raw = self._queues[name]
        cached = self._parsed.get(name)
        if cached is None or cached[0] != raw.get("spec"):
            try:
                cached = (raw.get("spec") or {}, Queue.from_dict(raw))
            except ObjectError as err:
                self._problems.report(name, str(err))
                cached = (raw.get("spec") or {}, None)
            self._parsed[name] = cached
        queue = cached[1]
        if queue is None:
            self.metrics.remove(name)
        else:
            self.metrics.set(queue, allocated, _labels(raw))


def _labels(queue: JSON) -> Mapping[str, str]:
    labels = (queue.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _scaled(quota: float, factor: float) -> float:
    return quota if quota == UNLIMITED else quota * factor
