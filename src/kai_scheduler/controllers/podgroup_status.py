"""The PodGroup status controller (KAI `podgroupcontroller`, BEHAVIOR.md §8.4): `status.resourcesStatus`.

Over the PodGroup's pods (those whose `pod-group-name` names it) that are neither finished nor terminating:

- `requested`: every such pod's requests (CPU, memory, extended resources; GPUs as devices, a shared-GPU pod
  as its portion × devices; a `gpu-memory` pod counts its portion once placed, 0 before: it has none yet);
- `allocated`: the requests of those bound to a node, GPUs as received: whole devices, or for a
  `received-resource-type: Fraction` (or shared-GPU) pod the BindRequest's `receivedGPU` count × portion,
  else its `gpu-fraction` × devices;
- `allocatedNonPreemptible`: the same as `allocated` when the PodGroup is non-preemptible (`spec.preemptibility`,
  else its priority class value ≥ 100; a missing class counts as the globalDefault class, else 50), else 0;
- and in `nvidia.com/gpu` of all three, the GPUs its pods ask and hold through DRA claims, as the scheduler
  counts them (`claim_gpus`: per-pod claims' GPUs, `All` requests by their devices, a shared claim once).

Reacts to pod, PodGroup, BindRequest, PriorityClass and DRA (ResourceClaim, ResourceClaimTemplate,
ResourceSlice) changes; writes a status only when it differs from the PodGroup's (or from the one last written, while
the watch brings copies older than that write: `status_write.Written`), at most once per PodGroup and pass: the
PodGroups a change reaches are the keys of a `store.workqueue.WorkQueue`. A status write the API server refused is
logged once (per PodGroup and message) and requeued after the key's backoff (1 s doubling to 60 s, reset once
written), so a 429 or a 500 does not leave the status stale until the next change. A pass computes every status
first, then its PATCHes go out by `--max-concurrent-reconciles` writer threads at once (`status_write.write_all`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

from kai_scheduler.api import constants
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.resources import GpuRequest
from kai_scheduler.controllers import amounts, claim_gpus, status_write
from kai_scheduler.controllers.amounts import Amounts
from kai_scheduler.store import metrics
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, ClusterStore
from kai_scheduler.store.workqueue import WorkQueue
from kai_scheduler.store.writers import Writers

log = logging.getLogger(__name__)

CONTROLLER = "podgroup"  # in the `controller` label of controller-runtime's series

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_NOT_SUMMED = frozenset({constants.RESOURCE_PODS, constants.RESOURCE_GPU})


@dataclass(frozen=True, slots=True)
class PodUsage:
    """What one pod adds to its PodGroup's status; `allocated` is empty while the pod is not bound."""

    group: str  # namespace/podgroup name
    requested: Amounts
    allocated: Amounts
    needs_portion: bool = False  # a gpu-memory pod: its GPU share comes from its BindRequest


@dataclass(slots=True)
class _Group:
    raw: JSON
    members: set[str] = field(default_factory=set)


class PodGroupStatusController:
    def __init__(
        self,
        store: ClusterStore,
        queue: WorkQueue | None = None,
        work: metrics.Controller | None = None,
        informers: Informers | None = None,
        writers: Writers | None = None,
    ) -> None:
        """`informers`: the process's shared informers (a private set when none is given). `queue`: the PodGroups
        to write (a new one when none is given). `writers`: the threads that send the status writes (none given:
        one at a time, on the caller's thread)."""
        self.store = store
        self._writers = writers if writers is not None else Writers(1, "kai-status")
        informers = informers or Informers(store)
        self.queue = queue if queue is not None else WorkQueue()
        # controller-runtime's series of KAI's `podgroup` controller: a reconcile is one PodGroup's status.
        self.work = work or metrics.Controller(CONTROLLER, self._writers.count)
        self._pod_changes = Changes(informers.informer("pods"))
        self._group_changes = Changes(informers.informer("podgroups"))
        self._class_changes = Changes(informers.informer("priorityclasses"))
        self._bind_changes = Changes(informers.informer("bindrequests"))
        self._usage: dict[str, PodUsage] = {}
        self._members: dict[str, set[str]] = defaultdict(set)
        self._groups: dict[str, JSON] = {}
        self._class_values: dict[str, int] = {}
        self._global_default: int | None = None
        # pod key → (uid of the pod its BindRequest was made for, GPUs received as a fraction: count × portion)
        self._portions: dict[str, tuple[str, float]] = {}
        self._portion_pods: dict[str, JSON] = {}  # pods whose usage depends on their portion
        # A pod's requests are fixed at creation (its containers' resources and GPU annotations): parsed once per
        # pod uid, not once per change (binding, start, status).
        self._parsed: dict[str, tuple[str, tuple[dict[str, float], GpuRequest]]] = {}
        self._problems = status_write.Problems(log, "PodGroup status not computed as asked")
        self._written = status_write.Written()
        self._claims = claim_gpus.ClaimGpus(informers)
        self._dra_pods: dict[str, claim_gpus.DraPod] = {}  # members with DRA claims
        self._dra_dirty = False
        self._dra: claim_gpus.Figures = {}  # PodGroup key → DRA GPUs (requested, allocated)

    def reconcile(self) -> list[str]:
        """Bring every affected PodGroup's resourcesStatus up to date; return the keys written."""
        dirty: set[str] = set()
        if self._class_changes.poll():
            self._reload_classes()
            dirty.update(self._groups)
        for key, obj in self._bind_changes.poll():
            self._bind_changed(key, obj, dirty)
        for key, obj in self._pod_changes.poll():
            self._pod_changed(key, obj, dirty)
        if self._claims.poll() or self._dra_dirty:
            self._dra_dirty = False
            figures = self._claims.figures(self._dra_pods)
            dirty.update(g for g in figures.keys() | self._dra.keys() if figures.get(g) != self._dra.get(g))
            self._dra = figures
        for key, obj in self._group_changes.poll():
            if obj is None:
                self._groups.pop(key, None)
                self.queue.forget(key)
                self._written.forget(key)
            else:
                self._groups[key] = obj
                dirty.add(key)
        queue = self.queue
        queue.add(dirty)
        due = queue.take()
        work = self.work
        work.add(due)
        writes: list[status_write.StatusWrite] = []
        try:
            # Every status is computed here, from the controller's state at this pass; only the PATCHes go to the
            # writer threads, and what they answered is taken in on this thread (`status_write.write_all`).
            for key in due:
                began = work.now()
                try:
                    write = self._plan(key) if key in self._groups else None
                except BaseException:
                    work.done(work.start(key, work.now() - began), "error")
                    raise
                if write is None:  # nothing to write (or the PodGroup went): its reconcile was the planning
                    if key not in self._groups:
                        queue.forget(key)
                    work.done(work.start(key, work.now() - began))
                else:
                    write.planning = work.now() - began
                    writes.append(write)
            status_write.write_all(
                self.store,
                "podgroups",
                writes,
                writers=self._writers,
                work=work,
                queue=queue,
                problems=self._problems,
                written=self._written,
            )
        finally:  # an error no step expects: the PodGroups it left are written again after the backoff
            queue.retry_unfinished(due)
        for write in writes:
            if write.gone:
                self._groups.pop(write.key, None)
            elif write.written is not None:
                self._groups[write.key] = write.written
        return [write.key for write in writes if write.written is not None]

    def status_of(self, key: str) -> JSON:
        """The resourcesStatus the group's pods add up to now."""
        members = [self._usage[p] for p in sorted(self._members.get(key, ()))]
        allocated = amounts.total(u.allocated for u in members)
        requested = amounts.total(u.requested for u in members)
        if key in self._dra:
            dra_requested, dra_allocated = self._dra[key]
            amounts.add(requested, {constants.RESOURCE_GPU: dra_requested})
            amounts.add(allocated, {constants.RESOURCE_GPU: dra_allocated})
        non_preemptible = allocated if self._is_non_preemptible(self._groups.get(key, {})) else {}
        return {
            "allocated": amounts.to_resource_list(allocated),
            "allocatedNonPreemptible": amounts.to_resource_list(non_preemptible),
            "requested": amounts.to_resource_list(requested),
        }

    # --- changes ---

    def _reload_classes(self) -> None:
        classes, _ = self.store.list("priorityclasses")
        self._class_values, self._global_default = {}, None
        for pc in classes:
            value = pc.get("value")
            if isinstance(value, int) and not isinstance(value, bool):
                self._class_values[pc["metadata"]["name"]] = value
                if pc.get("globalDefault") is True:
                    self._global_default = value

    def _bind_changed(self, key: str, br: JSON | None, dirty: set[str]) -> None:
        namespace = key.partition("/")[0]
        pod_key = f"{namespace}/{(br or {}).get('spec', {}).get('podName') or key.partition('/')[2]}"
        portion = _received_portion(br) if br is not None else None
        if br is None or portion is None:
            self._portions.pop(pod_key, None)
        else:
            self._portions[pod_key] = (_pod_uid(br), portion)
        if pod_key in self._portion_pods:
            self._pod_changed(pod_key, self._portion_pods[pod_key], dirty)

    def _pod_changed(self, key: str, pod: JSON | None, dirty: set[str]) -> None:
        old = self._usage.pop(key, None)
        if old is not None:
            _discard(self._members, old.group, key)
            dirty.add(old.group)
        self._portion_pods.pop(key, None)
        if self._dra_pods.pop(key, None) is not None:
            self._dra_dirty = True
        if pod is None:
            self._parsed.pop(key, None)
        usage = self._usage_of(key, pod) if pod is not None else None
        if usage is None:
            return
        self._usage[key] = usage
        if pod is not None and (member := claim_gpus.dra_pod(pod, usage.group, bool(usage.allocated))) is not None:
            self._dra_pods[key] = member
            self._dra_dirty = True
        self._members[usage.group].add(key)
        dirty.add(usage.group)
        if usage.needs_portion and pod is not None:
            self._portion_pods[key] = pod

    def _usage_of(self, key: str, raw: JSON) -> PodUsage | None:
        meta = raw.get("metadata", {})
        group = (meta.get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME)
        if not group or meta.get("deletionTimestamp") or (raw.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            return None
        parsed = self._requests_of(key, raw)
        if parsed is None:
            return None
        pod_requests, gpu = parsed
        requested = {n: v for n, v in pod_requests.items() if n not in _NOT_SUMMED and v}
        portion = self._portion(key, str(meta.get("uid") or ""))
        if gpu.whole or gpu.mig:
            gpus = float(gpu.whole + gpu.mig_units)
        elif gpu.fraction:
            gpus = portion if portion is not None else gpu.fraction * gpu.num_devices
        else:
            gpus = portion or 0.0
        requested[constants.RESOURCE_GPU] = gpus
        allocated: Amounts = {}
        if (raw.get("spec") or {}).get("nodeName"):
            allocated = dict(requested)
            received = (meta.get("annotations") or {}).get(constants.ANNOTATION_RECEIVED_RESOURCE_TYPE)
            if received == "Fraction" and portion is not None:
                allocated[constants.RESOURCE_GPU] = portion
        return PodUsage(f"{key.partition('/')[0]}/{group}", requested, allocated, needs_portion=gpu.memory_mib > 0)

    def _portion(self, key: str, uid: str) -> float | None:
        """The GPUs the pod's BindRequest gives it as a fraction; None without one. A request made for an earlier
        pod of the same name (deleted, its request not yet collected) is not this pod's."""
        found = self._portions.get(key)
        if found is None or (found[0] and uid and found[0] != uid):
            return None
        return found[1]

    def _requests_of(self, key: str, raw: JSON) -> tuple[dict[str, float], GpuRequest] | None:
        uid = str(raw.get("metadata", {}).get("uid", ""))
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == uid:
            return cached[1]
        try:
            pod = Pod.from_dict(raw)
        except ObjectError as err:
            self._problems.report(key, str(err))
            return None
        self._parsed[key] = (uid, (pod.requests, pod.gpu))
        return pod.requests, pod.gpu

    # --- status ---

    def _is_non_preemptible(self, group: JSON) -> bool:
        spec = group.get("spec") or {}
        preemptibility = spec.get("preemptibility")
        if preemptibility in (constants.PREEMPTIBLE, constants.NON_PREEMPTIBLE):
            return bool(preemptibility == constants.NON_PREEMPTIBLE)
        value = self._class_values.get(str(spec.get("priorityClassName") or ""))
        if value is None:
            value = self._global_default if self._global_default is not None else constants.DEFAULT_PODGROUP_PRIORITY
        return value >= constants.NON_PREEMPTIBLE_PRIORITY_THRESHOLD

    def _plan(self, key: str) -> status_write.StatusWrite | None:
        """The PodGroup's status write; None (the key done) when its status is already the one its pods add up to."""
        group = self._groups[key]
        want = self.status_of(key)
        meta = group["metadata"]
        uid = str(meta.get("uid") or "")
        have = self._written.status(key, uid, (group.get("status") or {}).get("resourcesStatus"))
        if have == want:
            self.queue.done(key)
            return None
        return status_write.StatusWrite(
            key,
            meta.get("namespace", ""),
            meta["name"],
            uid,
            {"resourcesStatus": amounts.replacing(have, want)},
            have,
            want,
        )


def _received_portion(br: JSON) -> float | None:
    """GPUs a Fraction BindRequest gives its pod (count × portion); None for whole devices."""
    spec = br.get("spec") or {}
    if spec.get("receivedResourceType") != "Fraction":
        return None
    received = spec.get("receivedGPU") or {}
    try:
        return float(received.get("count") or 1) * float(received.get("portion") or 0)
    except (TypeError, ValueError):
        return None


def _pod_uid(br: JSON) -> str:
    """The uid of the pod a BindRequest was made for (its Pod owner of its pod's name), "" when it names none."""
    name = (br.get("spec") or {}).get("podName")
    refs = (br.get("metadata") or {}).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("name") == name:
            return str(ref.get("uid") or "")
    return ""


def _discard(members: dict[str, set[str]], group: str, key: str) -> None:
    """Take `key` out of `group`'s members, and forget a group left with none."""
    left = members.get(group)
    if left is not None:
        left.discard(key)
        if not left:
            del members[group]
