"""Queue access control in admission (this project's extension, `--queue-access-control`): a pod or PodGroup
whose queue, or an ancestor of it, does not admit its namespace is refused, naming queue and namespace.

The queues and the namespace are read from the store. A queue that cannot be read (missing, unparsable, the
API server away) is not this rule's to judge: the object is let through and the scheduler's own check (the
same `namespace_refusal`) holds the job back if it must.
"""

from __future__ import annotations

from collections.abc import Mapping

from kai_scheduler.api import Namespace, Queue
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.queue import namespace_refusal
from kai_scheduler.store.interface import ClusterStore, StoreError


def refusal(queue: str, namespace: str, store: ClusterStore) -> str | None:
    """Why `namespace` may not submit to `queue`, or None (also when it cannot be told)."""

    def lookup(name: str) -> Queue | None:
        try:
            return Queue.from_dict(store.get("queues", name))
        except (StoreError, ObjectError, OSError):
            return None

    def labels() -> Mapping[str, str] | None:
        try:
            return Namespace.from_dict(store.get("namespaces", namespace)).meta.labels
        except (StoreError, ObjectError, OSError):
            return None

    return namespace_refusal(queue, namespace, lookup, labels)
