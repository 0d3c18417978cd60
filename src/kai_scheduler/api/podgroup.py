"""PodGroup (`scheduling.run.ai/v2alpha2`): one workload's gang, queue, priority and subgroup tree (§1.2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants, duration
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import JSON, Reader, format_time
from kai_scheduler.api.meta import ObjectMeta

PREEMPTIBILITY_VALUES = ("", constants.PREEMPTIBLE, constants.NON_PREEMPTIBLE)


@dataclass(frozen=True, slots=True)
class TopologyConstraint:
    topology: str = ""
    required_level: str = ""
    preferred_level: str = ""

    @property
    def is_set(self) -> bool:
        return bool(self.topology) and bool(self.required_level or self.preferred_level)

    def to_dict(self) -> JSON:
        out: dict[str, Any] = {"topology": self.topology}
        if self.required_level:
            out["requiredTopologyLevel"] = self.required_level
        if self.preferred_level:
            out["preferredTopologyLevel"] = self.preferred_level
        return out


_NO_CONSTRAINT = TopologyConstraint()


@dataclass(frozen=True, slots=True)
class SubGroup:
    name: str
    min_member: int | None = None
    min_sub_group: int | None = None
    parent: str | None = None
    topology_constraint: TopologyConstraint | None = None


@dataclass(slots=True)
class SchedulingCondition:
    """An `UnschedulableOnNodePool` condition: why the job could not be placed in a node pool."""

    node_pool: str
    reasons: list[tuple[str, str]]  # (reason, message)
    transition_id: str = "1"
    last_transition_time: float | None = None
    # The condition's own reason and message (deprecated in KAI's API for `reasons`, still written by KAI): the
    # reasons in one line, as `kubectl describe` and older clients read them.
    reason: str = ""
    message: str = ""
    raw: JSON | None = field(default=None, compare=False, repr=False)  # as read: written back unchanged

    def of_pool(self, pool: str) -> bool:
        """Whether the condition is the one of node pool `pool` ("" the unlabelled pool). KAI names the unlabelled
        pool `default` in the conditions it writes: after KAI was replaced, that one is the unlabelled pool's too, so
        it is cleared or replaced rather than left beside this scheduler's for good."""
        return self.node_pool == pool or (not pool and self.node_pool == constants.DEFAULT_NODE_POOL_NAME)

    def to_dict(self) -> JSON:
        if self.raw is not None:  # another pool's condition keeps what this scheduler does not model (details)
            return dict(self.raw)
        out: JSON = {
            "type": constants.CONDITION_UNSCHEDULABLE_ON_NODE_POOL,
            "nodePool": self.node_pool,
            "status": "True",
            "transitionID": self.transition_id,
            "reasons": [{"reason": reason, "message": message} for reason, message in self.reasons],
        }
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.last_transition_time is not None:
            out["lastTransitionTime"] = format_time(self.last_transition_time)
        return out


def fit_message(reasons: list[tuple[str, str]]) -> str:
    """The reasons in one line, as KAI's `JobFitErrorsToMessage` words them: the one reason (else `Unable to schedule
    podgroup`), then each message once, with how many times it was given when more than once."""
    if not reasons:
        return constants.DEFAULT_PODGROUP_ERROR
    head = reasons[0][0] if len(reasons) == 1 else constants.DEFAULT_PODGROUP_ERROR
    counts: dict[str, int] = {}
    for _, message in reasons:
        text = message.rstrip(".")
        counts[text] = counts.get(text, 0) + 1
    said = [text if n == 1 else f"{n} {text}" for text, n in counts.items()]
    return f"{head}: {'. '.join(said)}."


@dataclass(slots=True, kw_only=True)
class PodGroup:
    meta: ObjectMeta
    queue: str = ""
    min_member: int | None = None
    min_sub_group: int | None = None
    priority_class_name: str = ""
    preemptibility: str = ""
    topology_constraint: TopologyConstraint = field(default_factory=TopologyConstraint)
    sub_groups: tuple[SubGroup, ...] = ()
    mark_unschedulable: bool = True
    scheduling_backoff: int = -1
    preemption_delay: float | None = None  # seconds
    staleness_grace_period: float | None = None  # seconds; negative = never evict
    scheduling_conditions: list[SchedulingCondition] = field(default_factory=list)
    # Fields that could not be read and took their documented default instead (the object is still used);
    # the snapshot reports each on the PodGroup. Never written back.
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_dict(cls, data: JSON) -> PodGroup:
        """Parse a PodGroup. A bad preemptibility, preemption delay or staleness grace period (also as the
        `kai.scheduler/preemption-delay` / `staleness-grace-period` annotations on the PodGroup itself, used when
        the spec leaves the field out) falls back to its default with an entry in `warnings`.

        A PodGroup whose fields all have their expected types and values (nearly every one) is read straight from
        its dicts; anything else, and every error, goes through the field reader."""
        r = Reader(data, "PodGroup")
        spec, status = data.get("spec"), data.get("status")
        if type(spec) is dict and (status is None or type(status) is dict):
            plain = _read_plain(cls, r, spec, status)
            if plain is not None:
                return plain
        return cls._read_checked(r)

    @classmethod
    def _read_checked(cls, r: Reader) -> PodGroup:
        meta = ObjectMeta.read(r)
        warnings: list[str] = []
        preemptibility = r.str("spec.preemptibility")
        if preemptibility not in PREEMPTIBILITY_VALUES:
            warnings.append(
                f"spec.preemptibility: unknown value {preemptibility!r}; want preemptible or "
                "non-preemptible; using the default (from the priority)"
            )
            preemptibility = ""
        min_member = _non_negative(r, "spec.minMember")
        min_sub_group = _non_negative(r, "spec.minSubGroup")
        if min_member is not None and min_sub_group is not None:
            raise r.error("spec.minSubGroup", "minMember and minSubGroup are mutually exclusive")
        backoff = r.int("spec.schedulingBackoff", -1)
        conditions = _scheduling_conditions(r)
        return cls(
            meta=meta,
            queue=r.str("spec.queue"),
            min_member=min_member,
            min_sub_group=min_sub_group,
            priority_class_name=r.str("spec.priorityClassName"),
            preemptibility=preemptibility,
            topology_constraint=_constraint(r, "spec.topologyConstraint") or TopologyConstraint(),
            sub_groups=_sub_groups(r),
            mark_unschedulable=r.bool("spec.markUnschedulable", True),
            scheduling_backoff=backoff if backoff is not None else -1,
            preemption_delay=_lenient_duration(
                r, "spec.preemptionDelay", constants.ANNOTATION_PREEMPTION_DELAY, warnings
            ),
            staleness_grace_period=_lenient_duration(
                r, "spec.stalenessGracePeriod", constants.ANNOTATION_STALENESS_GRACE_PERIOD, warnings
            ),
            scheduling_conditions=conditions,
            warnings=warnings,
        )

    def to_dict(self) -> JSON:
        spec: dict[str, Any] = {"queue": self.queue}
        if self.min_member is not None:
            spec["minMember"] = self.min_member
        if self.min_sub_group is not None:
            spec["minSubGroup"] = self.min_sub_group
        if self.priority_class_name:
            spec["priorityClassName"] = self.priority_class_name
        if self.preemptibility:
            spec["preemptibility"] = self.preemptibility
        if self.topology_constraint.topology:
            spec["topologyConstraint"] = self.topology_constraint.to_dict()
        if self.sub_groups:
            spec["subGroups"] = [_sub_group_dict(sg) for sg in self.sub_groups]
        if not self.mark_unschedulable:
            spec["markUnschedulable"] = False
        if self.scheduling_backoff != -1:
            spec["schedulingBackoff"] = self.scheduling_backoff
        if self.preemption_delay is not None:
            spec["preemptionDelay"] = duration.format_duration(self.preemption_delay)
        if self.staleness_grace_period is not None:
            spec["stalenessGracePeriod"] = duration.format_duration(self.staleness_grace_period)
        out: JSON = {
            "apiVersion": constants.PODGROUP_API_VERSION,
            "kind": "PodGroup",
            "metadata": self.meta.to_dict(),
            "spec": spec,
        }
        if self.scheduling_conditions:
            out["status"] = {"schedulingConditions": [c.to_dict() for c in self.scheduling_conditions]}
        return out


def _scheduling_conditions(r: Reader) -> list[SchedulingCondition]:
    """The scheduler's own record of what it told the PodGroup, read only to tell it again when it changed: a
    condition or reason not shaped as written is passed over (lenient; nothing scheduled depends on it)."""
    conditions = []
    raw_conditions = r.lenient("status.schedulingConditions")
    for i, c in enumerate(raw_conditions if isinstance(raw_conditions, list) else []):
        if isinstance(c, dict):
            raw_reasons = c.get("reasons")
            reasons = [
                (str(x.get("reason", "")), str(x.get("message", "")))
                for x in (raw_reasons if isinstance(raw_reasons, list) else [])
                if isinstance(x, dict)
            ]
            conditions.append(
                SchedulingCondition(
                    str(c.get("nodePool", "")),
                    reasons,
                    str(c.get("transitionID", "0")),
                    r.time(f"status.schedulingConditions[{i}].lastTransitionTime"),
                    str(c.get("reason") or ""),
                    str(c.get("message") or ""),
                    raw=c,
                )
            )
    return conditions


_PLAIN_STRINGS = ("queue", "priorityClassName")


def _read_plain(cls: type[PodGroup], r: Reader, spec: JSON, status: JSON | None) -> PodGroup | None:
    """The PodGroup from plain fields, or None at the first field the checked reader must read (a wrong type, a
    value out of range, an unknown preemptibility: the checked reader then raises or warns as it does)."""
    for key in _PLAIN_STRINGS:
        value = spec.get(key)
        if value is not None and type(value) is not str:
            return None
    preemptibility = spec.get("preemptibility")
    if preemptibility is not None and (type(preemptibility) is not str or preemptibility not in PREEMPTIBILITY_VALUES):
        return None
    min_member, min_sub_group = spec.get("minMember"), spec.get("minSubGroup")
    if not (_plain_count(min_member) and _plain_count(min_sub_group)):
        return None
    if min_member is not None and min_sub_group is not None:
        return None
    backoff, mark = spec.get("schedulingBackoff"), spec.get("markUnschedulable")
    if (backoff is not None and type(backoff) is not int) or (mark is not None and type(mark) is not bool):
        return None
    constraint = _plain_constraint(spec.get("topologyConstraint"))
    raw_sub_groups = spec.get("subGroups")
    sub_groups = () if raw_sub_groups is None else _plain_sub_groups(raw_sub_groups)
    if constraint is None or sub_groups is None:
        return None
    conditions = []
    if status is not None and status.get("schedulingConditions") is not None:
        try:  # shared with the checked reader: a condition's unreadable time is its one error
            conditions = _scheduling_conditions(r)
        except ObjectError:
            return None
    meta = ObjectMeta.read(r)
    warnings: list[str] = []
    pod_group = object.__new__(cls)  # `__init__` as a function: see `meta._read_plain`
    cls.__init__(
        pod_group,
        meta=meta,
        queue=spec.get("queue") or "",
        min_member=min_member,
        min_sub_group=min_sub_group,
        priority_class_name=spec.get("priorityClassName") or "",
        preemptibility=preemptibility or "",
        topology_constraint=constraint,
        sub_groups=sub_groups,
        mark_unschedulable=True if mark is None else mark,
        scheduling_backoff=-1 if backoff is None else backoff,
        preemption_delay=_plain_duration(
            r, spec, meta, "preemptionDelay", constants.ANNOTATION_PREEMPTION_DELAY, warnings
        ),
        staleness_grace_period=_plain_duration(
            r, spec, meta, "stalenessGracePeriod", constants.ANNOTATION_STALENESS_GRACE_PERIOD, warnings
        ),
        scheduling_conditions=conditions,
        warnings=warnings,
    )
    return pod_group


def _plain_duration(
    r: Reader, spec: JSON, meta: ObjectMeta, key: str, annotation: str, warnings: list[str]
) -> float | None:
    """`_lenient_duration`, without walking the paths when neither the spec nor the annotations name it."""
    if spec.get(key) is None and meta.annotations.get(annotation) is None:
        return None
    return _lenient_duration(r, f"spec.{key}", annotation, warnings)


def _plain_count(value: object) -> bool:
    """Whether a minMember / minSubGroup is absent or a plain non-negative int (a float or a negative one is the
    checked reader's)."""
    return value is None or (type(value) is int and value >= 0)


def _plain_string(value: object) -> bool:
    return value is None or type(value) is str


def _plain_constraint(raw: object) -> TopologyConstraint | None:
    """The topology constraint of plain string fields (absent: the unset one), or None for the checked reader."""
    if raw is None:
        return _NO_CONSTRAINT
    if type(raw) is not dict:
        return None
    topology, required, preferred = (
        raw.get("topology"),
        raw.get("requiredTopologyLevel"),
        raw.get("preferredTopologyLevel"),
    )
    if not (_plain_string(topology) and _plain_string(required) and _plain_string(preferred)):
        return None
    return TopologyConstraint(topology or "", required or "", preferred or "")


def _plain_sub_groups(raw: object) -> tuple[SubGroup, ...] | None:
    """The subgroups when each is plain and the tree is sound (named once, parents known, no cycle); None for
    the checked reader."""
    if type(raw) is not list:
        return None
    out: list[SubGroup] = []
    names: set[str] = set()
    for item in raw:
        sub_group = _plain_sub_group(item)
        if sub_group is None or sub_group.name in names:
            return None
        names.add(sub_group.name)
        out.append(sub_group)
    if any(sg.parent is not None and sg.parent not in names for sg in out) or _has_cycle(out):
        return None
    return tuple(out)


def _plain_sub_group(raw: object) -> SubGroup | None:
    if type(raw) is not dict:
        return None
    name, parent = raw.get("name"), raw.get("parent")
    min_member, min_sub_group = raw.get("minMember"), raw.get("minSubGroup")
    if type(name) is not str or not name or not _plain_string(parent):
        return None
    if not (_plain_count(min_member) and _plain_count(min_sub_group)):
        return None
    if min_member is not None and min_sub_group is not None:
        return None
    raw_constraint = raw.get("topologyConstraint")
    constraint = None if raw_constraint is None else _plain_constraint(raw_constraint)
    if raw_constraint is not None and constraint is None:
        return None
    return SubGroup(name, min_member, min_sub_group, parent or None, constraint)


def _has_cycle(groups: list[SubGroup]) -> bool:
    parent = {sg.name: sg.parent for sg in groups}
    for sg in groups:
        seen, cur = {sg.name}, sg.parent
        while cur is not None:
            if cur in seen:
                return True
            seen.add(cur)
            cur = parent.get(cur)
    return False


def _lenient_duration(r: Reader, path: str, annotation: str, warnings: list[str]) -> float | None:
    """The spec duration, else the PodGroup annotation; an unreadable value is a warning and None (default)."""
    raw = r.get(path)
    where = path
    if raw is None:
        raw = r.get("metadata.annotations", {}).get(annotation)
        where = f"metadata.annotations.{annotation}"
    if raw is None:
        return None
    try:
        return duration.parse_duration(raw)
    except duration.DurationError as err:
        warnings.append(f"{where}: {err}; using the default")
        return None


def _non_negative(r: Reader, path: str) -> int | None:
    value = r.int(path)
    if value is not None and value < 0:
        raise r.error(path, f"must be at least 0, got {value}")
    return value


def _constraint(r: Reader, path: str) -> TopologyConstraint | None:
    raw = r.get(path)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise r.error(path, f"expected a topology constraint, got {raw!r}")
    return TopologyConstraint(
        r.str(f"{path}.topology"), r.str(f"{path}.requiredTopologyLevel"), r.str(f"{path}.preferredTopologyLevel")
    )


def _sub_groups(r: Reader) -> tuple[SubGroup, ...]:
    out: list[SubGroup] = []
    names: set[str] = set()
    for i, raw in enumerate(r.list("spec.subGroups")):
        path = f"spec.subGroups[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise r.error(f"{path}.name", "missing subgroup name")
        name = raw["name"]
        if name in names:
            raise r.error(f"{path}.name", f"duplicate subgroup {name!r}")
        names.add(name)
        min_member, min_sub = _non_negative(r, f"{path}.minMember"), _non_negative(r, f"{path}.minSubGroup")
        if min_member is not None and min_sub is not None:
            raise r.error(f"{path}.minSubGroup", "minMember and minSubGroup are mutually exclusive")
        parent = raw.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise r.error(f"{path}.parent", f"expected a subgroup name, got {parent!r}")
        out.append(SubGroup(name, min_member, min_sub, parent or None, _constraint(r, f"{path}.topologyConstraint")))
    for i, sg in enumerate(out):
        if sg.parent is not None and sg.parent not in names:
            raise r.error(f"spec.subGroups[{i}].parent", f"no subgroup named {sg.parent!r}")
    _check_acyclic(r, out)
    return tuple(out)


def _check_acyclic(r: Reader, groups: list[SubGroup]) -> None:
    parent = {sg.name: sg.parent for sg in groups}
    for i, sg in enumerate(groups):
        seen, cur = {sg.name}, sg.parent
        while cur is not None:
            if cur in seen:
                raise r.error(f"spec.subGroups[{i}].parent", f"subgroup {sg.name!r} is part of a parent cycle")
            seen.add(cur)
            cur = parent.get(cur)


def _sub_group_dict(sg: SubGroup) -> JSON:
    out: dict[str, Any] = {"name": sg.name}
    if sg.min_member is not None:
        out["minMember"] = sg.min_member
    if sg.min_sub_group is not None:
        out["minSubGroup"] = sg.min_sub_group
    if sg.parent is not None:
        out["parent"] = sg.parent
    if sg.topology_constraint is not None:
        out["topologyConstraint"] = sg.topology_constraint.to_dict()
    return out
