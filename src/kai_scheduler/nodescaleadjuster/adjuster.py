"""The adjuster's loop: watch pods, plan the scaling pods (`plan`), write the difference.

State lives in the cluster: the scaling pods' labels say which pods they stand for, so a restarted adjuster
(or a new leader) rebuilds everything from one LIST of pods. The only memory of its own is the cool-down of pods
whose scaling pod a node took; a restart forgets it, which at worst creates one scaling pod too early.

A bad pod (an unparsable GPU annotation, say) is logged once per version of it, in one line naming the pod and
the field, and skipped; the others go on.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Gauge

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.nodescaleadjuster import pods
from kai_scheduler.nodescaleadjuster.plan import Demand, Plan, ScalingPod, plan
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Outcome:
    """What one pass wrote (names of scaling pods), for tests, logs and the simulator."""

    created: list[str] = field(default_factory=list)
    extended: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


class Metrics:
    """What a pass leaves, as gauges (on `/metrics` of the component)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.waiting = Gauge(
            "kai_node_scale_adjuster_unschedulable_fractional_pods",
            "Unschedulable fractional-GPU pods of the scheduler, after the last pass",
            registry=registry,
        )
        self.scaling_pods = Gauge(
            "kai_node_scale_adjuster_scaling_pods", "Scaling pods after the last pass", registry=registry
        )
        self.gpus = Gauge(
            "kai_node_scale_adjuster_scaling_gpus",
            "Whole GPUs the scaling pods request, after the last pass",
            registry=registry,
        )


class NodeScaleAdjuster:
    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        settings: pods.Settings | None = None,
        registry: CollectorRegistry | None = None,
        informers: Informers | None = None,
    ) -> None:
        """`informers`: the process's shared informers (a private set when none is given)."""
        self.store = store
        self.clock = clock
        self.settings = settings or pods.Settings()
        self.settings.check()
        self._changes = Changes((informers or Informers(store)).informer("pods"))
        self._demands: dict[str, Demand] = {}  # by uid
        self._uid_of: dict[str, str] = {}  # pod key → uid of its demand
        self._scaling: dict[str, ScalingPod] = {}  # by name
        self._scaling_key: dict[str, str] = {}  # pod key → name, for deletions seen by key
        self._cooling: dict[str, float] = {}  # uid → until
        self._reported: dict[str, str] = {}  # pod key → resourceVersion of the bad version logged
        self._gpus: dict[str, int] = {}  # scaling pod name → GPUs it requests
        self.metrics = Metrics(registry if registry is not None else CollectorRegistry())

    # --- reading ---

    def _changed(self, key: str, obj: JSON | None) -> None:
        name = self._scaling_key.pop(key, None)
        if name is not None:
            self._scaling.pop(name, None)
            self._gpus.pop(name, None)
        uid = self._uid_of.pop(key, None)
        if uid is not None:
            self._demands.pop(uid, None)
        if obj is None:
            self._reported.pop(key, None)
            return
        if pods.is_scaling_pod(obj, self.settings):
            sp = pods.read_scaling_pod(obj)
            self._scaling[sp.name] = sp
            self._scaling_key[key] = sp.name
            self._gpus[sp.name] = pods.gpus_of(obj)
            return
        try:
            demand = pods.demand_of(obj, self.settings)
        except ObjectError as err:
            version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            if self._reported.get(key) != version:
                self._reported[key] = version
                log.warning(f"node-scale-adjuster: skipping pod {key}: {err}", extra={"pod": key})
            return
        self._reported.pop(key, None)
        if demand is not None:
            self._demands[demand.uid] = demand
            self._uid_of[key] = demand.uid

    def demands(self) -> dict[str, Demand]:
        return dict(self._demands)

    def scaling_pods(self) -> dict[str, ScalingPod]:
        return dict(self._scaling)

    # --- one pass ---

    def reconcile(self) -> Outcome:
        for key, obj in self._changes.poll():
            self._changed(key, obj)
        now = self.clock.now()
        self._cooling = {u: t for u, t in self._cooling.items() if t > now and u in self._demands}
        wanted = plan(self._demands, self._scaling.values(), set(self._cooling))
        out = self._apply(wanted, now)
        self.metrics.waiting.set(len(self._demands))
        self.metrics.scaling_pods.set(len(self._scaling))
        self.metrics.gpus.set(sum(self._gpus.get(n, 0) for n in self._scaling))
        return out

    def _apply(self, wanted: Plan, now: float) -> Outcome:
        out = Outcome()
        for uid in wanted.cool:
            if self.settings.cool_down_seconds > 0:
                self._cooling[uid] = now + self.settings.cool_down_seconds
        for name in wanted.delete:
            with contextlib.suppress(NotFound):
                self.store.delete("pods", name, self.settings.namespace, grace_period_seconds=0)
            self._forget(name)
            out.deleted.append(name)
            log.info(f"deleted scaling pod {self.settings.namespace}/{name}", extra={"scaling_pod": name})
        for name, members in sorted(wanted.extend.items()):
            old = self._scaling[name]
            staying = [self._demands[u] for u in sorted(old.members) if u in self._demands]
            gone = [u for u in old.members if u not in self._demands]
            keys = [m.key for m in members]
            # One merge patch: the new members' labels, the departed members' labels removed, and the annotation
            # naming the pods it stands for now.
            labels: dict[str, str | None] = {**pods.member_labels(members)}
            labels.update({pods.MEMBER_LABEL_PREFIX + u: None for u in sorted(gone)})
            annotation = pods.for_annotation([d.key for d in staying] + keys)
            try:
                self.store.patch(
                    "pods",
                    name,
                    self.settings.namespace,
                    {"metadata": {"labels": labels, "annotations": {pods.ANNOTATION_FOR: annotation}}},
                )
            except NotFound:  # gone meanwhile: its pods wait for the next pass
                self._forget(name)
                continue
            self._scaling[name] = ScalingPod(
                name, old.group, frozenset(d.uid for d in staying) | {m.uid for m in members}, old.bound
            )
            out.extended.append(name)
            log.info(
                f"scaling pod {self.settings.namespace}/{name} also stands for {', '.join(keys)}",
                extra={"scaling_pod": name},
            )
        for new in wanted.create:
            body = pods.scaling_pod(new, self.settings)
            try:
                created = self.store.create(body)
            except AlreadyExists:
                created = body
            except NotFound as err:
                log.error(
                    f"node-scale-adjuster: cannot create scaling pods: namespace {self.settings.namespace!r} "
                    f"(--scale-adjust-namespace) is missing; the install creates it: {err}",
                    extra={"namespace": self.settings.namespace},
                )
                break
            sp = pods.read_scaling_pod(created)
            self._scaling[sp.name] = sp
            self._gpus[sp.name] = new.num_devices
            self._scaling_key[f"{self.settings.namespace}/{sp.name}"] = sp.name
            out.created.append(new.name)
            log.info(
                f"created scaling pod {self.settings.namespace}/{new.name} ({new.num_devices} GPU) for "
                f"{', '.join(m.key for m in new.members)}",
                extra={"scaling_pod": new.name, "gpus": new.num_devices},
            )
        return out

    def _forget(self, name: str) -> None:
        self._scaling.pop(name, None)
        self._gpus.pop(name, None)
        self._scaling_key.pop(f"{self.settings.namespace}/{name}", None)
