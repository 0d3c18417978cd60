"""Queue validating webhook (`/validate-scheduling-run-ai-v2-queue`): KAI's `queuehooks/queue_validator.go`.

Create and update: the queue must parse with the scheduler's Queue parser (quota and limit -1 or ≥ 0, weight
≥ 0, known resources, readable fields); `spec.resources` is mandatory; a resource that sets both a limit (not
-1) and a quota must not have the quota above the limit (an unlimited quota with a finite limit included);
`spec.parentQueue` must not name the queue itself. With a store, quotas are compared with the parent's as
KAI's optional quota validation does, as warnings only: a child's quota above the parent's, or the children's
quotas together above the parent's.

Delete: a queue whose `status.childQueues` is not empty is rejected (BEHAVIOR.md §1.1).
"""

from __future__ import annotations

from typing import Any

from kai_scheduler.admission.review import JSON, Review, Verdict, allow, deny, written
from kai_scheduler.api import Queue
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.queue import QUEUE_RESOURCES, UNLIMITED
from kai_scheduler.store.interface import ClusterStore, NotFound, StoreError


def validate(review: Review, store: ClusterStore | None = None) -> Verdict:
    if review.operation == "DELETE":
        return _validate_delete(review)
    queue = written(review, Queue.from_dict)
    if isinstance(queue, Verdict):
        return queue
    where = f"Queue {queue.name}"
    spec: Any = review.object.get("spec") or {}
    if not isinstance(spec.get("resources"), dict):
        return deny(f"{where} spec.resources: missing; set gpu, cpu and memory quotas (-1 for unlimited)")
    for key in QUEUE_RESOURCES:
        raw = spec["resources"].get(key) or {}
        res = queue.resources[key]
        both_set = raw.get("quota") is not None and raw.get("limit") is not None
        if both_set and res.limit != UNLIMITED and (res.quota == UNLIMITED or res.quota > res.limit):
            quota = "-1 (unlimited)" if res.quota == UNLIMITED else f"{res.quota:g}"
            return deny(f"{where} spec.resources.{key}.limit: {res.limit:g} is below the quota {quota}")
    if queue.parent_queue == queue.name:
        return deny(f"{where} spec.parentQueue: a queue cannot be its own parent")
    warnings = _quota_warnings(queue, store) if store is not None and queue.parent_queue else []
    return allow(warnings=[*queue.warnings, *warnings])


def _validate_delete(review: Review) -> Verdict:
    status: Any = review.object.get("status") or {}
    children = [str(c) for c in status.get("childQueues") or []]
    if children:
        name = (review.object.get("metadata") or {}).get("name") or review.name
        return deny(
            f"Queue {name}: cannot delete a queue that has child queues ({', '.join(sorted(children))}); "
            "delete or move them first"
        )
    return allow()


def _quota_warnings(queue: Queue, store: ClusterStore) -> list[str]:
    """KAI's optional quota checks against the parent queue; a store error skips them (never blocks)."""
    try:
        parent = Queue.from_dict(store.get("queues", queue.parent_queue))
        siblings = [q for q in store.list("queues")[0] if _parent_of(q) == queue.parent_queue]
    except NotFound:
        return [f"Queue {queue.name} spec.parentQueue: no queue named {queue.parent_queue!r} (yet)"]
    except (StoreError, ObjectError, OSError):
        return []
    warnings = []
    for key in QUEUE_RESOURCES:
        limit = parent.resources[key].quota
        if limit == UNLIMITED:
            continue
        mine = queue.resources[key].quota
        if mine == UNLIMITED or mine > limit:
            warnings.append(
                f"Queue {queue.name} spec.resources.{key}.quota: {mine:g} exceeds the parent "
                f"queue {parent.name}'s quota {limit:g}"
            )
            continue
        total = mine + sum(_quota(q, key) for q in siblings if _name_of(q) != queue.name)
        if total > limit:
            warnings.append(
                f"Queue {queue.name} spec.resources.{key}.quota: the children of {parent.name} "
                f"together ask {total:g}, above its quota {limit:g}"
            )
    return warnings


def _parent_of(obj: JSON) -> str:
    return str((obj.get("spec") or {}).get("parentQueue") or "")


def _name_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _quota(obj: JSON, key: str) -> float:
    try:
        quota = Queue.from_dict(obj).resources[key].quota
    except ObjectError:
        return 0.0
    return float("inf") if quota == UNLIMITED else quota
