"""The invariants every fault test asserts once the cluster has settled after its fault (docs/reliability.md):

- no node holds more GPUs than it has: whole GPUs and shared ones (a shared GPU's group counts once), and no
  shared GPU holds more than one GPU's worth of fractions;
- no pod was bound twice: at most one successful BindRequest per pod;
- every BindRequest ends Succeeded or is deleted;
- a gang is all or nothing: a PodGroup has no bound pod or at least its minMember;
- a queue's `status.allocated` GPUs are the sum of its bound pods' (and its children's).

`settled` waits (bounded) for what converges and then checks everything; the rest are single checks.
`report` says what they find now, without waiting or failing: for a wait's timeout message.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

from kai_scheduler.api import constants
from kai_scheduler.store.interface import JSON, StoreError
from tests.e2e.harness import GPU, NAMESPACE, POLL, Cluster

EPSILON = 1e-6


def _live_on_node(pods: list[JSON]) -> list[JSON]:
    return [
        p
        for p in pods
        if p.get("spec", {}).get("nodeName") and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]


def _whole_gpus(pod: JSON) -> float:
    total = 0.0
    for c in pod["spec"].get("containers", []):
        total += float(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0))
    return total


def _fraction(pod: JSON) -> float:
    annotations = pod.get("metadata", {}).get("annotations") or {}
    value = annotations.get(constants.ANNOTATION_GPU_FRACTION)
    return float(value) if value else 0.0


def gpu_capacity_held(cluster: Cluster) -> None:
    """Per node: whole GPUs plus the shared GPUs in use ≤ its allocatable GPUs; per shared GPU: fractions ≤ 1."""
    nodes, _ = cluster.store.list("nodes", None)
    capacity = {n["metadata"]["name"]: float((n.get("status", {}).get("allocatable") or {}).get(GPU, 0)) for n in nodes}
    whole: dict[str, float] = defaultdict(float)
    groups: dict[str, set[str]] = defaultdict(set)
    fractions: dict[str, float] = defaultdict(float)
    pods = _live_on_node(cluster.pods()) + _live_on_node(cluster._list("pods", constants.RESERVATION_NAMESPACE))
    for pod in pods:
        node = pod["spec"]["nodeName"]
        group = (pod.get("metadata", {}).get("labels") or {}).get(constants.LABEL_GPU_GROUP)
        if group:
            groups[node].add(group)
            fractions[group] += _fraction(pod)
        else:
            whole[node] += _whole_gpus(pod)
    for node in set(whole) | set(groups):
        used = whole[node] + len(groups[node])
        assert used <= capacity.get(node, 0.0) + EPSILON, (
            f"node {node} holds {used:g} GPUs ({whole[node]:g} whole, {len(groups[node])} shared), "
            f"has {capacity.get(node, 0.0):g}"
        )
    over = {g: f for g, f in fractions.items() if f > 1.0 + EPSILON}
    assert not over, f"shared GPUs holding more than one GPU's worth of fractions: {over}"


def bound_at_most_once(cluster: Cluster) -> None:
    requests, _ = cluster.store.list("bindrequests", NAMESPACE)
    succeeded: dict[str, int] = defaultdict(int)
    for r in requests:
        if (r.get("status") or {}).get("phase") == "Succeeded":
            succeeded[r["spec"]["podName"]] += 1
    twice = {pod: n for pod, n in succeeded.items() if n > 1}
    assert not twice, f"pods bound by more than one successful BindRequest: {twice}"


def _unfinished_requests(cluster: Cluster) -> list[str]:
    requests, _ = cluster.store.list("bindrequests", NAMESPACE)
    return [
        f"{r['metadata']['name']} ({(r.get('status') or {}).get('phase') or 'no phase'})"
        for r in requests
        if (r.get("status") or {}).get("phase") != "Succeeded"
    ]


def _gangs_split(cluster: Cluster) -> list[str]:
    groups, _ = cluster.store.list("podgroups", NAMESPACE)
    bound: dict[str, int] = defaultdict(int)
    for pod in _live_on_node(cluster.pods()):
        name = (pod.get("metadata", {}).get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME)
        if name:
            bound[name] += 1
    split = []
    for g in groups:
        name = g["metadata"]["name"]
        minimum = _min_member(g)
        if 0 < bound[name] < minimum:
            split.append(f"{name}: {bound[name]} of minMember {minimum} bound")
    return split


def _min_member(group: JSON) -> int:
    """The PodGroup's minMember; 1 when it is none or no integer (a bad object a test submitted, which the
    scheduler refuses: none of its pods is bound)."""
    value = (group.get("spec") or {}).get("minMember")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _queue_allocations_off(cluster: Cluster) -> list[str]:
    """Leaf queues whose status.allocated GPUs differ from the sum of their bound pods' GPUs."""
    queues, _ = cluster.store.list("queues", None)
    parents = {(q.get("spec") or {}).get("parentQueue") for q in queues}
    held: dict[str, float] = defaultdict(float)
    for pod in _live_on_node(cluster.pods()):
        queue = (pod.get("metadata", {}).get("labels") or {}).get(constants.DEFAULT_QUEUE_LABEL_KEY)
        if queue:
            held[queue] += _whole_gpus(pod) or _fraction(pod)
    off = []
    for q in queues:
        name = q["metadata"]["name"]
        if name in parents:
            continue
        allocated = float((((q.get("status") or {}).get("allocated")) or {}).get(GPU, 0) or 0)
        if abs(allocated - held[name]) > EPSILON:
            off.append(f"{name}: status.allocated {allocated:g} GPUs, its bound pods hold {held[name]:g}")
    return off


def settled(cluster: Cluster, timeout: float = 30.0) -> None:
    """Wait (at most `timeout`) until every BindRequest is Succeeded or deleted, no gang is split and the queues'
    allocations match their pods; then assert every invariant, naming what still differs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not (_unfinished_requests(cluster) or _gangs_split(cluster) or _queue_allocations_off(cluster)):
            break
        time.sleep(POLL)
    gpu_capacity_held(cluster)
    bound_at_most_once(cluster)
    assert not _unfinished_requests(cluster), f"BindRequests not Succeeded: {_unfinished_requests(cluster)}"
    assert not _gangs_split(cluster), f"gangs bound in part: {_gangs_split(cluster)}"
    assert not _queue_allocations_off(cluster), f"queues' allocations: {_queue_allocations_off(cluster)}"


def report(cluster: Cluster, selector: str) -> str:
    """What the invariants find now and where the pods of `selector` are, from the API server: bound pods per
    node, the BindRequests by phase, those naming another node than their pod's and those Failed (with why),
    then each invariant's complaint, if any. Never raises: it is the message of a wait that timed out, so that
    the failure says whether pods were over-committed or only slow to bind."""
    try:
        return _report(cluster, selector)
    except StoreError as err:
        return f"no report: the API server did not answer: {err}"


def _report(cluster: Cluster, selector: str) -> str:
    pods = cluster.pods(selector)
    bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in _live_on_node(pods)}
    by_node = Counter(bound.values())
    requests, _ = cluster.store.list("bindrequests", NAMESPACE)
    phases = Counter((r.get("status") or {}).get("phase") or "no phase" for r in requests)
    elsewhere = [
        f"{r['spec']['podName']}: request for {r['spec'].get('selectedNode')}, pod on {bound[r['spec']['podName']]}"
        for r in requests
        if r["spec"].get("podName") in bound and r["spec"].get("selectedNode") != bound[r["spec"]["podName"]]
    ]
    failed = [
        f"{r['metadata']['name']} ({r['spec'].get('selectedNode')}): {(r.get('status') or {}).get('reason')}"
        for r in requests
        if (r.get("status") or {}).get("phase") == "Failed"
    ]
    lines = [
        f"{len(bound)} of {len(pods)} pods ({selector}) bound; per node: "
        + ", ".join(f"{node} {count}" for node, count in sorted(by_node.items())),
        f"BindRequests: {dict(sorted(phases.items()))}",
        f"BindRequests naming another node than their pod's: {elsewhere}",
        f"BindRequests Failed: {failed}",
    ]
    for check in (gpu_capacity_held, bound_at_most_once):
        try:
            check(cluster)
        except AssertionError as err:
            lines.append(f"{check.__name__}: {err}")
    lines.append(f"gangs bound in part: {_gangs_split(cluster)}")
    lines.append(f"queues' allocations: {_queue_allocations_off(cluster)}")
    return "\n".join(lines)
