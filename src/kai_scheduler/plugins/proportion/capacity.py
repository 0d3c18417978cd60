"""Capacity policy: may a job's tasks be added to its queue at all (BEHAVIOR.md §3.6 step 2)?

Mirrors KAI `plugins/proportion/capacity_policy/` (`IsJobOverQueueCapacity`,
`IsNonPreemptibleJobOverQueueQuota`). Both checks walk the queue chain from the leaf up to its top-level
queue and report the first level and resource (cpu, memory, gpu order) that fails, naming that queue. There is
deliberately no fair-share cap here: a preemptible job may take any free capacity up to the limits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.resources import QUEUE_NAMES, Vector, describe
from kai_scheduler.framework import points
from kai_scheduler.framework.shares import QueueShare

UNLIMITED = -1.0
PLUGIN = "proportion"

Amounts = Sequence[float] | Vector


def over_limit(chain: Sequence[QueueShare], request: Amounts, plugin: str = PLUGIN) -> points.Reject | None:
    """`OverLimit` if, on some level of `chain` (leaf → root), allocated + request would exceed the limit.

    Resources with limit -1 and resources the job does not request are skipped."""
    excess = _first_excess(chain, request, bound=lambda share: share.limit, held=lambda share: share.allocated)
    if excess is None:
        return None
    level, name, need, limit, held = excess
    message = (
        f"{_queue(chain, level)} would exceed its limit of {describe(name, limit)} "
        f"({describe(name, held)} allocated, job needs {describe(name, need)})"
        f"{_unit_hint(name, 'limit', limit)}"
    )
    return points.Reject(plugin, constants.REASON_OVER_LIMIT, message)


def non_preemptible_over_quota(
    chain: Sequence[QueueShare], request: Amounts, plugin: str = PLUGIN
) -> points.Reject | None:
    """`NonPreemptibleOverQuota` if non-preemptible use plus the request would pass a level's deserved quota.

    Only resources the job requests are checked (a job cannot push a resource it does not use over quota);
    deserved -1 is unlimited."""
    excess = _first_excess(
        chain, request, bound=lambda share: share.deserved, held=lambda share: share.allocated_non_preemptible
    )
    if excess is None:
        return None
    level, name, need, deserved, held = excess
    message = (
        f"{_queue(chain, level)}: non-preemptible jobs may use only its deserved "
        f"{describe(name, deserved)} ({describe(name, held)} in use, "
        f"job needs {describe(name, need)}){_unit_hint(name, 'quota', deserved)}"
    )
    return points.Reject(plugin, constants.REASON_NON_PREEMPTIBLE_OVER_QUOTA, message)


def _first_excess(
    chain: Sequence[QueueShare],
    request: Amounts,
    *,
    bound: Callable[[QueueShare], Vector],
    held: Callable[[QueueShare], Vector],
) -> tuple[int, str, float, float, float] | None:
    """The first level of `chain` and resource (cpu, memory, gpu order) where held + request passes the bound
    (beyond tolerance), as (level, resource name, need, bound, held); a bound of -1 and resources the job does
    not request are skipped. None when nothing passes."""
    for level, share in enumerate(chain):
        bounds, holds = bound(share), held(share)
        for r, name in enumerate(QUEUE_NAMES):
            need, limit, have = float(request[r]), float(bounds[r]), float(holds[r])
            if limit == UNLIMITED or need <= 0 or have + need <= limit + tolerance.SHARE:
                continue
            return level, name, need, limit, have
    return None


# Below its threshold a queue's CPU or memory amount was most likely written in the wrong unit (cores or GiB for
# millicores or megabytes, §1.1): `cpu: {limit: 16}` is 0.016 CPU. The messages then say the unit. Per resource:
# (threshold, the CRD's unit, its scale, the unit shown, its scale), amounts as the queue shares hold them.
_UNITS = {"cpu": (100.0, "millicores", 1.0, "CPU", 1000.0), "memory": (100 * 1e6, "megabytes", 1e6, "MB", 1e6)}


def _unit_hint(name: str, field: str, amount: float) -> str:
    """ "; spec.resources.cpu.limit is in millicores: 16 is 0.016 CPU" for a suspiciously small CPU or memory
    amount of a queue, else ""."""
    if name not in _UNITS:
        return ""
    small, unit, crd_scale, shown, shown_scale = _UNITS[name]
    if not 0 < amount < small:
        return ""
    return f"; spec.resources.{name}.{field} is in {unit}: {amount / crd_scale:g} is {amount / shown_scale:g} {shown}"


def _queue(chain: Sequence[QueueShare], level: int) -> str:
    name = f"queue {chain[level].name}"
    return name if level == 0 else f"{name} (parent of {chain[level - 1].name})"
