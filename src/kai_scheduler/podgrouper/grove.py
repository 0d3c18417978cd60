"""Grove grouper (KAI `plugins/grove`): pods of a Grove `PodCliqueSet` (older name `PodGangSet`, `grove.io`).

Grove's operator makes, for a PodCliqueSet, PodCliques (and PodCliqueScalingGroups) that own the pods, and a
`PodGang` (`scheduler.grove.io/v1alpha1`) per gang: its scheduler API. Each pod carries the label
`grove.io/podgang` naming its PodGang, in the pod's namespace. The pod is grouped by that PodGang:

- the PodGroup is the default grouper's with the PodGang as owner: `pg-<podgang>-<podgang uid>`, owned by the
  PodGang, its labels and annotations copied, queue, priority, preemptibility and topology name taken as the
  default grouper takes them; the PodGang's `spec.priorityClassName`, when set, is the priority class;
- one SubGroup per Grove podgroup (`spec.podgroups[i]`: one clique's pods in this gang): its `name`, minMember =
  its `minReplicas`; a pod joins the one whose `podReferences` name it. The PodGroup's minMember is the sum of
  the `minReplicas`;
- each `spec.topologyConstraintGroupConfigs[j]` (podgroups to be packed together) is a parent SubGroup, named by
  its `name`, of the podgroups its `podGroupNames` lists; it needs them all (minSubGroup unset);
- `topologyConstraint.packConstraint` `required` / `preferred` (a node label key) becomes
  `requiredTopologyLevel` / `preferredTopologyLevel` of the PodGroup (`spec.topologyConstraint`), of a parent
  SubGroup (its config's) and of a SubGroup (its podgroup's), on the Topology named by the PodGang's
  `kai.scheduler/topology` annotation, else the PodCliqueSet's (this project's choice; without either, a pack
  constraint is a warning and ignored).

A pod without the label is not grouped (a GroupingError naming the pod). A pod whose PodGang does not exist yet,
or does not reference it yet, is not grouped either (`GangNotReady`: no gang is guessed without it). A PodGang it
cannot read (a field of the wrong type, a negative `minReplicas`, a reference to another namespace, a podgroup name
used twice…) is a GroupingError naming the PodGang and the field. In both cases the pod grouper looks at the pod
again when the PodGang appears or changes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kai_scheduler.api import constants
from kai_scheduler.api.meta import is_label_value
from kai_scheduler.api.podgroup import SubGroup, TopologyConstraint
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import (
    INT32_MAX,
    Context,
    Grouping,
    GroupingError,
    NotReady,
    Obj,
    check_subgroups,
    read_int,
    read_list,
)

PODGANG_LABEL = "grove.io/podgang"
PODGANGS = "podgangs"  # the PodGang's resource (api/kinds.py)


class GangNotReady(NotReady):
    """The pod's PodGang is not there yet (or does not reference the pod yet): the pod waits for it."""


def group(ctx: Context) -> Grouping:
    try:
        return _group(ctx)
    except GroupingError as err:
        gang = ctx.pod.labels.get(PODGANG_LABEL)
        if gang and err.awaited is None:  # a malformed PodGang: its pods are grouped once it is fixed
            err.awaited = (PODGANGS, ctx.pod.namespace, gang)
        raise


def _group(ctx: Context) -> Grouping:
    pod = ctx.pod
    gang_name = pod.labels.get(PODGANG_LABEL, "")
    where_pod = f"pod {pod.namespace}/{pod.name}"
    if not gang_name:
        raise GroupingError(
            f"{where_pod}: no {PODGANG_LABEL} label; cannot tell which PodGang of {ctx.top.kind} "
            f"{ctx.top.namespace}/{ctx.top.name} it belongs to"
        )
    raw = ctx.lookup.read(PODGANGS, pod.namespace, gang_name)
    if raw is None:
        raise GangNotReady(
            f"{where_pod}: waits for its PodGang {pod.namespace}/{gang_name} ({PODGANG_LABEL} label), "
            "which does not exist yet",
            PODGANGS,
            pod.namespace,
            gang_name,
        )
    gang = Obj(raw)
    warnings: list[str] = []
    pg = default.podgroup(ctx, warnings, owner=gang)
    topology = pg.topology_constraint.topology or ctx.top.annotations.get(constants.ANNOTATION_TOPOLOGY, "")
    # What the PodGang says is the same for each of its pods: read once per reconcile, not once per pod (a gang of
    # n pods would cost n² reads of its podReferences).
    key = (
        "grove",
        gang.namespace,
        gang.name,
        gang.uid,
        gang.meta.get("resourceVersion"),
        topology,
        pg.topology_constraint,
    )
    parsed = ctx.lookup.once(key, lambda: _parse(gang, topology, pg.topology_constraint))
    if isinstance(parsed, GroupingError):
        raise parsed
    warnings += parsed.warnings
    if parsed.priority:
        if not ctx.lookup.priority_class_exists(parsed.priority):
            warnings.append(
                f"PodGang {gang.namespace}/{gang.name} spec.priorityClassName: no PriorityClass "
                f"{parsed.priority!r}; used as given"
            )
        pg.priority_class_name = parsed.priority
    mine = parsed.members.get(pod.name, "")
    if not mine:
        raise GangNotReady(
            f"{where_pod}: waits until its PodGang {gang.namespace}/{gang.name} lists it in a podgroup's podReferences",
            PODGANGS,
            gang.namespace,
            gang.name,
        )
    pg.topology_constraint = parsed.constraint
    pg.min_member = parsed.min_member
    pg.min_sub_group = None
    pg.sub_groups = parsed.sub_groups
    return Grouping(pg, subgroup=mine, warnings=warnings)


@dataclass(frozen=True, slots=True)
class _Gang:
    """What a PodGang says, whichever of its pods asks: the PodGroup's constraint, minimum and subgroups, the
    podgroup of each referenced pod (by name), its priority class, and the fields ignored."""

    constraint: TopologyConstraint
    min_member: int
    sub_groups: tuple[SubGroup, ...]
    members: dict[str, str]
    priority: str
    warnings: tuple[str, ...]


def _parse(gang: Obj, topology: str, base: TopologyConstraint) -> _Gang | GroupingError:
    """The PodGang read, or the GroupingError naming its first bad field (kept, as a value, for every pod)."""
    try:
        return _read(gang, topology, base)
    except GroupingError as err:
        return err


def _read(gang: Obj, topology: str, base: TopologyConstraint) -> _Gang:
    where = f"PodGang {gang.namespace}/{gang.name}"
    warnings: list[str] = []
    priority = _str(gang, "spec.priorityClassName")
    constraint = _constraint(gang, "spec.topologyConstraint", topology, base, warnings) or TopologyConstraint()
    podgroups = read_list(gang, "spec.podgroups")
    if not podgroups:
        raise GroupingError(f"{where} spec.podgroups: no podgroups")
    check_subgroups(f"{where} spec.podgroups", len(podgroups))
    names: dict[str, int] = {}
    leaves: list[SubGroup] = []
    members: dict[str, str] = {}
    total = 0
    for i, item in enumerate(podgroups):
        at = f"spec.podgroups[{i}]"
        if not isinstance(item, dict):
            raise GroupingError(f"{where} {at}: expected a mapping, got {item!r}")
        name = _name(gang, f"{at}.name")
        if name in names:
            raise GroupingError(f"{where} {at}.name: podgroup {name!r} is also spec.podgroups[{names[name]}]")
        names[name] = i
        minimum = read_int(gang, f"{at}.minReplicas")
        if minimum is None:
            raise GroupingError(f"{where} {at}.minReplicas: missing")
        total += minimum
        for j, ref in enumerate(read_list(gang, f"{at}.podReferences")):
            ref_at = f"{at}.podReferences[{j}]"
            if not isinstance(ref, dict):
                raise GroupingError(f"{where} {ref_at}: expected a mapping, got {ref!r}")
            namespace = _str(gang, f"{ref_at}.namespace") or gang.namespace
            if namespace != gang.namespace:
                raise GroupingError(
                    f"{where} {ref_at}.namespace: {namespace!r} is not the PodGang's namespace {gang.namespace!r}"
                )
            pod_name = _str(gang, f"{ref_at}.name")
            if not pod_name:
                raise GroupingError(f"{where} {ref_at}.name: missing pod name")
            if pod_name in members:
                raise GroupingError(
                    f"{where} {ref_at}.name: pod {pod_name!r} is also in podgroup {members[pod_name]!r}"
                )
            members[pod_name] = name
        leaves.append(
            SubGroup(
                name,
                min_member=minimum,
                topology_constraint=_constraint(gang, f"{at}.topologyConstraint", topology, None, warnings),
            )
        )
    if total > INT32_MAX:
        raise GroupingError(f"{where} spec.podgroups: minReplicas add up to {total}, more than {INT32_MAX}")
    parents, parent_of = _parents(gang, where, names, topology, warnings)
    subgroups = (*parents, *(dataclasses.replace(sg, parent=parent_of.get(sg.name)) for sg in leaves))
    return _Gang(constraint, total, subgroups, members, priority, tuple(warnings))


def _parents(
    gang: Obj, where: str, podgroups: dict[str, int], topology: str, warnings: list[str]
) -> tuple[list[SubGroup], dict[str, str]]:
    """The parent SubGroups of `spec.topologyConstraintGroupConfigs` and the parent of each podgroup they name,
    checked: a unique name that is no podgroup's, and podgroups that exist and belong to one config only."""
    out: list[SubGroup] = []
    taken: dict[str, str] = {}  # podgroup → the config that holds it
    seen: set[str] = set()
    for i, item in enumerate(read_list(gang, "spec.topologyConstraintGroupConfigs")):
        at = f"spec.topologyConstraintGroupConfigs[{i}]"
        if not isinstance(item, dict):
            raise GroupingError(f"{where} {at}: expected a mapping, got {item!r}")
        name = _name(gang, f"{at}.name")
        if name in podgroups or name in seen:
            raise GroupingError(f"{where} {at}.name: {name!r} is already the name of a podgroup or another config")
        seen.add(name)
        members = read_list(gang, f"{at}.podGroupNames")
        if not members:
            raise GroupingError(f"{where} {at}.podGroupNames: names no podgroup")
        for j, member in enumerate(members):
            if not isinstance(member, str) or member not in podgroups:
                raise GroupingError(f"{where} {at}.podGroupNames[{j}]: no podgroup {member!r} in spec.podgroups")
            if member in taken:
                raise GroupingError(
                    f"{where} {at}.podGroupNames[{j}]: podgroup {member!r} is already in config {taken[member]!r}"
                )
            taken[member] = name
        constraint = _constraint(gang, f"{at}.topologyConstraint", topology, None, warnings)
        out.append(SubGroup(name, topology_constraint=constraint))
    return out, taken


def _constraint(
    gang: Obj, path: str, topology: str, base: TopologyConstraint | None, warnings: list[str]
) -> TopologyConstraint | None:
    """The constraint of a `topologyConstraint` at `path` (levels from its `packConstraint`, over `base`'s), or
    `base` when it sets no level."""
    required = _str(gang, f"{path}.packConstraint.required")
    preferred = _str(gang, f"{path}.packConstraint.preferred")
    if not required and not preferred:
        return base
    if not topology:
        warnings.append(
            f"PodGang {gang.namespace}/{gang.name} {path}.packConstraint: no {constants.ANNOTATION_TOPOLOGY} "
            "annotation on the PodGang or its PodCliqueSet names the Topology; ignored"
        )
        return base
    return TopologyConstraint(
        topology,
        required or (base.required_level if base else ""),
        preferred or (base.preferred_level if base else ""),
    )


def _name(gang: Obj, path: str) -> str:
    name = _str(gang, path)
    if not name:
        raise GroupingError(f"PodGang {gang.namespace}/{gang.name} {path}: missing name")
    if not is_label_value(name):  # a SubGroup's name is the value of the pod's `kai.scheduler/subgroup-name` label
        raise GroupingError(
            f"PodGang {gang.namespace}/{gang.name} {path}: {name!r} is not a label value (at most 63 letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit)"
        )
    return name


def _str(obj: Obj, path: str) -> str:
    try:
        return obj.reader().str(path)
    except ValueError as err:
        raise GroupingError(str(err)) from None
