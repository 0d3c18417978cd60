"""Domain selection for SubsetNodes (§7.3 steps 1-4): which topology domains can take a whole subgroup, in order.

Pure functions over the tree's arrays. The caller gives the nodes a subgroup may use (the incoming node set,
inside the tree, schedulable), what each node has free (idle + releasing) and the subgroup's demand:

1. The lowest common domain of those nodes bounds the search, so a nested subgroup stays inside its parent's
   domain; levels above it are the same node set again and are skipped.
2. Fit: for homogeneous tasks, the copies of the task each node can take, summed per domain, against the task
   count; otherwise the summed request against the domain's free resources (every ratio ≤ 1; a resource the
   domain lacks counts as ratio 1000).
3. Candidate levels: from the preferred level (else the required one) up to the required level (else the root).
   Running pods of the subgroup pin the required-level domain they are in.
4. Order: the sorted tree (siblings by fullness max_r(request_r / free_r) descending, ties by id), walked level
   by level from the deepest candidate level up; only domains that fit are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.cluster import tolerance
from kai_scheduler.plugins.topology.tree import DomainTree, Ints, Mask

Matrix = npt.NDArray[np.float64]
Floats = npt.NDArray[np.float64]

MISSING_RATIO = 1000.0  # a requested resource the domain has none of


@dataclass(frozen=True, slots=True)
class Demand:
    """What a subgroup asks for: task count, summed request, and (homogeneous tasks) copies per node."""

    count: int
    total: Floats  # summed request on the snapshot's resource axis
    copies: Floats | None = None  # per node row: copies of the (single) task shape that fit; None: mixed tasks


@dataclass(frozen=True, slots=True)
class Choice:
    level: int
    domain: int


@dataclass(frozen=True, slots=True)
class Selection:
    """Fitting domains in the order to try them; the sorted preferred-level domains (for node scores); and,
    when nothing fits, the roomiest domain of the widest candidate level with how far it falls short."""

    choices: tuple[Choice, ...]
    preferred: tuple[int, ...]
    widest: int
    roomiest: int | None = None
    roomiest_copies: float = 0.0
    roomiest_short: int | None = None  # heterogeneous: the resource column it lacks most


def copies_per_node(free: Matrix, request: Floats, gpu_slots: Floats | None, gpu_column: int) -> Floats:
    """Copies of one task each node can take: min over requested resources of floor(free / request).

    `gpu_slots` (shared-GPU tasks) replaces the GPU column: copies the node's shared groups and whole free
    GPUs can take."""
    wanted = np.flatnonzero(request > 0)
    if gpu_slots is not None:
        wanted = wanted[wanted != gpu_column]
    per_resource = [np.floor(free[:, c] / request[c] + tolerance.RESOURCE) for c in wanted.tolist()]
    if gpu_slots is not None:
        per_resource.append(gpu_slots)
    if not per_resource:
        return np.full(free.shape[0], np.inf)
    copies: Floats = np.maximum(np.minimum.reduce(per_resource), 0.0)
    return copies


def lowest_common_level(tree: DomainTree, nodes: Mask) -> int:
    """The deepest level at which all `nodes` are in one domain (0 = root)."""
    common = 0
    for i, lv in enumerate(tree.levels):
        if np.unique(lv.of_node[nodes]).size == 1:
            common = i
        else:
            break
    return common


def select(
    tree: DomainTree,
    *,
    required: int | None,
    preferred: int | None,
    nodes: Mask,
    free: Matrix,
    demand: Demand,
    pinned: Ints | None = None,
) -> Selection:
    """The fitting domains for `demand` among `nodes`, in the order of step 4.

    `pinned`: row indices of nodes the subgroup already runs on; with a required level they restrict the
    required-level domains to theirs."""
    top = required if required is not None else 0
    bottom = preferred if preferred is not None else top
    common = lowest_common_level(tree, nodes)
    widest = max(top, common)
    deepest = max(bottom, widest)
    fullness, fits, room = {}, {}, {}
    for level in range(1, deepest + 1):
        fullness[level], fits[level], room[level] = _evaluate(tree, level, nodes, free, demand)
    order = _sorted_tree(tree, deepest, fullness)
    allowed = None
    if required is not None and pinned is not None and pinned.size:
        allowed = np.unique(tree.levels[required].of_node[pinned])
        allowed = allowed[allowed >= 0]
    choices: list[Choice] = []
    for level in range(deepest, widest - 1, -1):
        if level == 0:
            if demand_fits_root(tree, nodes, free, demand):
                choices.append(Choice(0, 0))
            continue
        usable = _present(tree, level, nodes) & fits[level]
        if allowed is not None and required is not None and level >= required:
            usable &= np.isin(tree.ancestors(level, required), allowed)
        choices.extend(Choice(level, int(d)) for d in order[level] if usable[d])
    preferred_order: tuple[int, ...] = ()
    if preferred is not None and preferred >= 1:
        present = _present(tree, preferred, nodes)
        preferred_order = tuple(int(d) for d in order[preferred] if present[d])
    if choices:
        return Selection(tuple(choices), preferred_order, widest)
    return _shortfall(tree, widest, nodes, free, demand, room, preferred_order)


def demand_fits_root(tree: DomainTree, nodes: Mask, free: Matrix, demand: Demand) -> bool:
    if demand.copies is not None:
        return bool(demand.copies[nodes].sum() >= demand.count - tolerance.RESOURCE)
    return bool(_ratio(demand.total, free[nodes].sum(axis=0)) <= 1 + tolerance.RESOURCE)


def _evaluate(
    tree: DomainTree, level: int, nodes: Mask, free: Matrix, demand: Demand
) -> tuple[Floats, npt.NDArray[np.bool_], Floats]:
    """Per domain at `level`: fullness, whether the demand fits, and its room (copies, or -worst ratio)."""
    lv = tree.levels[level]
    n_domains = len(lv.ids)
    owner = lv.of_node[nodes]
    domain_free = (
        np.stack(
            [np.bincount(owner, weights=free[nodes, c], minlength=n_domains) for c in range(free.shape[1])], axis=1
        )
        if n_domains
        else np.zeros((0, free.shape[1]))
    )
    asked = demand.total > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(domain_free[:, asked] > 0, demand.total[asked] / domain_free[:, asked], MISSING_RATIO)
    fullness: Floats = ratios.max(axis=1) if ratios.size else np.zeros(n_domains)
    if demand.copies is not None:
        room: Floats = np.bincount(owner, weights=demand.copies[nodes], minlength=n_domains).astype(np.float64)
        fits = room >= demand.count - tolerance.RESOURCE
    else:
        room = -fullness
        fits = fullness <= 1 + tolerance.RESOURCE
    return fullness, fits, room


def _present(tree: DomainTree, level: int, nodes: Mask) -> npt.NDArray[np.bool_]:
    """Domains at `level` that have at least one of `nodes`."""
    lv = tree.levels[level]
    present: npt.NDArray[np.bool_] = np.bincount(lv.of_node[nodes], minlength=len(lv.ids)) > 0
    return present


def _sorted_tree(tree: DomainTree, deepest: int, fullness: dict[int, Floats]) -> dict[int, Ints]:
    """Per level, its domains in sorted-tree order: parents' order first, then fullness descending, then id."""
    order: dict[int, Ints] = {0: np.zeros(1, dtype=np.int64)}
    for level in range(1, deepest + 1):
        lv = tree.levels[level]
        parent_rank = np.empty(len(tree.levels[level - 1].ids), dtype=np.int64)
        parent_rank[order[level - 1]] = np.arange(len(order[level - 1]))
        id_rank = np.argsort(np.argsort(np.array(lv.ids, dtype=object)))
        order[level] = np.lexsort((id_rank, -fullness[level], parent_rank[lv.parent])).astype(np.int64)
    return order


def _ratio(total: Floats, free: Floats) -> float:
    asked = total > 0
    if not asked.any():
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(free[asked] > 0, total[asked] / free[asked], MISSING_RATIO)
    return float(ratios.max())


def _shortfall(
    tree: DomainTree,
    widest: int,
    nodes: Mask,
    free: Matrix,
    demand: Demand,
    room: dict[int, Floats],
    preferred: tuple[int, ...],
) -> Selection:
    """Nothing fits: name the roomiest domain of the widest candidate level."""
    if not nodes.any():
        return Selection((), preferred, widest)
    if widest == 0:
        copies = float(demand.copies[nodes].sum()) if demand.copies is not None else 0.0
        total_free = free[nodes].sum(axis=0)
        return Selection((), preferred, widest, 0, copies, _worst(demand.total, total_free))
    present = _present(tree, widest, nodes)
    scores = np.where(present, room[widest], -np.inf)
    best = int(np.argmax(scores))
    lv = tree.levels[widest]
    domain_free = free[nodes & (lv.of_node == best)].sum(axis=0)
    copies = float(room[widest][best]) if demand.copies is not None else 0.0
    return Selection((), preferred, widest, best, copies, _worst(demand.total, domain_free))


def _worst(total: Floats, free: Floats) -> int | None:
    """The resource column with the highest request/free ratio above 1, if any."""
    asked = np.flatnonzero(total > 0)
    worst, column = 1.0 + tolerance.RESOURCE, None
    for c in asked.tolist():
        ratio = total[c] / free[c] if free[c] > 0 else MISSING_RATIO
        if ratio > worst:
            worst, column = ratio, c
    return column
