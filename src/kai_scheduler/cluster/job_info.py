"""JobInfo: a PodGroup with its pods and its subgroup tree (KAI `api/podgroup_info`).

The tree: a root `SubGroupSet`; inner nodes are `SubGroupSet`s (need `min_sub_group` satisfied children,
all when None); leaves are `PodSet`s (need `min_available` active-allocated pods). A flat PodGroup is a root
with one PodSet named "default" whose min_available is `minMember` (nil → 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api.podgroup import PodGroup, TopologyConstraint
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.pod_status import ACTIVE_ALLOCATED, ACTIVE_USED, ALIVE, BITS, PodStatus, within

DEFAULT_POD_SET = "default"
_SUCCEEDED, _ACTIVE_USED, _ACTIVE_ALLOCATED = PodStatus.SUCCEEDED.value, ACTIVE_USED.value, ACTIVE_ALLOCATED.value
_PENDING = PodStatus.PENDING.value
TaskKey = Callable[[PodInfo], Any]
MemberKey = Callable[["PodSet | SubGroupSet"], Any]


@dataclass(slots=True, eq=False)
class PodSet:
    name: str
    min_available: int
    tasks: list[PodInfo] = field(default_factory=list)
    topology_constraint: TopologyConstraint | None = None
    parent: SubGroupSet | None = None

    def active_allocated(self) -> int:
        return _active_allocated(self.tasks)

    def active_used(self) -> int:
        return sum(1 for t in self.tasks if within(t.status, ACTIVE_USED))

    def is_satisfied(self) -> bool:
        return self.active_allocated() >= self.min_available

    def is_ready(self) -> bool:
        """Enough live, ungated pods exist to ever reach the minimum (`FilterUnready`)."""
        alive = sum(1 for t in self.tasks if within(t.status, ALIVE) and t.status != PodStatus.GATED)
        return alive >= self.min_available

    def pending(self, order: TaskKey) -> list[PodInfo]:
        return sorted((t for t in self.tasks if t.is_pending), key=order)

    def threshold(self) -> int:
        return self.min_available

    def pod_sets(self) -> Iterator[PodSet]:
        yield self


@dataclass(slots=True, eq=False)
class SubGroupSet:
    name: str
    min_sub_group: int | None
    children: list[PodSet | SubGroupSet] = field(default_factory=list)
    topology_constraint: TopologyConstraint | None = None
    parent: SubGroupSet | None = None

    def required(self) -> int:
        return len(self.children) if self.min_sub_group is None else self.min_sub_group

    def threshold(self) -> int:
        return self.required()

    def satisfied_members(self) -> int:
        return sum(1 for c in self.children if c.is_satisfied())

    def is_satisfied(self) -> bool:
        return self.satisfied_members() >= self.required()

    def is_ready(self) -> bool:
        return sum(1 for c in self.children if c.is_ready()) >= self.required()

    def active_allocated(self) -> int:
        return sum(c.active_allocated() for c in self.children)

    def pod_sets(self) -> Iterator[PodSet]:
        for child in self.children:
            yield from child.pod_sets()


Member = PodSet | SubGroupSet


@dataclass(slots=True, kw_only=True, eq=False)
class JobInfo:
    uid: str
    name: str
    namespace: str
    podgroup: PodGroup
    queue: str
    priority: int
    preemptible: bool
    creation: float
    tasks: list[PodInfo]
    root: SubGroupSet
    pod_sets: dict[str, PodSet]
    last_start: float | None = None
    last_eviction: float | None = None
    stale_since: float | None = None
    unassigned: list[PodInfo] = field(default_factory=list)  # pods naming a subgroup that does not exist
    _min_available: int = field(default=-1, init=False, repr=False)  # the tree's, fixed for a snapshot

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def pending_tasks(self) -> list[PodInfo]:
        return [t for t in self.tasks if t.is_pending]

    def has_pending(self) -> bool:
        for t in self.tasks:  # noqa: SIM110  (a loop on the flags' ints: every job a snapshot builds is asked)
            if BITS[t.placement.status] == _PENDING:
                return True
        return False

    def active_allocated(self) -> int:
        return _active_allocated(self.tasks)

    def is_ready(self) -> bool:
        return self.root.is_ready()

    def is_gang_satisfied(self) -> bool:
        return self.root.is_satisfied()

    def min_available(self) -> int:
        """Pods the gang needs in all (sum over the required leaves; used for display and elastic order)."""
        if self._min_available < 0:
            self._min_available = sum(ps.min_available for ps in self.root.pod_sets())
        return self._min_available

    def is_stale(self) -> bool:
        """§3.11: no Succeeded pods, some pod active-used, and some PodSet below its minimum."""
        used = 0
        for t in self.tasks:  # one pass on the flags' ints: this runs for every job a snapshot builds
            status = BITS[t.placement.status]
            if status == _SUCCEEDED:
                return False
            if status & _ACTIVE_USED:
                used += 1
        if not used:
            return False
        if len(self.pod_sets) == 1:  # every task is in the one PodSet
            return used < next(iter(self.pod_sets.values())).min_available
        return any(ps.active_used() < ps.min_available for ps in self.root.pod_sets())

    def tasks_to_allocate(self, task_key: TaskKey, member_key: MemberKey) -> list[PodInfo]:
        """§3.5: gang minimums all at once; once satisfied, one elastic task from the first member with one."""
        if not _any_pending(self.root):
            return []  # every answer below is made of PodSets' pending tasks: a running victim's, most often
        return _tasks_of(self.root, task_key, member_key)


def _active_allocated(tasks: list[PodInfo]) -> int:
    """How many of `tasks` are active and allocated, read from the status flags' ints (no property per task: the
    victim pool ranks every running job)."""
    count = 0
    for t in tasks:
        if BITS[t.placement.status] & _ACTIVE_ALLOCATED:
            count += 1
    return count


def _any_pending(member: Member) -> bool:
    """Whether some PodSet under `member` has a Pending task (as `PodInfo.is_pending`, on the flags' ints)."""
    for pod_set in member.pod_sets():
        for task in pod_set.tasks:
            if BITS[task.placement.status] == _PENDING:
                return True
    return False


def _tasks_of(member: Member, task_key: TaskKey, member_key: MemberKey) -> list[PodInfo]:
    if isinstance(member, PodSet):
        pending = member.pending(task_key)
        if member.is_satisfied():
            return pending[:1]
        return pending[: member.min_available - member.active_allocated()]
    ordered = sorted(member.children, key=member_key)
    if not member.is_satisfied():
        missing = member.required() - member.satisfied_members()
        tasks: list[PodInfo] = []
        for child in [c for c in ordered if not c.is_satisfied()][:missing]:
            tasks.extend(_tasks_of(child, task_key, member_key))
        return tasks
    for child in ordered:
        tasks = _tasks_of(child, task_key, member_key)
        if tasks:
            return tasks
    return []


def build_tree(podgroup: PodGroup) -> tuple[SubGroupSet, dict[str, PodSet]]:
    """The subgroup tree of a PodGroup; leaves keyed by name (§1.2)."""
    root = SubGroupSet("", podgroup.min_sub_group, topology_constraint=None)
    if not podgroup.sub_groups:
        min_member = 1 if podgroup.min_member is None else podgroup.min_member
        leaf = PodSet(DEFAULT_POD_SET, min_member, parent=root)
        root.children.append(leaf)
        return root, {DEFAULT_POD_SET: leaf}
    parents = {sg.parent for sg in podgroup.sub_groups if sg.parent is not None}
    nodes: dict[str, Member] = {}
    for sg in podgroup.sub_groups:
        if sg.name in parents:
            nodes[sg.name] = SubGroupSet(sg.name, sg.min_sub_group, topology_constraint=sg.topology_constraint)
        else:
            nodes[sg.name] = PodSet(sg.name, sg.min_member or 0, topology_constraint=sg.topology_constraint)
    for sg in podgroup.sub_groups:
        node = nodes[sg.name]
        parent = root if sg.parent is None else nodes[sg.parent]
        assert isinstance(parent, SubGroupSet)
        node.parent = parent
        parent.children.append(node)
    leaves = {name: n for name, n in nodes.items() if isinstance(n, PodSet)}
    return root, leaves
