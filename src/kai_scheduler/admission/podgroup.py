"""PodGroup validating webhook (`/validate-scheduling-run-ai-v2alpha2-podgroup`): KAI's `podgroup_webhook.go`.

Create and update. The PodGroup must parse with the scheduler's parser, which already rejects a negative
`minMember`/`minSubGroup`, both set on one node, unnamed or duplicate subgroups, a missing parent and parent
cycles. Then the subgroup tree rules of BEHAVIOR.md §1.2:

- a leaf SubGroup must set `minMember` and must not set `minSubGroup`;
- a mid-level SubGroup must not set `minMember` (an error on create, a warning on update, as KAI);
- `minSubGroup` above the number of direct children (of the root or a SubGroup) is a warning.

Topology constraints (root and per SubGroup): levels without a `topology` are a warning (ignored by the
scheduler). With a store, a named Topology that does not exist is a warning (it may come later); when it
exists, each level must be one of its node labels or aliases and the preferred level must not be wider than
the required one.

With access control on (`--queue-access-control`, not KAI's), `spec.queue` must admit the PodGroup's namespace
(`admission.access`); on update only a changed queue is checked.
"""

from __future__ import annotations

from kai_scheduler.admission import access
from kai_scheduler.admission.review import Review, Verdict, allow, deny, written
from kai_scheduler.api import PodGroup, Topology
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.podgroup import TopologyConstraint
from kai_scheduler.store.interface import ClusterStore, NotFound, StoreError


def validate(review: Review, store: ClusterStore | None = None, *, access_control: bool = False) -> Verdict:
    pg = written(review, PodGroup.from_dict)
    if isinstance(pg, Verdict):
        return pg
    where = f"PodGroup {pg.meta.key}"
    warnings: list[str] = list(pg.warnings)
    children: dict[str | None, int] = {}
    for sg in pg.sub_groups:
        children[sg.parent] = children.get(sg.parent, 0) + 1
    for i, sg in enumerate(pg.sub_groups):
        path = f"{where} spec.subGroups[{i}]"
        if children.get(sg.name, 0) == 0:
            if sg.min_sub_group is not None:
                return deny(
                    f"{path}.minSubGroup: leaf subgroup {sg.name!r} has no subgroups to count; set minMember instead"
                )
            if sg.min_member is None:
                return deny(f"{path}.minMember: leaf subgroup {sg.name!r} must set minMember")
        elif sg.min_member is not None:
            message = f"{path}.minMember: subgroup {sg.name!r} has subgroups; use minSubGroup instead"
            if review.operation == "CREATE":
                return deny(message)
            warnings.append(message)
    warnings += _min_sub_group_warnings(pg, children, where)
    if access_control and store is not None and _queue_changed(review, pg):
        refused = access.refusal(pg.queue, pg.meta.namespace or review.namespace, store)
        if refused is not None:
            return deny(f"{where} spec.queue: {refused}")
    for path, constraint in _constraints(pg):
        problem = _constraint_problem(constraint, store, warnings, f"{where} {path}")
        if problem:
            return deny(problem)
    return allow(warnings=warnings)


def _queue_changed(review: Review, pg: PodGroup) -> bool:
    old = review.old_object
    if review.operation != "UPDATE" or old is None:
        return True
    spec = old.get("spec")
    return not isinstance(spec, dict) or spec.get("queue") != pg.queue


def _min_sub_group_warnings(pg: PodGroup, children: dict[str | None, int], where: str) -> list[str]:
    out = []
    if pg.min_sub_group is not None and pg.min_sub_group > children.get(None, 0):
        out.append(
            f"{where} spec.minSubGroup: {pg.min_sub_group} is more than the {children.get(None, 0)} "
            "top-level subgroups; the PodGroup can never be satisfied"
        )
    for i, sg in enumerate(pg.sub_groups):
        count = children.get(sg.name, 0)
        if sg.min_sub_group is not None and count and sg.min_sub_group > count:
            out.append(
                f"{where} spec.subGroups[{i}].minSubGroup: {sg.min_sub_group} is more than the {count} "
                f"subgroups of {sg.name!r}"
            )
    return out


def _constraints(pg: PodGroup) -> list[tuple[str, TopologyConstraint]]:
    out = [("spec.topologyConstraint", pg.topology_constraint)]
    out += [
        (f"spec.subGroups[{i}].topologyConstraint", sg.topology_constraint)
        for i, sg in enumerate(pg.sub_groups)
        if sg.topology_constraint is not None
    ]
    return out


def _constraint_problem(
    c: TopologyConstraint, store: ClusterStore | None, warnings: list[str], where: str
) -> str | None:
    """The error of one topology constraint, or None; warnings are appended to `warnings`."""
    if not c.topology:
        if c.required_level or c.preferred_level:
            warnings.append(f"{where}.topology: levels are set without a topology; the constraint is ignored")
        return None
    if store is None:
        return None
    try:
        topology = Topology.from_dict(store.get("topologies", c.topology))
    except NotFound:
        warnings.append(f"{where}.topology: no Topology named {c.topology!r} (yet)")
        return None
    except (StoreError, ObjectError, OSError):
        return None
    labels = [lv.node_label for lv in topology.levels]
    depth: dict[str, int] = {}
    for field, level in (("requiredTopologyLevel", c.required_level), ("preferredTopologyLevel", c.preferred_level)):
        if not level:
            continue
        label = topology.resolve(level)
        if label is None:
            return (
                f"{where}.{field}: Topology {c.topology} has no level {level!r}; want one of "
                f"{', '.join(labels)} or their aliases"
            )
        depth[field] = labels.index(label)
    if depth.get("preferredTopologyLevel", len(labels)) < depth.get("requiredTopologyLevel", -1):
        return (
            f"{where}.preferredTopologyLevel: {c.preferred_level!r} is wider than the required level "
            f"{c.required_level!r}; the preferred level must be the same or narrower"
        )
    return None
