"""Extension points: one typed object per point, with the rule by which plugin answers combine (§4).

Plugins register callables on a point (`ssn.add(points.JOB_ORDER, self.job_order)`); the session calls them in
configured tier order through one dispatcher per combination rule (`framework.dispatch`), which the point's
`combine` selects. Node-level points take and return arrays over all nodes.

| point | callable | combine |
|---|---|---|
| JOB_ORDER, QUEUE_ORDER, TASK_ORDER, SUBGROUP_ORDER | (l, r) -> int | first non-zero, then the session's tie-break |
| JOB_ORDER_KEY | (job) -> a value ordered as the plugin's JOB_ORDER orders jobs | the tuple of answers |
| PRE_PREDICATE | (task, job) -> Reject or None | first rejection |
| PREDICATE | (task, candidates) -> NodeFilter | AND of masks; each plugin's removals are counted for fit errors |
| NODE_PRE_ORDER | (task, candidates) -> None | all run |
| NODE_ORDER | (task, candidates) -> scores | sum |
| JOB_OVER_CAPACITY | (job, tasks) -> Reject or None | first rejection |
| SUBSET_NODES | (job, member, tasks, candidates) -> list of masks | chained: each splits every set |
| ON_ALLOCATE, ON_DEALLOCATE | (task) -> None | all run, in order |
| QUEUE_SHARE | (queue name) -> QueueShare or None | first answer |
| GPU_ORDER | (task, node row, group ids) -> scores per group id | sum |
| PRE_JOB_ALLOCATION | (job) -> None | all run |
| VICTIM_INVARIANT_PRE_PREDICATE | (task, job) -> Reject or None | first rejection |
| CAN_RECLAIM | (job, tasks) -> Reject or None (None = may reclaim) | first rejection |
| RECLAIM_VICTIM_FILTER, PREEMPT_VICTIM_FILTER | (preemptor job, victim job) -> bool | AND of booleans |
| RECLAIM_VALIDATOR, PREEMPT_VALIDATOR | (preemptor job, tasks, scenario) -> Reject or None | first rejection |
| ON_JOB_SOLUTION_START | (job) -> None | all run |
| CHARGE_QUEUE | (leaf queue, GPUs, non-preemptible) -> None | all run |

CHARGE_QUEUE is how a charge that belongs to no task reaches the queues: a DRA claim that holds GPUs no pod was
charged for (a shared claim, an `All` request) charges its queue while it holds them, and refunds it after.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from kai_scheduler.cluster.job_info import JobInfo, Member
    from kai_scheduler.cluster.pod_info import PodInfo
    from kai_scheduler.cluster.queue_info import QueueInfo
    from kai_scheduler.framework.shares import QueueShare

Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]


class Combine(enum.Enum):
    FIRST_NONZERO = "first non-zero"
    FIRST_REJECT = "first rejection"
    AND_MASKS = "and of masks"
    ALL_TRUE = "and of booleans"
    SUM = "sum"
    ALL = "all run"
    CHAIN = "chained"
    FIRST_ANSWER = "first answer"
    TUPLE = "tuple of answers"


F = TypeVar("F", bound=Callable[..., Any])

_BREAKS_TIES: set[Callable[..., Any]] = set()


def breaks_ties(fn: F) -> F:
    """Mark an order callable (QUEUE_ORDER) that never answers 0 for two different items: the session's
    tie-break behind it is never reached, so a caller that compares in bulk may call it alone."""
    _BREAKS_TIES.add(fn)
    return fn


def is_tie_breaking(fn: Callable[..., Any]) -> bool:
    """Whether `fn` (a function or a bound method) was marked with `breaks_ties`."""
    return getattr(fn, "__func__", fn) in _BREAKS_TIES


# Not slotted: typing sets __orig_class__ on ExtensionPoint[F](...) instances. Compared and hashed by identity
# (each point is one module-level object): the session looks a point up for every call, and the generated
# field hash (an Enum's among them) cost seconds per cycle on large clusters.
@dataclass(frozen=True, eq=False)
class ExtensionPoint(Generic[F]):
    name: str
    combine: Combine


@dataclass(frozen=True, slots=True)
class Reject:
    """Why a plugin refused: a reason code (PodGroup condition reason) and a plain-words message."""

    plugin: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """A predicate's answer: which candidate nodes pass, and how to say why the others did not."""

    mask: Mask
    reason: str  # e.g. "node(s) didn't match the node selector"
    # For a check that folds several reasons into one mask: split the rejected nodes by reason, only when a
    # fit error is reported (the common path never pays for it).
    explain: Callable[[Mask], list[tuple[str, int]]] | None = None
    # The filter applies the session's resource fit (`framework.fit`) itself: the session need not repeat it.
    fits_resources: bool = False


JobCompare = Callable[["JobInfo", "JobInfo"], int]
JobKey = Callable[["JobInfo"], Any]
QueueCompare = Callable[["QueueInfo", "QueueInfo", "JobInfo | None", "JobInfo | None"], int]
TaskCompare = Callable[["PodInfo", "PodInfo"], int]
MemberCompare = Callable[["Member", "Member"], int]
PrePredicate = Callable[["PodInfo", "JobInfo"], "Reject | None"]
Predicate = Callable[["PodInfo", Mask], "NodeFilter | None"]
NodePreOrder = Callable[["PodInfo", Mask], None]
NodeOrder = Callable[["PodInfo", Mask], "Scores | None"]
JobOverCapacity = Callable[["JobInfo", "list[PodInfo]"], "Reject | None"]
SubsetNodes = Callable[["JobInfo", "Member", "list[PodInfo]", Mask], "list[Mask] | None"]
TaskEvent = Callable[["PodInfo"], None]
QueueShareGetter = Callable[[str], "QueueShare | None"]
GpuOrder = Callable[["PodInfo", int, "list[str]"], "list[float]"]
JobEvent = Callable[["JobInfo"], None]
CanReclaim = Callable[["JobInfo", "list[PodInfo]"], "Reject | None"]
VictimFilter = Callable[["JobInfo", "JobInfo"], bool]


class VictimScenario(Protocol):
    """What a scenario validator reads of a simulated victim search (the actions' scenario satisfies it).

    `victims`: tasks evicted and not re-placed, in the order they were chosen; `moved`: tasks evicted and
    pipelined onto another node (or other GPUs). Statuses in the model are the simulated ones."""

    @property
    def victims(self) -> Sequence[PodInfo]: ...

    @property
    def moved(self) -> Sequence[PodInfo]: ...


QueueCharger = Callable[[str, float, bool], None]
ScenarioValidator = Callable[["JobInfo", "list[PodInfo]", VictimScenario], "Reject | None"]

JOB_ORDER = ExtensionPoint[JobCompare]("jobOrder", Combine.FIRST_NONZERO)
JOB_ORDER_KEY = ExtensionPoint[JobKey]("jobOrderKey", Combine.TUPLE)
QUEUE_ORDER = ExtensionPoint[QueueCompare]("queueOrder", Combine.FIRST_NONZERO)
TASK_ORDER = ExtensionPoint[TaskCompare]("taskOrder", Combine.FIRST_NONZERO)
SUBGROUP_ORDER = ExtensionPoint[MemberCompare]("subGroupOrder", Combine.FIRST_NONZERO)
PRE_PREDICATE = ExtensionPoint[PrePredicate]("prePredicate", Combine.FIRST_REJECT)
PREDICATE = ExtensionPoint[Predicate]("predicate", Combine.AND_MASKS)
NODE_PRE_ORDER = ExtensionPoint[NodePreOrder]("nodePreOrder", Combine.ALL)
NODE_ORDER = ExtensionPoint[NodeOrder]("nodeOrder", Combine.SUM)
JOB_OVER_CAPACITY = ExtensionPoint[JobOverCapacity]("isJobOverCapacity", Combine.FIRST_REJECT)
SUBSET_NODES = ExtensionPoint[SubsetNodes]("subsetNodes", Combine.CHAIN)
ON_ALLOCATE = ExtensionPoint[TaskEvent]("allocateFunc", Combine.ALL)
ON_DEALLOCATE = ExtensionPoint[TaskEvent]("deallocateFunc", Combine.ALL)
QUEUE_SHARE = ExtensionPoint[QueueShareGetter]("queueShare", Combine.FIRST_ANSWER)
GPU_ORDER = ExtensionPoint[GpuOrder]("gpuOrder", Combine.SUM)
PRE_JOB_ALLOCATION = ExtensionPoint[JobEvent]("preJobAllocation", Combine.ALL)
VICTIM_INVARIANT_PRE_PREDICATE = ExtensionPoint[PrePredicate]("victimInvariantPrePredicate", Combine.FIRST_REJECT)
CAN_RECLAIM = ExtensionPoint[CanReclaim]("canReclaimResources", Combine.FIRST_REJECT)
RECLAIM_VICTIM_FILTER = ExtensionPoint[VictimFilter]("reclaimVictimFilter", Combine.ALL_TRUE)
PREEMPT_VICTIM_FILTER = ExtensionPoint[VictimFilter]("preemptVictimFilter", Combine.ALL_TRUE)
RECLAIM_VALIDATOR = ExtensionPoint[ScenarioValidator]("reclaimScenarioValidator", Combine.FIRST_REJECT)
PREEMPT_VALIDATOR = ExtensionPoint[ScenarioValidator]("preemptScenarioValidator", Combine.FIRST_REJECT)
ON_JOB_SOLUTION_START = ExtensionPoint[JobEvent]("onJobSolutionStart", Combine.ALL)
CHARGE_QUEUE = ExtensionPoint[QueueCharger]("chargeQueue", Combine.ALL)
