"""The embedded kubelet and workload controller: what a real cluster does between scheduling cycles.

Kubelet: a pod bound to a node starts Running; a terminating pod is gone once its grace period has passed
(`instant=True`: at once, as `kai schedule --cycles` wants), or, when it says how long its termination takes
(a scenario's `terminatesAfter`), that long after its deletionTimestamp (never: it stays, stuck terminating).
These decisions are the fake kubelet's (`fakenodes.lifecycle`); the status written here stays minimal
(phase and startTime).

Controller: a pod of a live workload that disappears (evicted, or its node failed) is recreated Pending under
the same name, as a Job or PyTorchJob controller would; workloads being deleted (their PodGroup is) are not
recreated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kai_scheduler.api import constants, mig
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.fields import format_time, parse_time
from kai_scheduler.fakenodes import lifecycle
from kai_scheduler.store.interface import JSON, NotFound
from kai_scheduler.store.memory import MemoryStore


@dataclass(slots=True)
class KubeletStep:
    started: list[str] = field(default_factory=list)
    terminated: list[str] = field(default_factory=list)


class Kubelet:
    def __init__(self, store: MemoryStore, clock: Clock, *, instant: bool = False) -> None:
        self.store = store
        self.clock = clock
        self.instant = instant

    def step(self) -> KubeletStep:
        out = KubeletStep()
        pods, _ = self.store.list("pods", shared=True)  # read only
        now = self.clock.now()
        for pod in pods:
            meta = pod["metadata"]
            key = f"{meta.get('namespace', '')}/{meta['name']}"
            deleting = meta.get("deletionTimestamp")
            if deleting is not None:
                delay = lifecycle.termination_delay(meta)
                if delay is not None:  # a scenario's terminatesAfter: gone that long after deletion
                    due = parse_time(deleting) + delay <= now
                else:
                    due = self.instant or lifecycle.removal_due(deleting, now)
                if due:
                    self.store.finish_deletion(meta.get("namespace", ""), meta["name"])
                    out.terminated.append(key)
            elif lifecycle.awaiting_start(pod):
                self.start(meta.get("namespace", ""), meta["name"])
                out.started.append(key)
        return out

    def start(self, namespace: str, name: str) -> None:
        """Run a pod bound to this node: phase Running, started now."""
        self.store.patch(
            "pods",
            name,
            namespace,
            {"status": {"phase": "Running", "startTime": format_time(self.clock.now())}},
            "status",
        )


class Controller:
    """Recreates the pods of live workloads that vanished; `forget` a workload to stop (it finished)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        # Each pod as first seen, shared with the store (read only): its pending copy is made when it is created
        # again, not kept for every pod (a PodGroup's worth of memory per job of a large scenario).
        self.templates: dict[str, JSON] = {}
        self.deleted_groups: set[str] = set()
        self._remember()

    def _remember(self) -> None:
        """Templates of every pod; a workload is deleted when its PodGroup is being deleted (a scenario's
        `deleted: true`), not merely because all its pods are terminating (evicted pods come back)."""
        pods, _ = self.store.list("pods", shared=True)
        for pod in pods:
            key = f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"
            self.templates[key] = pod
        groups, _ = self.store.list("podgroups", shared=True)
        for group in groups:
            meta = group["metadata"]
            if meta.get("deletionTimestamp"):
                self.deleted_groups.add(f"{meta.get('namespace', '')}/{meta['name']}")

    def track(self, pod: JSON) -> None:
        key = f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"
        self.templates[key] = pod

    def forget(self, key: str) -> None:
        self.templates.pop(key, None)

    def step(self) -> list[str]:
        recreated = []
        for key, pod in sorted(self.templates.items()):
            ns, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
            group = (pod["metadata"].get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME, "")
            if f"{ns}/{group}" in self.deleted_groups:
                continue
            try:
                self.store.get("pods", name, ns, shared=True)  # read only: is it there
            except NotFound:
                self.store.create(pending_copy(pod))  # the store copies what it is given
                recreated.append(key)
        return recreated


_WRITTEN_AT_BINDING = (constants.ANNOTATION_RECEIVED_RESOURCE_TYPE, mig.ANNOTATION_INSTANCES)


def pending_copy(pod: JSON) -> JSON:
    """The pod as its controller would create it again: Pending, unbound, without runtime fields."""
    meta = {
        k: v
        for k, v in pod["metadata"].items()
        if k not in ("uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")
    }
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith(constants.LABEL_GPU_GROUP)}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _WRITTEN_AT_BINDING}
    meta["labels"], meta["annotations"] = labels, annotations
    spec = {k: v for k, v in pod.get("spec", {}).items() if k not in ("nodeName", "schedulingGates")}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
