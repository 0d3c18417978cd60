"""Kubernetes Events written by the components (the scheduler's `Scheduled`, `Unschedulable`, `Evict`, …; the
binder's `Bound` and `BindingError`), as client-go's recorder writes them.

An event is named by its object, the object's uid, its reason and its message, so saying the same thing again is
AlreadyExists (nothing new to say) and a pod made again under the same name gets its own event (`kubectl describe`
shows the events of the object's uid only). Events are best effort: one that cannot be created is one warning
line per reason for the process, and the component goes on.
"""

from __future__ import annotations

import logging
import threading
import zlib

from kai_scheduler.api.fields import format_time
from kai_scheduler.store.interface import JSON, AlreadyExists, Cancelled, ClusterStore, StoreError

log = logging.getLogger(__name__)

_failures_reported: set[str] = set()  # reasons an event write failed for, logged once per process
_failures_lock = threading.Lock()  # events are written by several threads


def pod_ref(namespace: str, name: str, uid: str = "") -> JSON:
    """The `involvedObject` of an event about a pod; the uid only when known (kubectl matches by it when given)."""
    ref: JSON = {"kind": "Pod", "namespace": namespace, "name": name}
    if uid:
        ref["uid"] = uid
    return ref


def event(ref: JSON, kind: str, reason: str, message: str, *, component: str, now: float) -> JSON:
    """The Event about `ref` ({kind, namespace, name, uid}); `kind` is Normal or Warning; `now` in epoch seconds."""
    namespace = ref.get("namespace") or "default"
    digest = zlib.crc32(f"{ref['name']}|{ref.get('uid', '')}|{reason}|{message}".encode())
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref['name']}.{reason.lower()}.{digest:08x}", "namespace": namespace},
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component},
        # As client-go's recorder: without them `kubectl get events` shows LAST SEEN <unknown> and
        # `--sort-by=.lastTimestamp` puts these events first.
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def record(store: ClusterStore, body: JSON) -> None:
    """Create the event; one that exists already is not a failure, any other refusal is said once per reason."""
    try:
        store.create(body)
    except AlreadyExists:
        pass
    except Cancelled as err:  # the process is stopping (and says so once): not a refusal to remember
        log.debug(f"event not recorded: {err}")
    except StoreError as err:
        with _failures_lock:
            first = err.reason not in _failures_reported
            _failures_reported.add(err.reason)
        if first:
            log.warning(f"event not recorded (said once per reason): {err}", extra={"reason": err.reason})
