"""Which pods the pod grouper looks at: KAI's selective monitoring (`--pod-label-selector`,
`--namespace-label-selector`; KAI `cmd/podgrouper/app/app.go` `getCacheOptions`, `pkg/podgrouper/pod_controller.go`
`eventFilterFn`).

A pod is in scope when it carries every label of the pod selector and its namespace every label of the namespace
selector (an empty selector takes all). The grouper reads pods from the process's one shared pod informer, which
the scheduler, binder and controllers read too, and applies the pod selector to what it hands over (`selected`): a
pod leaving the selector is to the grouper as a pod deleted, as to KAI's podgrouper, whose informer cache is built
with the selector (a second LIST and WATCH of pods in a process that already has one). The namespace selector needs
the namespaces' labels: they are read from the namespace informer (only with a namespace selector), and a
namespace its watch has not brought yet is read once. A namespace that comes to match has its pods looked at again
at once, from the pod informer's cache; KAI's event filter lets them through on their next change (or its
informer's resync).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kai_scheduler.api.selectors import LabelSelector
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)


def selector_of(labels: Mapping[str, str]) -> LabelSelector | None:
    """The label selector of a `key: value` map (None for an empty one: everything matches)."""
    return LabelSelector(tuple(sorted(labels.items()))) if labels else None


class Scope:
    def __init__(
        self,
        store: ClusterStore,
        pod_labels: Mapping[str, str],
        namespace_labels: Mapping[str, str],
        informers: Informers | None = None,
    ) -> None:
        self.store = store
        self.pods = selector_of(pod_labels)
        self._namespaces = selector_of(namespace_labels)
        self._feed = (
            Changes((informers or Informers(store)).informer("namespaces")) if self._namespaces is not None else None
        )
        # namespace → its labels, read from the store because the informer lacked it, until its watch brings it
        self._read: dict[str, Mapping[str, str]] = {}
        self._polled = False
        self._entered: set[str] = set()

    def refresh(self) -> None:
        """Take the namespace changes since the last call; note those that came to match (after the first)."""
        if self._feed is None:
            return
        for name, before, obj in self._feed.poll_updates():
            read = self._read.pop(name, None)
            was = self._matches(_labels(before) if before is not None else read)
            if obj is None:
                continue
            if self._polled and not was and self._matches(_labels(obj)):
                self._entered.add(name)
        self._polled = True

    def entered(self) -> list[str]:
        """The namespaces that came to match since the last call, by name."""
        out, self._entered = sorted(self._entered), set()
        return out

    def selected(self, pod: JSON) -> bool:
        """Whether the pod's labels match the pod selector."""
        return self.pods is None or self.pods.matches((pod.get("metadata") or {}).get("labels") or {})

    def covers(self, pod: JSON) -> bool:
        """Whether the pod is one to group: its labels and its namespace's match."""
        if not self.selected(pod):
            return False
        meta = pod.get("metadata") or {}
        return self._namespaces is None or self._matches(self._namespace_labels(str(meta.get("namespace", ""))))

    def _namespace_labels(self, name: str) -> Mapping[str, str] | None:
        known = self._feed.informer.get(name) if self._feed is not None else None
        if known is not None:
            return _labels(known)
        if name not in self._read:
            try:
                obj = self.store.get("namespaces", name)
            except NotFound:
                return None
            except StoreError as err:  # as KAI's filter: a namespace not read is not matched (till the next change)
                log.warning("namespace not read; its pod is not grouped", extra={"namespace": name, "reason": str(err)})
                return None
            self._read[name] = _labels(obj)
        return self._read[name]

    def _matches(self, labels: Mapping[str, str] | None) -> bool:
        return labels is not None and (self._namespaces is None or self._namespaces.matches(labels))


def _labels(namespace: JSON) -> Mapping[str, str]:
    labels = (namespace.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}
