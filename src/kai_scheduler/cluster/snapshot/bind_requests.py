"""The carried model's BindRequests, classified as live for their pod or stale, and with a change feed indexed so
that a changed request is classified alone, giving what a classification of every request gives."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field

from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.snapshot.pods import classify_bind_requests
from kai_scheduler.cluster.snapshot.sorted_keys import remove_sorted


@dataclass(slots=True, eq=False)
class BindRequestIndex:
    """The live and stale BindRequests of the last build; with a change feed (`indexed`), every request by its
    own key and by its pod's, so that `classify_changed` looks at the changed ones only."""

    live: dict[str, BindRequest] = field(default_factory=dict)  # pod key → its BindRequest
    stale: list[BindRequest] = field(default_factory=list)  # failed, or naming a node that is not there
    indexed: bool = False  # False: not indexed, every request is looked at (`classify_all`)
    by_key: dict[str, BindRequest] = field(default_factory=dict)  # by the request's own key
    by_pod: dict[str, set[str]] = field(default_factory=dict)  # pod key → keys of the requests naming it
    stale_keys: list[str] = field(default_factory=list)  # keys of `stale`, sorted

    def classify_all(self, brs: list[BindRequest], nodes: dict[str, NodeInfo], *, index: bool) -> set[str]:
        """Classify every BindRequest (live for its pod, or stale); `index`: keep them indexed for
        `classify_changed` (a change feed will name the changed ones). The keys of the pods whose live one
        changed."""
        live, self.stale = classify_bind_requests(brs, nodes)
        rebound = {k for k in self.live.keys() | live.keys() if self.live.get(k) is not live.get(k)}
        self.live = live
        self.indexed = index
        self.by_key, self.by_pod, self.stale_keys = {}, {}, []
        if index:
            for br in brs:
                key = br.meta.key
                self.by_key[key] = br
                self.by_pod.setdefault(_pod_key(br), set()).add(key)
            self.stale_keys = [br.meta.key for br in self.stale]
        return rebound

    def classify_changed(self, changes: dict[str, object], nodes: Mapping[str, NodeInfo]) -> set[str]:
        """`classify_all` for the changed requests alone (key → the request, or None: gone): the same live and
        stale requests, stale ones in key order, and for a pod named by several the last live one in key order,
        as a classification of all."""
        pods: set[str] = set()
        for key, br in changes.items():
            old = self.by_key.get(key)
            if old is br:
                continue
            if old is not None:
                del self.by_key[key]
                pod = _pod_key(old)
                self.by_pod[pod].discard(key)
                if not self.by_pod[pod]:
                    del self.by_pod[pod]
                remove_sorted(self.stale_keys, key)
                pods.add(pod)
            if isinstance(br, BindRequest):
                self.by_key[key] = br
                pod = _pod_key(br)
                self.by_pod.setdefault(pod, set()).add(key)
                if _stale(br, nodes):
                    bisect.insort(self.stale_keys, key)
                pods.add(pod)
        rebound = set()
        for pod in pods:
            live = None
            for key in sorted(self.by_pod.get(pod, ())):
                if not _stale(self.by_key[key], nodes):
                    live = self.by_key[key]
            if self.live.get(pod) is not live:
                rebound.add(pod)
                if live is None:
                    del self.live[pod]
                else:
                    self.live[pod] = live
        self.stale = [self.by_key[k] for k in self.stale_keys]
        return rebound


def _pod_key(br: BindRequest) -> str:
    return f"{br.meta.namespace}/{br.pod_name}"


def _stale(br: BindRequest, nodes: Mapping[str, NodeInfo]) -> bool:
    return br.is_failed or br.selected_node not in nodes
