"""GPU reservation pods: one per GPU group, holding the physical GPU its fractional pods share (§6, §8.1).

KAI `pkg/binder/binding/resourcereservation/resource_reservation.go`. Before a fractional pod is bound (the
`gpusharing` plugin's pre-bind step), each of its BindRequest's `selectedGPUGroups` needs a reservation pod in
namespace `kai-resource-reservation`:

- found by the label `runai-gpu-group=<group>` and reused, or created as `gpu-reservation-<hash(node/group)>`,
  pinned to the node with `spec.nodeName`, requesting `nvidia.com/gpu: 1`, runtime class `nvidia`, labelled
  `app=kai-resource-reservation` and `runai-gpu-group=<group>`, with the karpenter do-not-disrupt annotation
  and the fractional pod's tolerations;
- the reservation pod learns which device the device plugin gave it and writes the index into its annotation
  `run.ai/reserve_for_gpu_index`. Binding waits for it (`ReservationPending`), failing after the allocation
  timeout (40 s). On the embedded cluster there is no device plugin: with `assign_indices` the binder hands out
  the lowest index no other reservation pod on the node holds, as the plugin would on an empty node.

`collect(in_flight)` deletes reservation pods whose group has no pods left (no live pod labelled with the group)
and no in-flight BindRequest selecting it (the binder knows those from its own watch); the binder runs it on every
sync. Which groups pods hold comes from a watch of pods (`GroupUse`), as KAI's binder reads its pod informer, so a
collection costs what changed since the last one, not a LIST of every shared-GPU pod and BindRequest.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants, reservation_pod
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.binder.plugins.interface import PreBindFailed, PreBindPending
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound

log = logging.getLogger(__name__)

ANNOTATION_GPU_INDEX = "run.ai/reserve_for_gpu_index"
ANNOTATION_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
LABEL_APP = "app"
CONTAINER_NAME = "resource-reservation"
DEFAULT_IMAGE = "ghcr.io/nvidia/kai-scheduler/resource-reservation:latest"
DEFAULT_ALLOCATION_TIMEOUT = 40.0  # seconds: --resource-reservation-allocation-timeout
_TERMINAL = ("Succeeded", "Failed")


class ReservationPending(PreBindPending):
    """A reservation pod exists but has not reported its GPU index yet: try the bind again later."""


class ReservationFailed(PreBindFailed):
    """A GPU group could not be reserved (timeout, or its pod sits on another node); the bind fails."""

    reason = "ReservationFailed"


@dataclass(frozen=True, slots=True)
class ReservationConfig:
    namespace: str = constants.RESERVATION_NAMESPACE
    runtime_class: str = constants.DEFAULT_RESERVATION_RUNTIME_CLASS_NAME  # "" = the reservation pods name none
    image: str = DEFAULT_IMAGE
    service_account: str = constants.RESERVATION_SERVICE_ACCOUNT  # "" = the namespace's default
    # Added to the pods (api/reservation_pod): CPU and memory requests and limits, the pod's and container's
    # security contexts.
    resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    pod_security_context: Mapping[str, Any] = field(default_factory=dict)
    container_security_context: Mapping[str, Any] = field(default_factory=dict)
    allocation_timeout: float = DEFAULT_ALLOCATION_TIMEOUT
    assign_indices: bool = False  # the embedded cluster: the binder stands in for the device plugin


class Reservations:
    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        config: ReservationConfig | None = None,
        informers: Informers | None = None,
    ) -> None:
        """`informers`: the process's shared informers (a private set when none is given)."""
        self.store = store
        self.clock = clock
        self.config = config or ReservationConfig()
        self.use = GroupUse(store, self.config.namespace, informers or Informers(store))

    def reserve(self, br: BindRequest, pod: JSON) -> dict[str, str]:
        """GPU index per selected group, creating or reusing each group's reservation pod on the node.

        Raises ReservationPending while an index is not known yet, ReservationFailed when it never will be."""
        indices = {}
        for group in br.selected_gpu_groups:
            reservation = self._find(group) or self._create(br.selected_node, group, pod)
            node = (reservation.get("spec") or {}).get("nodeName", "")
            if node != br.selected_node:
                raise ReservationFailed(f"GPU group {group} is reserved on node {node!r}, not {br.selected_node!r}")
            indices[group] = self._index(reservation)
        return indices

    def collect(self, in_flight: Iterable[str] = ()) -> list[str]:
        """Delete the reservation pods of groups no live pod holds and no in-flight BindRequest (`in_flight`: the
        groups such requests select) needs; their names."""
        self.use.refresh()
        keep = set(in_flight)
        deleted = []
        for group in sorted(self.use.unheld):
            if self.use.held.get(group, 0) > 0:
                self.use.unheld.discard(group)
                continue
            if group in keep:
                continue  # looked at again once the request is done
            self.use.unheld.discard(group)
            for name in sorted(self.use.reservations.pop(group, ())):
                try:
                    self.store.delete("pods", name, self.config.namespace, grace_period_seconds=0)
                except NotFound:
                    continue
                deleted.append(name)
                log.info("reservation pod collected", extra={"pod": name, "group": group})
        return deleted

    def pod_name(self, node: str, group: str) -> str:
        digest = hashlib.sha256(f"{node}/{group}".encode()).hexdigest()[:12]
        return f"gpu-reservation-{digest}"

    # --- internals -------------------------------------------------------------------------------------------

    def _find(self, group: str) -> JSON | None:
        """The group's first live pod (by name) in the reservation namespace: the one the pod watch names, read
        and checked, else a listing by label (a watch may lag behind a store that is not in this process)."""
        self.use.refresh()
        names = sorted(self.use.grouped.get(group, ()))
        if names:
            try:
                pod = self.store.get("pods", names[0], self.config.namespace)
            except NotFound:
                pod = None
            meta = pod["metadata"] if pod is not None else {}
            if (
                pod is not None
                and not meta.get("deletionTimestamp")
                and ((meta.get("labels") or {}).get(constants.LABEL_GPU_GROUP) == group)
            ):
                return pod
        found, _ = self.store.list("pods", self.config.namespace, f"{constants.LABEL_GPU_GROUP}={group}")
        live = [p for p in found if not p["metadata"].get("deletionTimestamp")]
        return live[0] if live else None

    def _create(self, node: str, group: str, pod: JSON) -> JSON:
        meta = {
            "name": self.pod_name(node, group),
            "namespace": self.config.namespace,
            "labels": {LABEL_APP: constants.RESERVATION_APP_LABEL_VALUE, constants.LABEL_GPU_GROUP: group},
            "annotations": {ANNOTATION_DO_NOT_DISRUPT: "true"},
        }
        one_gpu = {constants.RESOURCE_GPU: "1"}
        config = self.config
        container: JSON = {
            "name": CONTAINER_NAME,
            "image": config.image,
            "imagePullPolicy": "IfNotPresent",
            "resources": {key: {**config.resources.get(key, {}), **one_gpu} for key in reservation_pod.RESOURCE_KEYS},
            "env": _own_pod_env(),
        }
        if config.container_security_context:
            container["securityContext"] = copy.deepcopy(dict(config.container_security_context))
        spec: JSON = {"nodeName": node, "containers": [container]}
        if config.pod_security_context:
            spec["securityContext"] = copy.deepcopy(dict(config.pod_security_context))
        if config.service_account:
            spec["serviceAccountName"] = config.service_account
        if config.runtime_class:
            spec["runtimeClassName"] = config.runtime_class
        tolerations = (pod.get("spec") or {}).get("tolerations")
        if tolerations:
            spec["tolerations"] = list(tolerations)
        try:
            created = self.store.create(
                {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
            )
        except AlreadyExists as err:  # an earlier reservation pod of this group is still terminating
            raise ReservationPending(f"reservation pod {meta['name']} is still terminating") from err
        log.info("reservation pod created", extra={"pod": meta["name"], "node": node, "group": group})
        return created

    def _index(self, reservation: JSON) -> str:
        meta = reservation["metadata"]
        index = meta.get("annotations", {}).get(ANNOTATION_GPU_INDEX)
        if index is not None:
            return str(index)
        if self.config.assign_indices:
            return self._assign(reservation)
        created = meta.get("creationTimestamp")
        age = self.clock.now() - parse_time(created) if created else 0.0
        if age > self.config.allocation_timeout:
            raise ReservationFailed(
                f"reservation pod {meta['name']} did not report its GPU index within "
                f"{self.config.allocation_timeout:g}s"
            )
        raise ReservationPending(f"reservation pod {meta['name']} has not reported its GPU index yet")

    def _assign(self, reservation: JSON) -> str:
        """Emulate the device plugin: the lowest GPU index no other reservation pod on the node holds."""
        node = reservation["spec"]["nodeName"]
        self.use.refresh()  # the reservation pods as the store has them now (this one included)
        taken = set(self.use.indices.get(node, {}).values())
        index = next(str(i) for i in range(len(taken) + 1) if str(i) not in taken)
        name = reservation["metadata"]["name"]
        patch = {"metadata": {"annotations": {ANNOTATION_GPU_INDEX: index}}}
        self.store.patch("pods", name, self.config.namespace, patch)
        return index


@dataclass
class GroupUse:
    """Which GPU groups live pods hold, and the live reservation pods of each group, kept from a watch of pods.

    `unheld`: groups that may have lost their last pod, or gained a reservation pod, since `collect` last
    looked at them; only these are looked at again. `indices`: per node, the GPU index annotation (None before
    one is set) of every reservation pod on it, terminating ones included (they still hold their device), for
    the emulated device plugin."""

    store: ClusterStore
    namespace: str
    informers: Informers
    held: Counter[str] = field(default_factory=Counter)  # group → live pods labelled with it
    reservations: dict[str, set[str]] = field(default_factory=dict)  # group → its live reservation pods' names
    unheld: set[str] = field(default_factory=set)
    _pods: Changes = field(init=False)
    _holds: dict[str, tuple[str, ...]] = field(default_factory=dict)  # pod key → the groups it holds
    _reserves: dict[str, str] = field(default_factory=dict)  # reservation pod name → its group
    indices: dict[str, dict[str, str | None]] = field(default_factory=dict)  # node → reservation pod → index
    _node_of: dict[str, str] = field(default_factory=dict)  # reservation pod name → its node in `indices`
    # Group → the live pods of the namespace labelled with it (what `_find` looks for).
    grouped: dict[str, set[str]] = field(default_factory=dict)
    _group_of: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._pods = Changes(self.informers.informer("pods"))

    def refresh(self) -> None:
        for key, pod in self._pods.poll():
            if pod is not None and pod["metadata"].get("namespace") == self.namespace:
                self._device(pod["metadata"]["name"], pod)
                self._reservation(pod)
            elif pod is None and key.startswith(self.namespace + "/"):
                self._device(key.split("/", 1)[1], None)
                self._drop_reservation(key.split("/", 1)[1])
            else:
                self._hold(key, () if pod is None else tuple(_pod_groups(pod)))

    def _hold(self, key: str, groups: tuple[str, ...]) -> None:
        before = self._holds.pop(key, ())
        if groups:
            self._holds[key] = groups
        self.held.update(groups)
        self.held.subtract(before)
        for group in before:
            if self.held[group] <= 0:
                del self.held[group]
                self.unheld.add(group)

    def _device(self, name: str, pod: JSON | None) -> None:
        """Keep `indices` and `grouped` for one pod of the namespace (None: deleted)."""
        node = self._node_of.pop(name, None)
        if node is not None:
            on_node = self.indices[node]
            del on_node[name]
            if not on_node:
                del self.indices[node]
        group = self._group_of.pop(name, None)
        if group is not None:
            names = self.grouped[group]
            names.discard(name)
            if not names:
                del self.grouped[group]
        labels = (pod["metadata"].get("labels") or {}) if pod is not None else {}
        if pod is not None and constants.LABEL_GPU_GROUP in labels and not pod["metadata"].get("deletionTimestamp"):
            self._group_of[name] = labels[constants.LABEL_GPU_GROUP]
            self.grouped.setdefault(labels[constants.LABEL_GPU_GROUP], set()).add(name)
        if pod is None or (pod["metadata"].get("labels") or {}).get(LABEL_APP) != constants.RESERVATION_APP_LABEL_VALUE:
            return
        node = (pod.get("spec") or {}).get("nodeName") or ""
        self._node_of[name] = node
        index = (pod["metadata"].get("annotations") or {}).get(ANNOTATION_GPU_INDEX)
        self.indices.setdefault(node, {})[name] = index

    def _reservation(self, pod: JSON) -> None:
        meta = pod["metadata"]
        if meta.get("labels", {}).get(LABEL_APP) != constants.RESERVATION_APP_LABEL_VALUE:
            return
        name = meta["name"]
        self._drop_reservation(name)
        if meta.get("deletionTimestamp"):
            return  # already going
        group = meta.get("labels", {}).get(constants.LABEL_GPU_GROUP, "")
        self._reserves[name] = group
        self.reservations.setdefault(group, set()).add(name)
        self.unheld.add(group)

    def _drop_reservation(self, name: str) -> None:
        group = self._reserves.pop(name, None)
        if group is not None:
            names = self.reservations.get(group, set())
            names.discard(name)
            if not names:
                self.reservations.pop(group, None)


def _pod_groups(pod: JSON) -> Iterable[str]:
    if (pod.get("status") or {}).get("phase") in _TERMINAL:
        return
    for key, value in (pod["metadata"].get("labels") or {}).items():
        if key == constants.LABEL_GPU_GROUP or key.startswith(constants.LABEL_GPU_GROUP + "/"):
            yield str(value)


def _own_pod_env() -> list[JSON]:
    """The reservation container's POD_NAME and POD_NAMESPACE: the image patches its own pod with its GPU index."""
    fields = (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace"))
    return [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}} for name, path in fields]
