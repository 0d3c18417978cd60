"""`kai simulate`'s autoscaler model: the real node-scale-adjuster over the simulated cluster, and a cluster
autoscaler reduced to its effect (the scenario's `autoscaler:`, docs/simulate.md).

- After every cycle the adjuster makes or removes scaling pods for the fractional pods that did not fit.
- A scaling pod that has waited `scaleUpDelay` and that a node of the configured shape could take (its node
  selector, required node affinity and tolerations against the shape's labels and taints) gets capacity: the
  model adds as many nodes of the shape as the waiting scaling pods' GPUs need (first fit), never more than
  `maxNodes` added nodes alive at once. A scaling pod is provided for once; nobody binds it (no kube-scheduler
  here): the real pods go to the new nodes and the adjuster then deletes it.
- With `scaleDownDelay`, an added node with no pod on it for that long is removed.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

from kai_scheduler.api import constants
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.nodescaleadjuster import pods as scaling
from kai_scheduler.nodescaleadjuster.adjuster import NodeScaleAdjuster
from kai_scheduler.scenario.autoscaler import AutoscalerSpec
from kai_scheduler.store.interface import JSON, ClusterStore

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Change:
    time: float  # virtual seconds since the start
    what: str  # "added" or "removed"
    node: str


@dataclass(slots=True)
class AutoscalerModel:
    store: ClusterStore
    clock: Clock
    spec: AutoscalerSpec
    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    adjuster: NodeScaleAdjuster = field(init=False)
    shape: Node = field(init=False)
    changes: list[Change] = field(default_factory=list)
    _waiting_since: dict[str, float] = field(default_factory=dict)  # scaling pod → first seen waiting
    _provided: set[str] = field(default_factory=set)  # scaling pods capacity was added for
    _alive: dict[str, float | None] = field(default_factory=dict)  # added node → idle since (None: busy)
    _next_index: int = 0

    def __post_init__(self) -> None:
        settings = scaling.Settings(
            scheduler_name=self.scheduler_name,
            gpu_memory_to_fraction_ratio=self.spec.gpu_memory_to_fraction_ratio,
            cool_down_seconds=self.spec.cool_down,
        )
        self.adjuster = NodeScaleAdjuster(self.store, self.clock, settings)
        self.shape = Node.from_dict(self.spec.node_template)

    @property
    def added(self) -> list[str]:
        return sorted(self._alive)

    def observe(self, now: float) -> float | None:
        """Run the adjuster and look at the scaling pods and added nodes; when something is due next (virtual
        seconds), or None."""
        self.adjuster.reconcile()
        waiting = self._waiting()
        self._waiting_since = {n: self._waiting_since.get(n, now) for n in waiting}
        self._provided &= set(waiting)
        busy = self._busy_nodes()
        for name, since in list(self._alive.items()):
            if name in busy:
                self._alive[name] = None
            elif since is None:
                self._alive[name] = now
        due = []
        if len(self._alive) < self.spec.max_nodes:  # at maxNodes nothing is due until an added node goes
            due = [t + self.spec.scale_up_delay for n, t in self._waiting_since.items() if self._wants(n, waiting)]
        if self.spec.scale_down_delay is not None:
            due += [t + self.spec.scale_down_delay for t in self._alive.values() if t is not None]
        later = [t for t in due if t > now]
        if any(t <= now for t in due):
            return now
        return min(later) if later else None

    def act(self, now: float) -> bool:
        """Add or remove nodes that are due now; True when the node set changed."""
        waiting = self._waiting()
        ready = [
            n
            for n, t in sorted(self._waiting_since.items())
            if self._wants(n, waiting) and t + self.spec.scale_up_delay <= now
        ]
        changed = False
        if ready:
            changed |= self._scale_up(now, [waiting[n] for n in ready])
        if self.spec.scale_down_delay is not None:
            busy = self._busy_nodes()
            for name, since in sorted(self._alive.items()):
                if since is not None and name not in busy and since + self.spec.scale_down_delay <= now:
                    self.store.delete("nodes", name)
                    del self._alive[name]
                    self.changes.append(Change(now, "removed", name))
                    log.info(f"autoscaler model: removed idle node {name}", extra={"node": name})
                    changed = True
        return changed

    # --- helpers ---

    def _waiting(self) -> dict[str, JSON]:
        items, _ = self.store.list("pods", self.adjuster.settings.namespace)
        return {
            p["metadata"]["name"]: p
            for p in items
            if scaling.is_scaling_pod(p, self.adjuster.settings)
            and not (p.get("spec") or {}).get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
        }

    def _wants(self, name: str, waiting: dict[str, JSON]) -> bool:
        return name not in self._provided and name in waiting and self._fits_shape(waiting[name])

    def _fits_shape(self, pod: JSON) -> bool:
        parsed = Pod.from_dict(pod)
        labels = self.shape.meta.labels
        if parsed.requests.get(constants.RESOURCE_GPU, 0.0) > self.spec.gpus_per_node:
            return False
        if any(labels.get(k) != v for k, v in parsed.node_selector.items()):
            return False
        if parsed.node_affinity and not any(t.matches(labels, self.shape.meta.name) for t in parsed.node_affinity):
            return False
        hard = [t for t in self.shape.taints if t.effect in ("NoSchedule", "NoExecute")]
        return all(any(tol.tolerates(t) for tol in parsed.tolerations) for t in hard)

    def _scale_up(self, now: float, ready: list[JSON]) -> bool:
        room = self.spec.max_nodes - len(self._alive)
        free: list[float] = []  # GPUs left on each node to add
        for pod in ready:
            want = Pod.from_dict(pod).requests.get(constants.RESOURCE_GPU, 0.0)
            slot = next((i for i, left in enumerate(free) if left >= want), None)
            if slot is None:
                if len(free) >= room:
                    continue  # at maxNodes: this one waits for a node to go
                free.append(float(self.spec.gpus_per_node))
                slot = len(free) - 1
            free[slot] -= want
            self._provided.add(pod["metadata"]["name"])
        for _ in free:
            name = f"{self.spec.node_prefix}-{self._next_index}"
            self._next_index += 1
            node = copy.deepcopy(self.spec.node_template)
            node["metadata"]["name"] = name
            node["metadata"].setdefault("labels", {})[constants.LABEL_HOSTNAME] = name
            node["metadata"].pop("creationTimestamp", None)  # the store stamps it now
            node["metadata"].pop("uid", None)
            self.store.create(node)
            self._alive[name] = now
            self.changes.append(Change(now, "added", name))
            log.info(f"autoscaler model: added node {name}", extra={"node": name})
        return bool(free)

    def _busy_nodes(self) -> set[str]:
        items, _ = self.store.list("pods")
        return {
            str(p["spec"]["nodeName"])
            for p in items
            if (p.get("spec") or {}).get("nodeName") in self._alive
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        }
