"""The pod grouper component: pods in, PodGroups and pod annotations out (KAI `podgrouper/pod_controller.go`).

`PodGrouper.reconcile()` handles the pods that changed since the last call (all pods the first time, and
after a watch fell too far behind), the live pods whose `pod-group-name` names a PodGroup deleted since (read
again: a pending pod whose PodGroup went would otherwise wait with none, and the scheduler would say nothing of
it, until it changed), and one pod of each PodGroup whose owner changed its spec, labels or annotations (read
again: the PodGroup follows a scaled workload at once), in name order. For each pod with the KAI scheduler name
that is not terminating or finished, and within the pod and namespace label selectors (`scope`):

1. Skip it when it or any owner is annotated `kai.scheduler/skip-podgrouper: "true"`, or it has no owner and
   its `pod-group-name` names an existing PodGroup (membership the user manages).
2. Walk its owner chain through the controller owner references, reading each owner unstructured from the
   watched copies of its kind (`owners`; the store when the copy lacks it). An owner of a kind the store does
   not serve, or that is gone, ends the chain with what its reference says.
3. Pick the grouper of the top owner (`hub`) and compute the PodGroup and the pod's subgroup.
4. Leave the pod alone when its `pod-group-name` names another PodGroup that exists (an external PodGroup).
5. Create the PodGroup, or update it when what the grouper owns differs (spec fields it computes, labels and
   annotations it copies, owner reference); what others wrote (status, the scheduler's annotations, other
   labels) is kept. Then annotate the pod with `pod-group-name` and label it with its subgroup, only when
   they differ.

A pod whose owner cannot be grouped (a malformed field) is skipped and reported once per message, and so are owner
fields that were ignored. A pod whose grouping needs an object that is not there yet or is malformed (a Grove
pod's PodGang: `GroupingError.awaited`) is left ungrouped, reported once, and looked at again as soon as the owner
watches see that object appear or change (and after a backoff, 1 s … 60 s, where its kind is not watched). A pod
whose owner could not be read at all (gone, or absent from a `kubectl get … -o yaml` snapshot that `kai schedule`
loads) while the PodGroup the pod already names exists is not grouped again: that PodGroup stays, without a word.
A write the API server refuses (RBAC, an invalid field, throttling, a server error) is reported the same way (one
line naming the object) and the pod is handled again, as the pod informer holds it, after a backoff (its
`store.workqueue`: 1 s, 2 s … 60 s), or sooner when it changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kai_scheduler.api import constants
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.podgrouper import hub
from kai_scheduler.podgrouper.context import Config, Context, GroupingError, Obj
from kai_scheduler.podgrouper.owners import OwnerCache
from kai_scheduler.podgrouper.scope import Scope
from kai_scheduler.podgrouper.type_defaults import Source, TypeDefaults
from kai_scheduler.store import events, metrics
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import NAMESPACE_INDEX, Informer, Informers, by_namespace
from kai_scheduler.store.interface import (
    GVK_TO_PLURAL,
    JSON,
    AlreadyExists,
    Cancelled,
    ClusterStore,
    Conflict,
    NotFound,
    StoreError,
)
from kai_scheduler.store.keys import split_key
from kai_scheduler.store.retries import Retries
from kai_scheduler.store.workqueue import WorkQueue
from kai_scheduler.store.writers import Writers

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_OWNER_DEPTH = 16
_OWNER_CHANGE_TRIES = 3  # pods of a changed owner's PodGroup looked at to find a live one to group again
_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_TYPE_DEFAULTS = "type-defaults"  # `_Reads.once` key of the defaults ConfigMap read
# PodGroup spec fields the grouper computes; any other (markUnschedulable, schedulingBackoff) is the user's.
OWNED_SPEC_FIELDS = frozenset(
    {
        "queue",
        "minMember",
        "minSubGroup",
        "priorityClassName",
        "preemptibility",
        "topologyConstraint",
        "subGroups",
        "preemptionDelay",
        "stalenessGracePeriod",
    }
)


@dataclass(slots=True)
class GroupOutcome:
    """What one reconcile wrote: PodGroup keys created and updated, pod keys annotated or labelled, and the
    pods skipped with the reason."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    labelled: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


EVENT_REASON = "PodGrouperWarning"
CONTROLLER = "pod"  # KAI's pod grouper controller, in the `controller` label of controller-runtime's series
MEMBERS_INDEX = "podgrouper.pod-group-name"  # the pod informer's index of pods by the PodGroup they name
OWNERS_INDEX = "podgrouper.owner-uid"  # the PodGroup informer's index of PodGroups by their owners' uids


class PodGrouper:
    def __init__(
        self,
        store: ClusterStore,
        config: Config | None = None,
        *,
        concurrency: int = 1,
        clock: Clock | None = None,
        work: metrics.Controller | None = None,
        informers: Informers | None = None,
    ) -> None:
        """`clock`: with one, what the grouper could not do as a pod asked (a bad label or annotation, an owner
        it cannot group) is also a `Warning PodGrouperWarning` event on the pod, once per message, as well as a
        log line; without, the log line only. `work`: where its reconciles are counted (controller-runtime's
        series of the `pod` controller: a reconcile is one pod planned and written). `informers`: the process's
        shared informers, through which it watches pods, PodGroups, priority classes, owners and namespaces (a
        private set when none is given)."""
        if concurrency < 1:
            raise ValueError(f"concurrency: must be at least 1, got {concurrency}")
        self.store = store
        self.config = config or Config()
        self.clock = clock
        self.work = work or metrics.Controller(CONTROLLER, concurrency)
        # Against an API server each pod costs two writes, one round trip each: pods of different PodGroups are
        # written by `concurrency` threads at once (those of one PodGroup in order, by one thread).
        self._writers = Writers(concurrency, "kai-group")
        informers = informers or Informers(store)
        self._written: dict[str, str] = {}  # pod key → the resourceVersion our own last patch made
        self._reported: dict[str, set[str]] = {}  # pod key → the messages logged for it (until it goes)
        # PodGroups and priority classes are read from the process's informers, not per pod: against an API
        # server each GET would cost one request of the client's QPS for every pod grouped.
        podgroups = informers.informer("podgroups")
        podgroups.add_index(OWNERS_INDEX, _owner_uids)
        self._podgroups = _PodGroups(podgroups)
        self._group_feed = Changes(podgroups)  # deletions, and the grouper's own writes coming back
        self._classes = informers.informer("priorityclasses")
        self._owners = OwnerCache(store, informers)
        config = self.config
        self._type_defaults = Source(store, config.defaults_configmap_namespace, config.defaults_configmap_name)
        self._scope = Scope(store, self.config.pod_label_selector, self.config.namespace_label_selector, informers)
        # The process's pod informer, the pod selector applied to what it hands over (`scope`); which pods name
        # which PodGroup (`pod-group-name`) is one of its indexes: when a PodGroup is deleted while its pods live
        # on (by hand, or by the garbage collector for a pod made again from a saved manifest that names the old
        # pod's), those pods are grouped again; the pod watch alone would never bring them back.
        self._pod_informer = informers.informer("pods")
        self._pod_informer.add_index(MEMBERS_INDEX, _named_podgroup)
        self._pod_informer.add_index(NAMESPACE_INDEX, by_namespace)
        self._pods = self._pod_informer.subscribe()
        self.refused = WorkQueue()  # the pods whose grouping the API server refused, taken again after a backoff
        self._gone_groups: list[tuple[str, str]] = []
        self._changed_owners: set[str] = set()  # uids of owners whose spec, labels or annotations changed
        # Pods left ungrouped until an object their grouping needs exists or is fixed (`GroupingError.awaited`: a
        # Grove pod's PodGang): pod key → that object (plural, namespace, name). Looked at again when the object
        # appears or changes, and after a backoff (1 s … 60 s) in case its kind is not watched.
        self._waiting: dict[str, tuple[str, str, str]] = {}
        self._wait_retries = Retries()

    def reconcile(self) -> GroupOutcome:
        """Group every pod that changed since the last call."""
        self._refresh_feeds()
        reads = _Reads(self.store, self._podgroups, self._classes, self._owners, self._type_defaults)
        outcome = GroupOutcome()
        pods = self._changed_pods()
        self._entered_scope(pods)
        self._orphans(pods)
        self._awaited(pods)
        self._owner_changes(pods)
        retried = self.refused.take()
        for key in retried:
            pod = pods.get(key) or self._pod_informer.get(key)
            if pod is None:  # gone since: its deletion is in a batch still to come, or was missed by a relist
                self.refused.forget(key)
            else:
                pods[key] = pod
        try:
            refused = self._group(pods, reads, outcome)
        except BaseException:
            for key in retried:  # still refused as far as anyone knows: due again after a longer backoff
                if key in pods:
                    self.refused.retry(key)
            raise
        for key in sorted(pods):
            if key in refused:
                self.refused.retry(key)
                self.work.retry()
            elif key in retried or self.refused.backing_off(key):
                self.refused.done(key)
        return outcome

    def _group(self, pods: dict[str, JSON], reads: _Reads, outcome: GroupOutcome) -> set[str]:
        """Plan every pod's grouping, write the plans; the keys of the pods whose reads or writes were refused."""
        plans: list[_Plan] = []
        refused: set[str] = set()
        # The work queue of the `pod` controller: the pods of this scheduler that changed, not by our own patch.
        work = self.work
        taken = {key for key, pod in pods.items() if not self._ignored(key, pod)}
        work.add(sorted(taken))
        for key in sorted(pods):
            began = work.now()
            try:
                plan = self._plan(key, pods[key], reads, outcome)
            except StoreError as err:
                self._refuse(key, err, outcome)
                refused.add(key)
                work.done(work.start(key, work.now() - began), "error")
                continue
            except Exception:
                work.done(work.start(key, work.now() - began), "error")
                raise
            if plan is not None:
                plan.planning = work.now() - began
                plans.append(plan)
            elif key in taken:  # nothing to write: its reconcile was the planning
                work.done(work.start(key, work.now() - began))
        by_group: dict[tuple[str, str], list[_Plan]] = {}
        for plan in plans:
            by_group.setdefault((plan.group.meta.namespace, plan.group.meta.name), []).append(plan)
        if self._writers.count > 1 and len(by_group) > 1:
            self._writers.map(lambda group: self._write_all(group, reads), list(by_group.values()))
        else:
            self._write_all(plans, reads)
        # What the writes did is recorded here, on this thread and in pod order, whatever order the writer
        # threads finished in: `_written` and `_reported` are the grouper's own and only this thread touches them.
        for plan in plans:
            if plan.version is not None:
                self._written[plan.key] = plan.version
            if plan.error is not None:
                self._refuse(plan.key, plan.error, plan.outcome)
            outcome.created += plan.outcome.created
            outcome.updated += plan.outcome.updated
            outcome.labelled += plan.outcome.labelled
            outcome.skipped += plan.outcome.skipped
            if plan.error is not None:
                refused.add(plan.key)
        return refused

    def _write_all(self, plans: list[_Plan], reads: _Reads) -> None:
        """Write the plans in order; run by the writer threads, so it changes nothing but the plans (and the
        reads' PodGroup copies, one key per thread)."""
        for plan in plans:
            item = self.work.start(plan.key, plan.planning)
            try:
                self._apply(plan.group, reads, plan.outcome)
                plan.version = self._label(plan.pod, plan.group.meta.name, plan.subgroup)
                if plan.version is not None:
                    plan.outcome.labelled.append(plan.key)
            except StoreError as err:
                plan.error = err
            except BaseException:
                self.work.done(item, "error")
                raise
            self.work.done(item, "success" if plan.error is None else "error")

    def _refuse(self, key: str, err: StoreError, outcome: GroupOutcome) -> None:
        """The API server refused a read or write of this pod's grouping: say so once; it is tried again. A request
        cut because the process is stopping is not a refusal (the process says so once itself)."""
        if not isinstance(err, Cancelled):
            self._report(key, f"{err.reason}: {err}")
        outcome.skipped.append((key, f"{err.reason}: {err}"))

    def _refresh_feeds(self) -> None:
        for key, obj in self._group_feed.poll():
            self._podgroups.seen(key)
            if obj is None:
                self._gone_groups.append(split_key(key))
        self._classes.sync()
        for owner in self._owners.refresh():
            uid = (owner.get("metadata") or {}).get("uid")
            if uid:
                self._changed_owners.add(uid)
        self._scope.refresh()

    def _changed_pods(self) -> dict[str, JSON]:
        batch = self._pods.take()
        selected = self._scope.selected
        if batch.relisted:
            present = {key: pod for key, pod in batch.changes if pod is not None and selected(pod)}
            self._written = {k: v for k, v in self._written.items() if k in present}
            self._reported = {k: v for k, v in self._reported.items() if k in present}
            for key in self.refused.keys() - present.keys():
                self.refused.forget(key)
            for key in [k for k in self._waiting if k not in present]:
                self._stop_waiting(key)
            return present
        changed: dict[str, JSON] = {}
        for key, pod in batch.changes:
            if pod is None or not selected(pod):  # deleted, or out of the pod selector: as if deleted
                changed.pop(key, None)
                self._written.pop(key, None)
                self._reported.pop(key, None)
                self.refused.forget(key)
                self._stop_waiting(key)
            else:
                changed[key] = pod
        return changed

    def _members(self, group: tuple[str, str]) -> set[str]:
        """The keys of the pods within the pod selector whose `pod-group-name` names the PodGroup."""
        return self._selected(self._pod_informer.index(MEMBERS_INDEX, f"{group[0]}/{group[1]}"))

    def _selected(self, keys: set[str]) -> set[str]:
        """Those of the pod informer's `keys` whose pod is within the pod selector."""
        if self._scope.pods is None:
            return keys
        return {key for key in keys if (pod := self._pod_informer.get(key)) is not None and self._scope.selected(pod)}

    def _entered_scope(self, pods: dict[str, JSON]) -> None:
        """Add to `pods` those of the namespaces that came to match the namespace selector, from the pod
        informer's cache (a pod it does not hold yet comes with its watch, and is grouped then)."""
        for namespace in self._scope.entered():
            for key in self._selected(self._pod_informer.index(NAMESPACE_INDEX, namespace)):
                pod = self._pod_informer.get(key)
                if pod is not None:
                    pods.setdefault(key, pod)

    def _orphans(self, pods: dict[str, JSON]) -> None:
        """Add to `pods` the live pods that name a PodGroup deleted since the last call, read again (one GET per
        pod, only when a PodGroup goes): they are grouped as a pod naming a missing PodGroup is."""
        gone, self._gone_groups = self._gone_groups, []
        for group in gone:
            if self._podgroups.get(f"{group[0]}/{group[1]}") is not None:  # made again since
                continue
            for key in sorted(self._members(group)):
                self._written.pop(key, None)  # our last patch of it named the PodGroup that is gone
                if key in pods:
                    continue
                namespace, name = split_key(key)
                try:
                    pod = self.store.get("pods", name, namespace)
                except NotFound:
                    continue
                except StoreError as err:
                    log.warning(
                        "pod of a deleted PodGroup not read; it is grouped when it changes",
                        extra={"pod": key, "podgroup": f"{group[0]}/{group[1]}", "reason": str(err)},
                    )
                    continue
                pods[key] = pod

    def _awaited(self, pods: dict[str, JSON]) -> None:
        """Add to `pods` the waiting pods whose awaited object appeared or changed since the last call, or whose
        backoff has passed (read again, one GET each)."""
        touched = self._owners.touched()
        due = self._wait_retries.due()
        for key, awaited in sorted(self._waiting.items()):
            if key in pods or (awaited not in touched and key not in due):
                continue
            namespace, name = split_key(key)
            try:
                pod = self.store.get("pods", name, namespace)
            except NotFound:
                self._stop_waiting(key)
                continue
            except StoreError as err:
                self._wait_retries.failed(key)
                log.info("waiting pod not read; tried again later", extra={"pod": key, "reason": str(err)})
                continue
            if self._wants(pod):
                pods[key] = pod
            else:  # going, finished or skipped since: nothing to wait for
                self._stop_waiting(key)

    def _stop_waiting(self, key: str) -> None:
        self._waiting.pop(key, None)
        self._wait_retries.forget(key)

    def _owner_changes(self, pods: dict[str, JSON]) -> None:
        """Add to `pods` one live pod of each PodGroup owned by an owner that changed since the last call (read
        unless the pod changed too; one going away is passed over): the PodGroup follows its owner's spec at once.
        Without this, a RayCluster scaled from 3 workers to 2 kept a minimum of 3 until one of its pods changed,
        and was evicted as a stale gang first."""
        changed, self._changed_owners = self._changed_owners, set()
        if not changed:
            return
        for key in sorted(self._podgroups.owned_by(changed)):
            group = split_key(key)
            members = sorted(self._members(group), key=lambda k: (k not in pods, k))
            for key in members[:_OWNER_CHANGE_TRIES]:  # those already at hand first
                pod = pods.get(key)
                if pod is None:
                    namespace, name = split_key(key)
                    try:
                        pod = self.store.get("pods", name, namespace)
                    except NotFound:
                        continue
                    except StoreError as err:
                        log.warning(
                            "pod of a changed owner not read; its PodGroup follows when a pod changes",
                            extra={"pod": key, "podgroup": f"{group[0]}/{group[1]}", "reason": str(err)},
                        )
                        break
                if not self._wants(pod):  # going (a scaled-down pod): it would not be grouped
                    continue
                self._written.pop(key, None)  # grouped again even if our own last patch is all that changed it
                pods[key] = pod
                break

    def _plan(self, key: str, pod: JSON, reads: _Reads, outcome: GroupOutcome) -> _Plan | None:
        """What to write for one pod (None: nothing); reads owners and PodGroups, writes nothing. A pod that
        waited for an object stops waiting unless its grouping still awaits one, however the planning ends."""
        waited = self._waiting.pop(key, None)
        try:
            return self._planned(key, pod, reads, outcome)
        finally:
            if waited is not None and key not in self._waiting:
                self._wait_retries.forget(key)

    def _planned(self, key: str, pod: JSON, reads: _Reads, outcome: GroupOutcome) -> _Plan | None:
        meta = pod.get("metadata", {})
        if self._ignored(key, pod):
            return None
        annotations = meta.get("annotations") or {}
        current = annotations.get(constants.ANNOTATION_POD_GROUP_NAME)
        namespace = meta.get("namespace", "")
        if current and not meta.get("ownerReferences") and reads.podgroup(namespace, current, exact=True) is not None:
            return None
        chain = _chain(pod, reads)
        if any(o.annotations.get(constants.ANNOTATION_SKIP_PODGROUPER) == "true" for o in chain[1:]):
            return None
        top = chain[-1]
        gone = top.partial and (top.api_version, top.kind) in GVK_TO_PLURAL
        if gone and current and reads.podgroup(namespace, current, exact=True) is not None:
            # The owner is gone (being deleted, its pods with it) or absent from a loaded snapshot: grouped from its
            # reference alone, an LWS group or a JobSet lost its subgroups while its pods went.
            return None
        try:
            grouping = hub.group(Context(chain, self.config, reads))
        except GroupingError as err:
            if err.awaited is not None:  # looked at again when that object appears or changes
                self._waiting[key] = err.awaited
                self._wait_retries.failed(key)
            elif chain[-1].partial and current and reads.podgroup(namespace, current, exact=True) is not None:
                return None  # the owner is not there to read: the PodGroup the pod names stays as it is
            self._report(key, str(err), pod)
            outcome.skipped.append((key, str(err)))
            return None
        for warning in grouping.warnings:
            self._report(key, warning, pod)
        name = grouping.podgroup.name
        if current and current != name and reads.podgroup(namespace, current, exact=True) is not None:
            return None
        return _Plan(key, pod, grouping.podgroup, grouping.subgroup)

    def _ignored(self, key: str, pod: JSON) -> bool:
        """Not this grouper's to look at: changed only by our own patch, or not a pod it groups."""
        return self._written.get(key) == pod.get("metadata", {}).get("resourceVersion") or not self._wants(pod)

    def _wants(self, pod: JSON) -> bool:
        meta, spec = pod.get("metadata", {}), pod.get("spec") or {}
        if spec.get("schedulerName", "default-scheduler") != self.config.scheduler_name:
            return False
        if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            return False
        if (meta.get("annotations") or {}).get(constants.ANNOTATION_SKIP_PODGROUPER) == "true":
            return False
        return self._scope.covers(pod)

    def _apply(self, pg: PodGroup, reads: _Reads, outcome: GroupOutcome) -> None:
        """Create the PodGroup, or update what the grouper owns of it when that changed."""
        namespace, name = pg.meta.namespace, pg.meta.name
        desired = pg.to_dict()
        existing = reads.podgroup(namespace, name)
        if existing is None:
            try:
                reads.remember(namespace, name, self.store.create(desired))
                outcome.created.append(f"{namespace}/{name}")
                return
            except AlreadyExists:
                existing = self.store.get("podgroups", name, namespace)
        for attempt in range(2):
            merged = merged_podgroup(existing, desired)
            if merged == existing:
                reads.remember(namespace, name, existing)
                return
            try:
                reads.remember(namespace, name, self.store.update(merged))
                outcome.updated.append(f"{namespace}/{name}")
                return
            except Conflict:
                if attempt:
                    raise
                existing = self.store.get("podgroups", name, namespace)

    def _label(self, pod: JSON, group: str, subgroup: str) -> str | None:
        """Annotate and label the pod where it differs; the resourceVersion the patch made (None: no patch)."""
        meta = pod["metadata"]
        patch: JSON = {}
        if (meta.get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME) != group:
            patch["annotations"] = {constants.ANNOTATION_POD_GROUP_NAME: group}
        if subgroup and (meta.get("labels") or {}).get(constants.LABEL_SUBGROUP_NAME) != subgroup:
            patch["labels"] = {constants.LABEL_SUBGROUP_NAME: subgroup}
        if not patch:
            return None
        written = self.store.patch("pods", meta["name"], meta.get("namespace", ""), {"metadata": patch})
        return str(written["metadata"].get("resourceVersion", ""))

    def _report(self, key: str, message: str, pod: JSON | None = None) -> None:
        """Say once per pod and message what could not be done as asked: a log line and, with a clock and the
        pod (not for the API server's own refusals, which an event write would likely meet too), an event."""
        reported = self._reported.setdefault(key, set())
        if message not in reported:
            reported.add(message)
            log.warning("pod not grouped as asked", extra={"pod": key, "reason": message})
            if self.clock is not None and pod is not None:
                meta = pod.get("metadata", {})
                ref = events.pod_ref(meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
                body = events.event(ref, "Warning", EVENT_REASON, message, component="podgrouper", now=self.clock.now())
                events.record(self.store, body)


def merged_podgroup(existing: JSON, desired: JSON) -> JSON:
    """`existing` with what the grouper owns taken from `desired`: the spec fields it computes, its labels and
    annotations (others kept) and the owner references."""
    old_meta = existing.get("metadata") or {}
    new_meta = desired["metadata"]
    meta = {
        **old_meta,
        "labels": {**(old_meta.get("labels") or {}), **(new_meta.get("labels") or {})},
        "annotations": {**(old_meta.get("annotations") or {}), **(new_meta.get("annotations") or {})},
    }
    for key in ("labels", "annotations"):
        if not meta[key]:
            del meta[key]
    if new_meta.get("ownerReferences"):
        meta["ownerReferences"] = new_meta["ownerReferences"]
    old_spec = existing.get("spec") or {}
    spec = {**{k: v for k, v in old_spec.items() if k not in OWNED_SPEC_FIELDS}, **desired["spec"]}
    return {**existing, "metadata": meta, "spec": spec}


@dataclass(slots=True)
class _Plan:
    """One pod's writes: its PodGroup as grouped, its subgroup, and what writing them did."""

    key: str
    pod: JSON
    group: PodGroup
    subgroup: str
    outcome: GroupOutcome = field(default_factory=GroupOutcome)
    version: str | None = None  # the pod's resourceVersion after our patch (None: not patched)
    error: StoreError | None = None  # the API server refused a write: the pod is handled again later
    planning: float = 0.0  # seconds its planning took (part of its reconcile)


class _PodGroups:
    """The PodGroups as the grouper reads them: the PodGroup informer's cache, under the grouper's own writes that
    its watch has not brought back yet (each kept until the watch brings a change of its PodGroup). Written to by
    the writer threads, one PodGroup per thread."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self._written: dict[str, JSON] = {}

    def get(self, key: str) -> JSON | None:
        written = self._written.get(key)
        return written if written is not None else self.informer.get(key)

    def remember(self, key: str, obj: JSON) -> None:
        self._written[key] = obj

    def seen(self, key: str) -> None:
        """The watch brought a change of this PodGroup: the informer's copy is read from now on."""
        self._written.pop(key, None)

    def owned_by(self, uids: set[str]) -> set[str]:
        """The keys of the PodGroups one of whose owner references names one of `uids`."""
        keys = {key for uid in uids for key in self.informer.index(OWNERS_INDEX, uid)}
        keys |= {key for key, obj in list(self._written.items()) if uids.intersection(_owner_uids(obj))}
        return {key for key in keys if (obj := self.get(key)) is not None and uids.intersection(_owner_uids(obj))}


class _Reads:
    """The store reads of one reconcile, each object read at most once; also the groupers' `Lookup`.

    PodGroups, priority classes and owners come from the process's informers (`groups`, `classes`, `owners`),
    the PodGroups under the grouper's own writes. A PodGroup the cache lacks may only be one the watch has not
    delivered yet: creating it then answers AlreadyExists and is read; where absence decides what to do (a pod
    naming an external PodGroup), `exact=True` reads the store."""

    def __init__(
        self, store: ClusterStore, groups: _PodGroups, classes: Informer, owners: OwnerCache, defaults: Source
    ) -> None:
        self.store = store
        self._defaults = defaults
        self._owner_cache = owners
        self._owners: dict[tuple[str, str, str], JSON | None] = {}
        self._podgroups = groups
        self._classes = classes
        self._once: dict[Hashable, Any] = {}

    def owner(self, ref: Mapping[str, object], namespace: str) -> Obj:
        """The owner a reference names, or what the reference says (unserved kind, gone, or another uid)."""
        raw_ref = dict(ref)
        plural = GVK_TO_PLURAL.get((str(ref.get("apiVersion", "")), str(ref.get("kind", ""))))
        if plural is None:
            return Obj.from_reference(raw_ref, namespace)
        key = (plural, namespace, str(ref.get("name", "")))
        if key not in self._owners:
            self._owners[key] = self._owner_cache.get(plural, namespace, key[2], str(ref.get("uid") or ""))
        obj = self._owners[key]
        if obj is None or (ref.get("uid") and obj.get("metadata", {}).get("uid") != ref.get("uid")):
            return Obj.from_reference(raw_ref, namespace)
        return Obj(obj)

    def podgroup(self, namespace: str, name: str, *, exact: bool = False) -> JSON | None:
        known = self._podgroups.get(f"{namespace}/{name}")
        if known is not None or not exact:
            return known
        try:
            found = self.store.get("podgroups", name, namespace)
        except NotFound:
            return None
        self.remember(namespace, name, found)
        return found

    def remember(self, namespace: str, name: str, obj: JSON) -> None:
        self._podgroups.remember(f"{namespace}/{name}", obj)

    def priority_class_exists(self, name: str) -> bool:
        return self._classes.get(name) is not None

    def podgroup_exists(self, namespace: str, name: str) -> bool:
        return self.podgroup(namespace, name) is not None

    def pods(self, namespace: str, labels: Mapping[str, str]) -> list[JSON]:
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        return self.store.list("pods", namespace, selector)[0]

    def read(self, plural: str, namespace: str, name: str) -> JSON | None:
        try:
            return self._owner_cache.get(plural, namespace, name)
        except StoreError:  # the kind is not installed, or the server is away: as if absent
            return None

    def type_defaults(self) -> TypeDefaults:
        return self.once(_TYPE_DEFAULTS, self._defaults.read)

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        if key not in self._once:
            self._once[key] = make()
        value: T = self._once[key]
        return value


def _chain(pod: JSON, reads: _Reads) -> tuple[Obj, ...]:
    """The pod and its owners up to the top, following controller references (else the first reference)."""
    chain = [Obj(pod)]
    namespace = chain[0].namespace
    seen = {chain[0].uid}
    while len(chain) <= MAX_OWNER_DEPTH:
        raw = chain[-1].meta.get("ownerReferences")
        refs = [r for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
        if not refs:
            break
        ref = next((r for r in refs if r.get("controller")), refs[0])
        if str(ref.get("uid")) in seen:
            break
        owner = reads.owner(ref, namespace)
        chain.append(owner)
        seen.add(owner.uid)
        if owner.partial:
            break
    return tuple(chain)


def _owner_uids(obj: JSON) -> tuple[str, ...]:
    """The uids the object's owner references name: the `OWNERS_INDEX`."""
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    return tuple(
        str(r["uid"]) for r in (refs if isinstance(refs, list) else []) if isinstance(r, dict) and r.get("uid")
    )


def _named_podgroup(pod: JSON) -> tuple[str, ...]:
    """The PodGroup key (`namespace/name`) the pod's `pod-group-name` names, if any: the `MEMBERS_INDEX`."""
    meta = pod.get("metadata") or {}
    name = (meta.get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME)
    return (f"{meta.get('namespace', '')}/{name}",) if isinstance(name, str) and name else ()
