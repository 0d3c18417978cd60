"""The default grouper (KAI `plugins/defaultgrouper`): what every PodGroup gets, and minMember 1.

- name `pg-<owner>-<owner uid>`; the owner's labels and annotations are copied to the PodGroup (but
  kubectl's last-applied-configuration), with `kai.scheduler/top-owner-metadata` naming the top owner;
- queue: the owner's queue label, else the pod's (a pod labelled for another queue than its owner is a
  warning), else the `project` label (`<project>-<node pool>` when
  the pod carries the node-pool label), else `default-queue`;
- priority class: the first of the owner's `priorityClassName` label, the pod's, and `pod.spec.priorityClassName`
  that names an existing PriorityClass, else the defaults ConfigMap's class for the owners' kinds
  (`type_defaults`, when it names an existing class), else the kind's built-in default (`train`; written even if
  no such class exists);
- preemptibility: the owner's or the pod's `kai.scheduler/preemptibility` label (a bad value is ignored), else
  the defaults ConfigMap's for the owners' kinds;
- topology constraint from the owner's `kai.scheduler/topology*` annotations;
- preemption delay and staleness grace period from the owner's or the pod's annotations.

"Owner" is the object the workload is grouped by: the top owner, or the object a grouper picks below it.
The PodGroup is written with its owner's creationTimestamp: a real API server replaces it with the time of
the create (moments after the owner's), the embedded store keeps it, so a loaded or replayed workload keeps
its age, which orders jobs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from kai_scheduler.api import constants, duration
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.podgroup import PodGroup, TopologyConstraint
from kai_scheduler.podgrouper import type_defaults
from kai_scheduler.podgrouper.context import Context, Grouping, Obj

PREFIX = "pg"
_PREEMPTIBILITY = (constants.PREEMPTIBLE, constants.NON_PREEMPTIBLE)
_NOT_COPIED = frozenset({constants.ANNOTATION_LAST_APPLIED})


def group(ctx: Context) -> Grouping:
    """One PodGroup for the top owner, minMember 1."""
    warnings: list[str] = []
    return Grouping(podgroup(ctx, warnings), warnings=warnings)


def per_pod(ctx: Context) -> Grouping:
    """One PodGroup per pod (`pg-<pod>-<pod uid>`, owned by the pod), minMember 1: Deployments, and Knative
    Services without gang scheduling. Metadata and the default priority class still come from the top owner."""
    warnings: list[str] = []
    pg = podgroup(ctx, warnings, name=name_for(ctx.pod))
    pg.meta.owner_references = (ctx.pod.reference(),)
    pg.meta.creation_timestamp = ctx.pod.created
    return Grouping(pg, warnings=warnings)


def name_for(owner: Obj, suffix: str = "") -> str:
    return f"{PREFIX}-{owner.name}-{owner.uid}{suffix}"


def podgroup(
    ctx: Context,
    warnings: list[str],
    *,
    owner: Obj | None = None,
    name: str | None = None,
    priority_labels: Sequence[str] = (),
) -> PodGroup:
    """The default PodGroup of the pod's workload grouped by `owner` (default: the top owner).

    `priority_labels`: owner labels checked before `priorityClassName` (Ray's `ray.io/priority-class-name`)."""
    owner = owner or ctx.top
    pod = ctx.pod
    annotations = {k: v for k, v in owner.annotations.items() if k not in _NOT_COPIED}
    annotations[constants.ANNOTATION_TOP_OWNER_METADATA] = top_owner_metadata(ctx.top)
    meta = ObjectMeta(
        name=name or name_for(owner),
        namespace=pod.namespace,
        labels=owner.labels,
        annotations=annotations,
        owner_references=(owner.reference(),),
        creation_timestamp=owner.created,
    )
    return PodGroup(
        meta=meta,
        queue=queue(ctx, owner, warnings),
        min_member=1,
        priority_class_name=priority_class(ctx, owner, priority_labels, warnings),
        preemptibility=preemptibility(ctx, owner, warnings),
        topology_constraint=topology(owner),
        preemption_delay=_duration(ctx, owner, constants.ANNOTATION_PREEMPTION_DELAY, warnings),
        staleness_grace_period=_duration(ctx, owner, constants.ANNOTATION_STALENESS_GRACE_PERIOD, warnings),
    )


def top_owner_metadata(top: Obj) -> str:
    """The `kai.scheduler/top-owner-metadata` annotation: the top owner's identity as compact JSON."""
    group, _, version = top.api_version.rpartition("/")
    fields = {"group": group, "version": version, "kind": top.kind, "name": top.name, "uid": top.uid}
    return json.dumps(fields, separators=(",", ":"))


def queue(ctx: Context, owner: Obj, warnings: list[str] | None = None) -> str:
    """The owner's queue label wins over the pod's (KAI); a pod labelled for another queue than its owner is a
    warning, since its user most likely meant the pod's."""
    key = ctx.config.queue_label_key
    mine, pods = owner.labels.get(key), ctx.pod.labels.get(key)
    if mine and pods and mine != pods and warnings is not None:
        warnings.append(
            f"pod label {key}: {pods!r} differs from its {owner.kind} {owner.name}'s {mine!r}; "
            f"the {owner.kind}'s is used"
        )
    for labels in (owner.labels, ctx.pod.labels):
        if labels.get(key):
            return labels[key]
    project = owner.labels.get(constants.LABEL_PROJECT) or ctx.pod.labels.get(constants.LABEL_PROJECT)
    if project:
        node_pool = ctx.pod.labels.get(ctx.config.node_pool_label_key)
        return f"{project}-{node_pool}" if node_pool else project
    return ctx.config.default_queue


def priority_class(
    ctx: Context, owner: Obj, extra_labels: Sequence[str] = (), warnings: list[str] | None = None
) -> str:
    """The first candidate that names an existing PriorityClass, else the top owner kind's default. A label
    naming a class that does not exist is a warning (the API server refuses such a `spec.priorityClassName`
    itself, but not a label), so a typo does not silently run the job at the default priority."""
    pod = ctx.pod
    candidates = [(f"label {label}", owner.labels.get(label, "")) for label in extra_labels]
    candidates += [
        (f"label {constants.LABEL_PRIORITY_CLASS}", owner.labels.get(constants.LABEL_PRIORITY_CLASS, "")),
        (f"label {constants.LABEL_PRIORITY_CLASS}", pod.labels.get(constants.LABEL_PRIORITY_CLASS, "")),
        ("spec.priorityClassName", str(pod.get("spec.priorityClassName") or "")),
    ]
    missing: list[str] = []
    chosen = ""
    for where, name in candidates:
        if not name:
            continue
        if ctx.lookup.priority_class_exists(name):
            chosen = name
            break
        if (text := f"{where}: no PriorityClass {name!r}") not in missing:  # a bare pod is its own owner
            missing.append(text)
    chosen = chosen or _kind_default_class(ctx) or ctx.config.default_priority_class(ctx.top.group_kind)
    if warnings is not None:
        warnings.extend(f"{m}; using {chosen!r}" for m in missing)
    return chosen


def preemptibility(ctx: Context, owner: Obj, warnings: list[str]) -> str:
    for where, obj in (("owner", owner), ("pod", ctx.pod)):
        value = obj.labels.get(constants.LABEL_PREEMPTIBILITY)
        if value is None:
            continue
        if value in _PREEMPTIBILITY:
            return value
        warnings.append(
            f"{where} label {constants.LABEL_PREEMPTIBILITY}: unknown value {value!r}; want "
            f"{' or '.join(_PREEMPTIBILITY)}; ignored"
        )
    return next((d.preemptibility for d in _kind_defaults(ctx) if d.preemptibility), "")


def _kind_defaults(ctx: Context) -> list[type_defaults.TypeDefault]:
    """The defaults ConfigMap's entries for the owners' kinds, in the order they apply."""
    defaults = ctx.lookup.type_defaults()
    if not defaults:
        return []
    found = (type_defaults.for_kind(defaults, *o.group_kind) for o in ctx.defaulting_owners())
    return [d for d in found if d is not None]


def _kind_default_class(ctx: Context) -> str:
    """The first of the owners' kind defaults that names an existing PriorityClass ("" if none)."""
    classes = (d.priority_class for d in _kind_defaults(ctx) if d.priority_class)
    return next((c for c in classes if ctx.lookup.priority_class_exists(c)), "")


def topology(owner: Obj) -> TopologyConstraint:
    annotations = owner.annotations
    name = annotations.get(constants.ANNOTATION_TOPOLOGY, "")
    if not name:
        return TopologyConstraint()
    return TopologyConstraint(
        name,
        annotations.get(constants.ANNOTATION_TOPOLOGY_REQUIRED, ""),
        annotations.get(constants.ANNOTATION_TOPOLOGY_PREFERRED, ""),
    )


def _duration(ctx: Context, owner: Obj, key: str, warnings: list[str]) -> float | None:
    for where, obj in (("owner", owner), ("pod", ctx.pod)):
        raw = obj.annotations.get(key)
        if raw is None:
            continue
        try:
            return duration.parse_duration(raw)
        except duration.DurationError as err:
            warnings.append(f"{where} annotation {key}: {err}; ignored")
    return None
