"""DRA in the model: which devices exist, which claims hold them, and where a pod's claims can be allocated.

- `Inventory`: the devices of the published ResourceSlices (the newest generation of each pool), each on one
  node's row or in a network-attached pool reachable from the nodes its node selector matches; kept while the
  slices and nodes are the same objects. Per request kind (`Matcher`: a DeviceClass with its and the request's
  CEL selectors) a boolean over devices says which match.
- `DraState`: one cycle's allocations. Claims allocated in the cluster (`status.allocation`) and claims of
  in-flight BindRequests hold their devices; a claim whose every user is Releasing frees them (a pod can be
  pipelined onto them). Inside a session the dynamicresources plugin takes and releases devices as tasks are
  allocated and deallocated (statement do and undo), so a gang's claims allocate together or not at all.
- GPU accounting (docs/dra.md "Queues and fair share"): a whole GPU of NVIDIA's driver is a GPU. A node counts
  its own DRA GPUs in its `nvidia.com/gpu` allocatable, and the GPUs of network-attached pools that some node of
  the snapshot reaches count in the cluster's total (`network_gpus`), on no node. A pod counts the `count` of
  the ExactCount requests of its per-pod (template) claims of a GPU DeviceClass as whole GPUs of its own. What
  no pod can be charged for ahead of a node, the GPU devices of a shared claim (every request, once) and of an
  `All` request, is charged to a queue by the claim itself while it holds them (`Charge`): to the queue of the
  user that made it hold them, and refunded to that queue when its last user leaves. So a queue's GPUs are the
  devices its claims hold, each once, and the total counts every device that can be charged.

Per node, the free devices that match each matcher are counted in an array kept in step with every take and
release, so the feasibility of a one-request claim over every node is one vector comparison.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kai_scheduler.api import constants, dra, selectors
from kai_scheduler.api.bindrequest import BindRequest, ClaimAllocation
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.resources import GpuRequest
from kai_scheduler.cluster import cel
from kai_scheduler.cluster.pod_info import PodInfo

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(slots=True)
class DraObjects:
    """The DRA objects a snapshot is built from."""

    classes: list[dra.DeviceClass] = field(default_factory=list)
    slices: list[dra.ResourceSlice] = field(default_factory=list)
    claims: list[dra.ResourceClaim] = field(default_factory=list)
    templates: list[dra.ResourceClaimTemplate] = field(default_factory=list)


def is_gpu_device(driver: str, device: dra.Device) -> bool:
    """A whole GPU of NVIDIA's driver (its MIG slices carry `type: mig` and are not whole GPUs)."""
    if driver != dra.GPU_DRIVER:
        return False
    kind = dict(device.attributes).get("type", dict(device.attributes).get(f"{dra.GPU_DRIVER}/type", "gpu"))
    return kind == "gpu"


def claim_key(pod: Pod, claim: dra.PodClaim) -> str | None:
    """The ResourceClaim `namespace/name` a pod claim names: its own, or the one made for it from its template
    (None while that one is not made yet)."""
    if claim.claim_name:
        return f"{pod.namespace}/{claim.claim_name}"
    made = pod.claim_statuses.get(claim.name)
    return f"{pod.namespace}/{made}" if made else None


def claim_names(pod: Pod) -> str:
    """The pod's claims as a reader finds them: the ResourceClaim's `namespace/name`, else the pod claim."""
    return ", ".join(claim_key(pod, pc) or pc.name for pc in pod.resource_claims)


def pod_gpus(pod: Pod, claims: dict[str, dra.ResourceClaim], templates: dict[str, dra.ResourceClaimTemplate]) -> int:
    """Whole GPUs a pod asks through its per-pod (template) claims of a GPU DeviceClass, ExactCount requests."""
    total = 0
    for pc in pod.resource_claims:
        if not pc.template_name:
            continue  # a shared claim is not one pod's: not charged per pod
        key = claim_key(pod, pc)
        made = claims.get(key) if key else None
        source = made.requests if made is not None else None
        if source is None:
            template = templates.get(f"{pod.namespace}/{pc.template_name}")
            source = template.requests if template is not None else ()
        total += sum(r.count for r in source if r.allocation_mode == "ExactCount" and dra.is_gpu_class(r.device_class))
    return total


def is_claim_charged(claim: dra.ResourceClaim) -> bool:
    """The claim charges its queue itself for some of its devices: a shared claim, or one with an `All` request."""
    return not claim.owner_pod_uid or any(r.allocation_mode == "All" for r in claim.requests)


def claim_charged_requests(claim: dra.ResourceClaim) -> frozenset[str]:
    """The requests of the claim whose GPU devices the claim charges (no pod is charged for them ahead)."""
    shared = not claim.owner_pod_uid
    return frozenset(
        r.name for r in claim.requests if dra.is_gpu_class(r.device_class) and (shared or r.allocation_mode == "All")
    )


@dataclass(frozen=True, slots=True)
class Owner:
    """Whom a claim's own charge goes to: a leaf queue, and whether the job that made it hold is non-preemptible."""

    queue: str
    non_preemptible: bool = False


@dataclass(frozen=True, slots=True)
class Charge:
    """GPUs a claim charged (positive) or gave back (negative) to a queue."""

    owner: Owner
    gpus: float


@dataclass(slots=True)
class DraDerived:
    """What was derived from the DRA objects, reused from cycle to cycle while its inputs are the same: the nodes
    and pods with their device GPUs (the same objects), the inventory and the selector results."""

    nodes: dict[str, tuple[Node, int, Node]] = field(default_factory=dict)
    pods: dict[str, tuple[Pod, int, Pod]] = field(default_factory=dict)
    inventory: Inventory | None = None
    evaluator: cel.Evaluator = field(default_factory=cel.Evaluator)
    network: list[dra.ResourceSlice] = field(default_factory=list)  # network-attached slices with GPUs


def network_gpus(derived: DraDerived, nodes: Sequence[Node]) -> int:
    """The GPUs of the network-attached pools that at least one of `nodes` reaches (counted on no node)."""
    total = 0
    for s in derived.network:
        if s.all_nodes or any(_selects(s, n) for n in nodes):
            total += sum(is_gpu_device(s.driver, d) for d in s.devices)
    return total


def with_device_counts(
    nodes: list[Node], pods: list[Pod], objects: DraObjects, derived: DraDerived
) -> tuple[list[Node], list[Pod]]:
    """Nodes with their DRA GPUs in `nvidia.com/gpu` allocatable and pods with their claims' GPUs as whole-GPU
    requests; the same objects where nothing is added (and, across cycles, while nothing changed)."""
    derived.network = []
    if not objects.slices and not objects.claims and not objects.templates:
        return nodes, pods
    local: dict[str, int] = {}
    for s in current_slices(objects.slices):
        if s.node_name:
            local[s.node_name] = local.get(s.node_name, 0) + sum(is_gpu_device(s.driver, d) for d in s.devices)
        elif any(is_gpu_device(s.driver, d) for d in s.devices):
            derived.network.append(s)
    nodes_now: dict[str, tuple[Node, int, Node]] = {}
    new_nodes = [_node_with(n, local.get(n.name, 0), derived.nodes, nodes_now) for n in nodes]
    claims = {c.key: c for c in objects.claims}
    templates = {t.meta.key: t for t in objects.templates}
    pods_now: dict[str, tuple[Pod, int, Pod]] = {}
    new_pods = [
        _pod_with(p, pod_gpus(p, claims, templates) if p.resource_claims else 0, derived.pods, pods_now) for p in pods
    ]
    derived.nodes, derived.pods = nodes_now, pods_now  # what is gone is forgotten
    return new_nodes, new_pods


def _node_with(
    node: Node, gpus: int, before: dict[str, tuple[Node, int, Node]], now: dict[str, tuple[Node, int, Node]]
) -> Node:
    if not gpus:
        return node
    entry = before.get(node.name)
    if entry is None or entry[0] is not node or entry[1] != gpus:
        allocatable = dict(node.allocatable)
        allocatable[constants.RESOURCE_GPU] = allocatable.get(constants.RESOURCE_GPU, 0.0) + gpus
        entry = (node, gpus, dataclasses.replace(node, allocatable=allocatable))
    now[node.name] = entry
    return entry[2]


def _pod_with(
    pod: Pod, gpus: int, before: dict[str, tuple[Pod, int, Pod]], now: dict[str, tuple[Pod, int, Pod]]
) -> Pod:
    if not gpus or pod.gpu.is_shared:
        return pod
    key = pod.meta.key
    entry = before.get(key)
    if entry is None or entry[0] is not pod or entry[1] != gpus:
        requests = dict(pod.requests)
        whole = int(requests.get(constants.RESOURCE_GPU, 0.0)) + gpus
        requests[constants.RESOURCE_GPU] = float(whole)
        entry = (pod, gpus, dataclasses.replace(pod, requests=requests, gpu=GpuRequest(whole=whole)))
    now[key] = entry
    return entry[2]


def current_slices(slices: Iterable[dra.ResourceSlice]) -> list[dra.ResourceSlice]:
    """The slices of each pool's newest generation, in (driver, pool, name) order."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        pool = (s.driver, s.pool)
        newest[pool] = max(newest.get(pool, s.generation), s.generation)
    current = [s for s in slices if s.generation == newest[(s.driver, s.pool)]]
    return sorted(current, key=lambda s: (s.driver, s.pool, s.meta.name))


# --- the inventory -----------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Matcher:
    """The devices one request kind may get: `match` over the inventory, or the selector's error."""

    match: BoolArray
    error: str = ""


@dataclass(slots=True, eq=False)
class Inventory:
    slices: tuple[dra.ResourceSlice, ...]
    nodes: tuple[Node, ...]  # network-attached pools are reached by node labels
    drivers: list[str]
    pools: list[str]
    devices: list[dra.Device]
    row: IntArray  # node row of a node-local device, -1 for a network-attached one
    pool_of: IntArray  # index into `reach` of a network-attached device, -1 for a node-local one
    reach: list[BoolArray]  # per network-attached pool (slice): the node rows that reach it
    reach_selectors: list[dra.ResourceSlice]
    index: dict[tuple[str, str, str], int]
    local: list[list[int]]  # per node row: its devices, in name order
    remote: list[list[int]]  # per node row: the network-attached devices it reaches
    matchers: dict[tuple[str, tuple[str, ...]], Matcher] = field(default_factory=dict)

    @classmethod
    def build(cls, slices: list[dra.ResourceSlice], nodes: Sequence[Node]) -> Inventory:
        rows = {n.name: i for i, n in enumerate(nodes)}
        drivers: list[str] = []
        pools: list[str] = []
        devices: list[dra.Device] = []
        row: list[int] = []
        pool_of: list[int] = []
        reach: list[BoolArray] = []
        reach_selectors: list[dra.ResourceSlice] = []
        local: list[list[int]] = [[] for _ in nodes]
        remote: list[list[int]] = [[] for _ in nodes]
        index: dict[tuple[str, str, str], int] = {}
        for s in current_slices(slices):
            if s.node_name:
                r = rows.get(s.node_name, -1)
                if r < 0:
                    continue  # a node outside this pool (or gone)
                p = -1
            else:
                p = len(reach)
                reach.append(np.array([s.all_nodes or _selects(s, n) for n in nodes], dtype=bool))
                reach_selectors.append(s)
                r = -1
            for d in sorted(s.devices, key=lambda d: d.name):
                i = len(devices)
                index[(s.driver, s.pool, d.name)] = i
                drivers.append(s.driver)
                pools.append(s.pool)
                devices.append(d)
                row.append(r)
                pool_of.append(p)
                if r >= 0:
                    local[r].append(i)
                else:
                    for reached in np.flatnonzero(reach[p]).tolist():
                        remote[reached].append(i)
        return cls(
            tuple(slices),
            tuple(nodes),
            drivers,
            pools,
            devices,
            np.array(row, dtype=np.int64),
            np.array(pool_of, dtype=np.int64),
            reach,
            reach_selectors,
            index,
            local,
            remote,
        )

    def same(self, slices: list[dra.ResourceSlice], nodes: Sequence[Node]) -> bool:
        return (
            len(self.slices) == len(slices)
            and all(map(operator.is_, self.slices, slices))
            and len(self.nodes) == len(nodes)
            and all(map(operator.is_, self.nodes, nodes))
        )

    def matcher(self, device_class: dra.DeviceClass, request: dra.DeviceRequest, evaluator: cel.Evaluator) -> Matcher:
        expressions = (*device_class.selectors, *request.selectors)
        key = (device_class.name, expressions)
        found = self.matchers.get(key)
        if found is not None:
            return found
        match = np.zeros(len(self.devices), dtype=bool)
        error = ""
        for expression in expressions:
            compile_error = cel.check(expression)
            if compile_error is not None:
                error = str(compile_error)
                break
        if not error:
            try:
                for i, device in enumerate(self.devices):
                    match[i] = all(evaluator.matches(e, self.drivers[i], device) for e in expressions)
            except cel.SelectorError as err:
                error = str(err)
                match[:] = False
        found = self.matchers[key] = Matcher(match, error)
        return found


def _selects(s: dra.ResourceSlice, node: Node) -> bool:
    return any(t.matches(node.meta.labels, node.name) for t in s.node_selector)


# --- one cycle's allocations ----------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class ClaimState:
    """A claim with devices: as allocated in the cluster, by an in-flight BindRequest, or in this session."""

    devices: tuple[int, ...]
    results: tuple[dra.DeviceResult, ...]
    users: set[str]  # task uids using it (not Releasing)
    held: bool = True  # its devices are taken; False once every user has left (evicted, or Releasing)
    made_here: bool = False  # allocated in this session (undone with its last user)
    gpus: int = 0  # GPU devices the claim charges itself (shared claims, All requests)
    charged: Owner | None = None  # … to this queue, while held
    charged_by: str = ""  # the user (task uid) whose queue it is charged to
    owners: dict[str, Owner] = field(default_factory=dict)  # users whose queue is known, by task uid


@dataclass(frozen=True, slots=True)
class Demand:
    """One request of a pod's unallocated claim, as the inventory sees it."""

    claim: str  # claim key
    request: dra.DeviceRequest
    matcher: Matcher


class DraState:
    def __init__(
        self,
        inventory: Inventory,
        objects: DraObjects,
        evaluator: cel.Evaluator,
        n_nodes: int,
    ) -> None:
        self.inventory = inventory
        self.evaluator = evaluator
        self.n_nodes = n_nodes
        self.classes = {c.name: c for c in objects.classes}
        self.claims = {c.key: c for c in objects.claims}
        self.free = np.ones(len(inventory.devices), dtype=bool)
        self.allocs: dict[str, ClaimState] = {}
        self._free_local: dict[int, IntArray] = {}  # id(matcher) → free matching devices per node row
        self._free_pool: dict[int, IntArray] = {}  # id(matcher) → free matching devices per network pool
        self._matchers: dict[int, Matcher] = {}
        self._task_claims: dict[str, list[tuple[str, str]]] = {}
        self._problems: dict[str, tuple[str | None]] = {}
        self._claim_demands: dict[str, list[Demand]] = {}
        self._charged_requests: dict[str, frozenset[str]] = {}
        self.charges: list[Charge] = []  # claims' own charges since the last `drain_charges`

    @classmethod
    def build(
        cls,
        objects: DraObjects,
        derived: DraDerived,
        nodes: Sequence[Node],
        tasks: Iterable[PodInfo],
        bind_requests: dict[str, BindRequest],
        owner_of: Callable[[PodInfo], Owner | None] = lambda _: None,
    ) -> DraState:
        """The cycle's allocations; a claim that holds devices it charges itself is charged to the queue of its
        first user (by uid) that `owner_of` knows."""
        tasks = list(tasks)
        inventory = derived.inventory
        if inventory is None or not inventory.same(objects.slices, nodes):
            inventory = derived.inventory = Inventory.build(objects.slices, nodes)
        state = cls(inventory, objects, derived.evaluator, len(nodes))
        by_task: dict[str, set[str]] = {}  # claim key → uids of on-node tasks using it, Releasing ones apart
        releasing: dict[str, set[str]] = {}
        for task in tasks:
            if not task.pod.resource_claims or not task.is_on_node:
                continue
            for _, key in state.claims_of(task):
                (releasing if task.is_releasing else by_task).setdefault(key, set()).add(str(task.uid))
        by_uid = {str(t.uid): t for t in tasks}

        def owners(users: Iterable[str]) -> dict[str, Owner]:
            out = {}
            for uid in users:
                task = by_uid.get(uid)
                found = owner_of(task) if task is not None else None
                if found is not None:
                    out[uid] = found
            return out

        for claim in state.claims.values():
            if claim.allocation is None:
                continue
            users = by_task.get(claim.key, set()) | {c.uid for c in claim.reserved_for if c.resource == "pods"}
            users -= releasing.get(claim.key, set())
            held = bool(users) or claim.key not in releasing
            state._record(claim.key, claim.allocation.results, users, held=held, owners=owners(users))
        for task in tasks:
            br = bind_requests.get(task.key)
            if br is None or not br.is_for(str(task.uid)) or not br.resource_claim_allocations or task.is_releasing:
                continue
            names = dict(state.claims_of(task))
            for made in br.resource_claim_allocations:
                wanted = names.get(made.name)
                if wanted is not None and wanted not in state.allocs:
                    uid = str(task.uid)
                    state._record(wanted, made.allocation.results, {uid}, held=True, owners=owners([uid]))
        state.charges.clear()  # what the build holds is read with `held_charges`; `charges` are the session's
        return state

    def _record(
        self,
        key: str,
        results: Sequence[dra.DeviceResult],
        users: set[str],
        *,
        held: bool,
        owners: dict[str, Owner],
    ) -> None:
        index = self.inventory.index
        picks = [(r.request, index.get((r.driver, r.pool, r.device))) for r in results]
        devices = tuple(i for _, i in picks if i is not None)
        gpus = self._claim_gpus(key, [(name, i) for name, i in picks if i is not None])
        self.allocs[key] = ClaimState(devices, tuple(results), users, held=False, gpus=gpus, owners=owners)
        if held:
            first = min(owners) if owners else ""
            self._hold(key, owners.get(first), first)

    # --- the claims' own charges ---

    def _claim_gpus(self, key: str, picks: Iterable[tuple[str, int]]) -> int:
        """GPU devices among `picks` (request name, device) that claim `key` charges itself."""
        requests = self._charged_requests.get(key)
        if requests is None:
            claim = self.claims.get(key)
            requests = self._charged_requests[key] = claim_charged_requests(claim) if claim is not None else frozenset()
        if not requests:
            return 0
        inventory = self.inventory
        return sum(
            1 for name, i in picks if name in requests and is_gpu_device(inventory.drivers[i], inventory.devices[i])
        )

    def held_charges(self) -> dict[str, tuple[float, float]]:
        """Per queue, the GPUs its claims charge now: (all, of non-preemptible jobs)."""
        out: dict[str, tuple[float, float]] = {}
        for state in self.allocs.values():
            owner = state.charged
            if owner is None or not state.held:
                continue
            gpus, non_preemptible = out.get(owner.queue, (0.0, 0.0))
            out[owner.queue] = (gpus + state.gpus, non_preemptible + (state.gpus if owner.non_preemptible else 0))
        return out

    def shared_demand(self, task: PodInfo) -> list[tuple[str, int]]:
        """(claim key, GPUs) of the task's shared claims that hold no devices yet: what they will charge, as
        far as it is known ahead (their ExactCount GPU requests)."""
        out = []
        for _, key in self.claims_of(task):
            claim = self.claims[key]
            state = self.allocs.get(key)
            if claim.owner_pod_uid or (state is not None and (state.held or state.users)):
                continue
            gpus = sum(
                r.count
                for r in claim.requests
                if r.allocation_mode == "ExactCount" and dra.is_gpu_class(r.device_class)
            )
            if gpus:
                out.append((key, gpus))
        return out

    def drain_charges(self) -> list[Charge]:
        """The claims' charges and refunds since the last call, oldest first."""
        out, self.charges = self.charges, []
        return out

    # --- pods and their claims ---

    def claims_of(self, task: PodInfo) -> list[tuple[str, str]]:
        """(pod claim name, claim key) of the task's claims that exist; see `problem` for the others."""
        found = self._task_claims.get(task.uid)
        if found is None:
            found = []
            for pc in task.pod.resource_claims:
                key = claim_key(task.pod, pc)
                if key is not None and key in self.claims:
                    found.append((pc.name, key))
            self._task_claims[task.uid] = found
        return found

    def problem(self, task: PodInfo, queue: str, queue_label_key: str = constants.LABEL_QUEUE) -> str | None:
        """Why the task's claims cannot be allocated anywhere, as one line naming the claim; None if they may.
        What the objects say is worked out once per task and session; a full `reservedFor` is asked each time."""
        found = self._problems.get(task.uid)
        if found is None:
            found = self._problems[task.uid] = (self._object_problem(task, queue, queue_label_key),)
        if found[0] is not None:
            return found[0]
        uid = str(task.uid)
        for _, key in self.claims_of(task):
            state = self.allocs.get(key)
            full = state is not None and state.held and len(state.users) >= dra.MAX_RESERVED_FOR
            if full and state is not None and uid not in state.users:
                return f"claim {key}: reserved for {dra.MAX_RESERVED_FOR} pods already"
        return None

    def _object_problem(self, task: PodInfo, queue: str, queue_label_key: str) -> str | None:
        pod = task.pod
        for pc in pod.resource_claims:
            key = claim_key(pod, pc)
            if key is None:
                return f"claim {pc.name}: waiting for its ResourceClaim to be made from template {pc.template_name}"
            claim = self.claims.get(key)
            if claim is None:
                return f"claim {key}: ResourceClaim not found"
            if claim.meta.deletion_timestamp is not None:
                return f"claim {key}: being deleted"
            owner = claim.owner_pod_uid
            if pc.template_name and owner and pod.meta.uid and owner != pod.meta.uid:
                return f"claim {key}: made for another pod"
            if pc.claim_name and owner and owner != pod.meta.uid:
                return f"claim {key}: reserved for another pod"
            for request in claim.requests:
                if pc.claim_name and dra.is_gpu_class(request.device_class):
                    label = claim.meta.labels.get(queue_label_key)
                    if label != queue:
                        return f"claim {key}: a shared GPU claim must carry label {queue_label_key}={queue}"
                if claim.allocation is not None:
                    continue  # allocated already: its devices are chosen, whatever its class says now
                device_class = self.classes.get(request.device_class)
                if device_class is None:
                    return f"claim {key}: request {request.name}: DeviceClass {request.device_class!r} not found"
                matcher = self.inventory.matcher(device_class, request, self.evaluator)
                if matcher.error:
                    return f"claim {key}: request {request.name}: {matcher.error}"
        return None

    def _demands(self, task: PodInfo) -> tuple[list[Demand], list[ClaimState]]:
        demands: list[Demand] = []
        allocated: list[ClaimState] = []
        for _, key in self.claims_of(task):
            state = self.allocs.get(key)
            if state is not None and (state.held or state.users):
                allocated.append(state)
            else:
                demands.extend(self._demands_of(key))
        return demands, allocated

    # --- where ---

    def feasible(self, task: PodInfo, candidates: BoolArray) -> BoolArray:
        """The candidate rows where every claim of the task can be allocated (`explain` says why not)."""
        demands, allocated = self._demands(task)
        if not allocated and len(demands) == 1:
            one: BoolArray = candidates & self._count_fits(demands[0])
            return one
        mask = candidates.copy()
        for state in allocated:
            mask &= self._rows_of(state)
        for demand in demands:
            mask &= self._count_fits(demand)
        if len(demands) > 1 and mask.any():
            for row in np.flatnonzero(mask).tolist():
                if self._choose(demands, row) is None:
                    mask[row] = False
        return mask

    def explain(self, task: PodInfo, rejected: BoolArray) -> list[tuple[str, int]]:
        """The rejected rows by reason, each reason naming the claim; the first that removes a row counts it."""
        left, parts = rejected.copy(), []
        demands, allocated = self._demands(task)
        for state in allocated:
            short = left & ~self._rows_of(state)
            parts.append((f"claim {self._key_of(state)}: allocated on devices these nodes do not reach", short))
            left &= ~short
        for demand in demands:
            short = left & ~self._count_fits(demand)
            request = demand.request
            what = "all its devices" if request.allocation_mode == "All" else f"{request.count} device(s)"
            parts.append(
                (
                    f"claim {demand.claim}: request {request.name} needs {what} of class {request.device_class} free",
                    short,
                )
            )
            left &= ~short
        if left.any() and demands:
            parts.append((f"claim {demands[0].claim}: not enough free devices for every request together", left))
        return [(reason, int(rows.sum())) for reason, rows in parts if rows.any()]

    def _key_of(self, state: ClaimState) -> str:
        return next((k for k, s in self.allocs.items() if s is state), "")

    def _rows_of(self, state: ClaimState) -> BoolArray:
        rows = np.ones(self.n_nodes, dtype=bool)
        inventory = self.inventory
        for i in state.devices:
            if inventory.row[i] >= 0:
                only = np.zeros(self.n_nodes, dtype=bool)
                only[inventory.row[i]] = True
                rows &= only
            else:
                rows &= inventory.reach[int(inventory.pool_of[i])]
        return rows

    def _count_fits(self, demand: Demand) -> BoolArray:
        matcher, request = demand.matcher, demand.request
        free_local, free_pool = self._counts(matcher)
        if request.allocation_mode != "All" and not free_pool.any():
            only_local: BoolArray = free_local >= request.count
            return only_local
        available = free_local.copy()
        for p, reached in enumerate(self.inventory.reach):
            if free_pool[p]:
                available += reached * free_pool[p]
        if request.allocation_mode == "All":
            total = self._totals(matcher)
            fits: BoolArray = (available == total) & (total > 0)
            return fits
        fits = available >= request.count
        return fits

    def _totals(self, matcher: Matcher) -> IntArray:
        inventory = self.inventory
        local = inventory.row >= 0
        total = np.bincount(inventory.row[matcher.match & local], minlength=self.n_nodes).astype(np.int64)
        for p, reached in enumerate(inventory.reach):
            total += reached * int((matcher.match & (inventory.pool_of == p)).sum())
        return total

    def _counts(self, matcher: Matcher) -> tuple[IntArray, IntArray]:
        key = id(matcher)
        local = self._free_local.get(key)
        if local is None:
            inventory = self.inventory
            usable = matcher.match & self.free
            local = np.bincount(inventory.row[usable & (inventory.row >= 0)], minlength=self.n_nodes).astype(np.int64)
            pools = np.zeros(len(inventory.reach), dtype=np.int64)
            for p in range(len(inventory.reach)):
                pools[p] = int((usable & (inventory.pool_of == p)).sum())
            self._free_local[key], self._free_pool[key], self._matchers[key] = local, pools, matcher
            return local, pools
        return local, self._free_pool[key]

    def _choose(self, demands: list[Demand], row: int) -> dict[str, list[tuple[str, int]]] | None:
        """Devices for every demand on node `row` (its own first, then network-attached, each in name order),
        or None when some demand cannot be met."""
        inventory = self.inventory
        taken: set[int] = set()
        chosen: dict[str, list[tuple[str, int]]] = {}
        reachable = inventory.local[row] + inventory.remote[row]
        for demand in demands:
            match = demand.matcher.match
            fitting = [i for i in reachable if match[i]]
            if demand.request.allocation_mode == "All":
                if not fitting or any(not self.free[i] or i in taken for i in fitting):
                    return None
                picked = fitting
            else:
                picked = [i for i in fitting if self.free[i] and i not in taken][: demand.request.count]
                if len(picked) < demand.request.count:
                    return None
            taken.update(picked)
            chosen.setdefault(demand.claim, []).extend((demand.request.name, i) for i in picked)
        return chosen

    # --- session changes (the dynamicresources plugin, through statement do and undo) ---

    def take(self, task: PodInfo, row: int, owner: Owner | None = None) -> None:
        """The task is placed on node `row`: its claims get devices there (or keep those they have). A claim that
        comes to hold devices it charges itself charges `owner` (see `drain_charges`)."""
        uid = str(task.uid)
        demands: list[Demand] = []
        for _, key in self.claims_of(task):
            state = self.allocs.get(key)
            if state is None:
                demands.extend(self._demands_of(key))
                continue
            state.users.add(uid)
            if owner is not None:
                state.owners[uid] = owner
            if state.held:
                if state.charged is None:  # held for users the snapshot does not know: charged to this one's queue
                    self._charge(state, owner, uid)
            elif all(self.free[i] for i in state.devices) and bool(self._rows_of(state)[row]):
                self._hold(key, owner, uid)
            else:  # its old devices went to another claim meanwhile: allocated anew
                del self.allocs[key]
                demands.extend(self._demands_of(key))
        if not demands:
            return
        chosen = self._choose(demands, row) or {}
        for key, picks in chosen.items():
            inventory = self.inventory
            results = tuple(
                dra.DeviceResult(name, inventory.drivers[i], inventory.pools[i], inventory.devices[i].name)
                for name, i in picks
            )
            gpus = self._claim_gpus(key, picks)
            devices = tuple(i for _, i in picks)
            owners = {uid: owner} if owner is not None else {}
            self.allocs[key] = ClaimState(devices, results, {uid}, held=False, made_here=True, gpus=gpus, owners=owners)
            self._hold(key, owner, uid)

    def _demands_of(self, key: str) -> list[Demand]:
        """The requests of a claim with no devices yet (kept per claim: they depend on the objects alone)."""
        out = self._claim_demands.get(key)
        if out is None:
            out = []
            for request in self.claims[key].requests:
                device_class = self.classes.get(request.device_class)
                if device_class is not None:
                    out.append(Demand(key, request, self.inventory.matcher(device_class, request, self.evaluator)))
            self._claim_demands[key] = out
        return out

    def release(self, task: PodInfo) -> None:
        """The task leaves its node (evicted, or a placement undone): claims with no user left free their
        devices; one allocated in this session is forgotten. A claim that stays held but was charged to the
        leaving task's queue is charged to the queue of another user (the first by uid), if one is known."""
        uid = str(task.uid)
        for _, key in self.claims_of(task):
            state = self.allocs.get(key)
            if state is None:
                continue
            state.users.discard(uid)
            state.owners.pop(uid, None)
            if state.users:
                if state.charged_by == uid:
                    self._uncharge(state)
                    if state.owners:
                        successor = min(state.owners)
                        self._charge(state, state.owners[successor], successor)
                continue
            if state.held:
                self._unhold(key)
            if state.made_here:
                del self.allocs[key]

    def _hold(self, key: str, owner: Owner | None, uid: str) -> None:
        state = self.allocs[key]
        state.held = True
        self._set(state.devices, False)
        self._charge(state, owner, uid)

    def _unhold(self, key: str) -> None:
        state = self.allocs[key]
        state.held = False
        self._set(state.devices, True)
        self._uncharge(state)

    def _charge(self, state: ClaimState, owner: Owner | None, uid: str) -> None:
        """Charge the GPUs the claim charges itself to `owner` (the queue of user `uid`)."""
        if state.gpus and owner is not None:
            state.charged, state.charged_by = owner, uid
            self.charges.append(Charge(owner, float(state.gpus)))

    def _uncharge(self, state: ClaimState) -> None:
        if state.charged is not None:
            self.charges.append(Charge(state.charged, -float(state.gpus)))
            state.charged, state.charged_by = None, ""

    def _set(self, devices: Iterable[int], free: bool) -> None:
        inventory = self.inventory
        step = 1 if free else -1
        for i in devices:
            if self.free[i] == free:
                continue  # two claims naming one device (a stale allocation): counted once
            self.free[i] = free
            for key, matcher in self._matchers.items():
                if matcher.match[i]:
                    if inventory.row[i] >= 0:
                        self._free_local[key][inventory.row[i]] += step
                    else:
                        self._free_pool[key][inventory.pool_of[i]] += step

    # --- what was decided ---

    def allocations(self, task: PodInfo, node: str) -> tuple[ClaimAllocation, ...]:
        """The BindRequest's `resourceClaimAllocations` for the task placed on `node`: the devices, the nodes that
        reach them, and the configuration the drivers get (the classes' and the claim's, as Kubernetes'
        allocator writes it; an allocated claim's as it is)."""
        out = []
        for name, key in self.claims_of(task):
            state = self.allocs.get(key)
            if state is None or not state.held:
                continue
            claim = self.claims[key]
            config = (
                claim.allocation.config
                if claim.allocation is not None
                else claim.allocation_config(self.classes, {r.request for r in state.results})
            )
            out.append(ClaimAllocation(name, dra.Allocation(state.results, self._node_selector(state, node), config)))
        return tuple(out)

    def _node_selector(self, state: ClaimState, node: str) -> dict[str, object]:
        inventory = self.inventory
        remote = [int(inventory.pool_of[i]) for i in state.devices if inventory.row[i] < 0]
        if not remote:
            return {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            }
        slice_ = inventory.reach_selectors[remote[0]]
        if slice_.all_nodes:
            return {"nodeSelectorTerms": [{}]}
        return {"nodeSelectorTerms": [selectors.node_selector_term_dict(t) for t in slice_.node_selector]}

    def devices_of(self, task: PodInfo) -> list[tuple[str, str]]:
        """(pod claim name, "driver/pool/device, …") of each claim holding devices: what `kai schedule` shows."""
        out = []
        for name, key in self.claims_of(task):
            state = self.allocs.get(key)
            if state is not None and state.held and state.results:
                out.append((name, ", ".join(f"{r.pool}/{r.device}" for r in state.results)))
        return out

    def holders(self) -> dict[int, list[str]]:
        """Device → the claims holding it (more than one is a double booking)."""
        out: dict[int, list[str]] = {}
        for key, state in self.allocs.items():
            if state.held:
                for i in state.devices:
                    out.setdefault(i, []).append(key)
        return out
