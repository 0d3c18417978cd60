"""Benchmarks of GPU sharing and topology placement: `python bench/bench_sharing_topology.py` prints a table.

- fractions: 7,000 pending fractional pods (0.25, 0.5 and 0.75 of a GPU, one PodGroup each, 10 queues) onto
  500 nodes x 8 GPUs of 80 GiB: KAI's own scale scenario (BEHAVIOR.md §10);
- topology: one 512-pod gang (8 GPUs a pod) with a preferred rack level, on 512 nodes in a 3-level topology
  (4 blocks x 8 racks x 16 nodes, then the hostname).

Each case runs one placement cycle (snapshot, allocate with KAI's default plugins, commit to the in-memory
store) in its own process. Target: each cycle ≤ 5 s on this machine; printed beside the figures, not asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from cases import print_table, run_cases, time_cycle

TARGET_S = 5.0
CASES = {
    "fractions": "7,000 fractional pods (0.25/0.5/0.75) onto 500 nodes x 8 GPUs",
    "topology": "one 512-pod gang, preferred rack, 512 nodes in 4 blocks x 8 racks x 16 nodes",
}
JSON = dict[str, object]


def _pod(name: str, group: str, queue: str, *, gpus: int = 0, fraction: float | None = None) -> JSON:
    from kai_scheduler.api import constants

    annotations = {constants.ANNOTATION_POD_GROUP_NAME: group}
    requests = {"cpu": "1", "memory": "4Gi"}
    if fraction is not None:
        annotations[constants.ANNOTATION_GPU_FRACTION] = str(fraction)
    if gpus:
        requests[constants.RESOURCE_GPU] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{name}",
            "creationTimestamp": "2025-12-31T00:00:00Z",
            "labels": {constants.LABEL_QUEUE: queue},
            "annotations": annotations,
        },
        "spec": {
            "schedulerName": constants.DEFAULT_SCHEDULER_NAME,
            "containers": [{"name": "main", "image": "pause", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }


def _podgroup(name: str, queue: str, min_member: int, constraint: JSON | None = None) -> JSON:
    from kai_scheduler.api import constants

    spec: JSON = {"queue": queue, "minMember": min_member, "priorityClassName": "train"}
    if constraint:
        spec["topologyConstraint"] = constraint
    return {
        "apiVersion": constants.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-pg-{name}",
            "creationTimestamp": "2025-12-31T00:00:00Z",
        },
        "spec": spec,
    }


def fractions_cluster() -> list[JSON]:
    import workloads

    objects: list[JSON] = [*workloads.priority_classes()]
    objects += [workloads.node(f"node-{i:04d}", 8) for i in range(500)]
    queues = [f"team-{q}" for q in range(10)]
    objects += [workloads.queue(q, 0) for q in queues]
    shares = (0.25, 0.5, 0.75)
    for i in range(7000):
        queue = queues[i % len(queues)]
        objects += [_podgroup(f"frac-{i}", queue, 1), _pod(f"frac-{i}", f"frac-{i}", queue, fraction=shares[i % 3])]
    return objects


def topology_cluster() -> list[JSON]:
    import workloads

    from kai_scheduler.api import constants

    objects: list[JSON] = [*workloads.priority_classes(), workloads.queue("team", -1)]
    objects.append(
        {
            "apiVersion": constants.TOPOLOGY_API_VERSION,
            "kind": "Topology",
            "metadata": {"name": "dc"},
            "spec": {
                "levels": [
                    {"nodeLabel": "dc/block", "alias": "block"},
                    {"nodeLabel": "dc/rack", "alias": "rack"},
                    {"nodeLabel": constants.LABEL_HOSTNAME},
                ]
            },
        }
    )
    for i in range(512):
        node = workloads.node(f"node-{i:04d}", 8)
        labels = node["metadata"]["labels"]  # type: ignore[index]
        labels["dc/block"], labels["dc/rack"] = f"b{i // 128}", f"r{i // 16}"
        objects.append(node)
    objects.append(_podgroup("gang", "team", 512, {"topology": "dc", "preferredTopologyLevel": "rack"}))
    objects += [_pod(f"gang-{i}", "gang", "team", gpus=8) for i in range(512)]
    return objects


def run_case(name: str) -> dict[str, float]:
    cycle = time_cycle(fractions_cluster() if name == "fractions" else topology_cluster(), "allocate")
    shared = sum(len(n.gpu_groups) for n in cycle.result.snapshot.nodes)
    return {
        "pods": float(len(cycle.snapshot.tasks)),
        "nodes": float(len(cycle.snapshot.nodes)),
        "binds": float(cycle.result.binds),
        "snapshot_s": cycle.snapshot_s,
        "allocate_s": cycle.result.action_seconds.get("allocate", 0.0),
        "cycle_s": cycle.cycle_s,
        "shared_gpus": float(shared),
    }


def main() -> None:
    results = run_cases(__file__, __doc__, CASES, run_case)
    if results is None:
        return
    columns = ("pods", "nodes", "binds", "shared GPUs", "snapshot s", "allocate s", "cycle s", "target s")
    rows = {
        name: (
            f"{r['pods']:.0f}",
            f"{r['nodes']:.0f}",
            f"{r['binds']:.0f}",
            f"{r['shared_gpus']:.0f}",
            f"{r['snapshot_s']:.2f}",
            f"{r['allocate_s']:.2f}",
            f"{r['cycle_s']:.2f}",
            f"{TARGET_S:g}",
        )
        for name, r in results.items()
    }
    print_table("One placement cycle (allocate, default plugins), in-memory store", columns, rows, CASES, width=120)


if __name__ == "__main__":
    main()
