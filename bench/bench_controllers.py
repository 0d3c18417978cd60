"""The pod grouper's and the status controllers' own CPU per pod over a fill, in memory: `python
bench/bench_controllers.py [--pods 1000] [--batch 20] [--repeat 3] [--profile OUT]`.

The three run as `kai run` runs them (one set of shared informers; the PodGroup status controller, then the Queue
status controller, in one step) over a `MemoryStore` holding `default-queue` under its parent. Pods of one GPU and no
owner arrive `--batch` at a time, and each batch goes through what a fill does to it, the components reconciling
after each step: the pods are created (the grouper makes their PodGroups and names them on the pods; the controllers
write the PodGroups' first status), the scheduler's `last-start-timestamp` on each PodGroup, its BindRequest and the
binding, then the kubelet's `Running`. Printed: each component's CPU seconds (`time.thread_time` around its
reconciles, the store's own work for the simulated writers left out; the collector tuned as in a component
process) per pod in µs, each run and the median.
`--profile OUT` writes a cProfile of the components' reconciles of the last run (`python -m pstats OUT`).
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import workloads as w  # noqa: E402
from tests.e2e import harness  # noqa: E402

from kai_scheduler.api import constants  # noqa: E402
from kai_scheduler.api.clock import ManualClock  # noqa: E402
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController  # noqa: E402
from kai_scheduler.controllers.queue_status import QueueStatusController  # noqa: E402
from kai_scheduler.podgrouper.grouper import PodGrouper  # noqa: E402
from kai_scheduler.store import collector  # noqa: E402
from kai_scheduler.store.informer import Informers  # noqa: E402
from kai_scheduler.store.memory import MemoryStore  # noqa: E402
from kai_scheduler.store.shared import SharedReads  # noqa: E402

NAMESPACE = harness.NAMESPACE
COMPONENTS = ("podgrouper", "podgroup-status", "queue-status")


class Fill:
    def __init__(self, pods: int, profile: cProfile.Profile | None) -> None:
        self.clock = ManualClock(w.EPOCH)
        self.store = MemoryStore(self.clock)
        nodes = (pods + 7) // 8
        self.store.add_many(
            [
                *w.priority_classes(),
                *(w.node(f"bench-node-{i}", 8) for i in range(nodes)),
                w.queue("default-parent-queue", -1),
                w.queue("default-queue", -1, parent="default-parent-queue"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "uid": "uid-ns"}},
            ]
        )
        reads = SharedReads(self.store)
        informers = Informers(reads)
        self.grouper = PodGrouper(reads, informers=informers)
        self.podgroups = PodGroupStatusController(reads, informers=informers)
        self.queues = QueueStatusController(reads, informers=informers)
        self.cpu = dict.fromkeys(COMPONENTS, 0.0)
        self.profile = profile
        self.pods = pods

    def _timed(self, name: str, step: Callable[[], Any]) -> None:
        if self.profile is not None:
            self.profile.enable()
        began = time.thread_time()
        step()
        self.cpu[name] += time.thread_time() - began
        if self.profile is not None:
            self.profile.disable()

    def reconcile(self) -> None:
        self._timed("podgrouper", self.grouper.reconcile)
        self._timed("podgroup-status", self.podgroups.reconcile)
        self._timed("queue-status", self.queues.reconcile)

    def run(self, batch: int) -> dict[str, float]:
        self.reconcile()  # the first lists
        self.cpu = dict.fromkeys(COMPONENTS, 0.0)
        for first in range(0, self.pods, batch):
            names = [f"fill-{i}" for i in range(first, min(first + batch, self.pods))]
            for name in names:
                self.store.create(harness.pod(name))
            self.reconcile()
            for i, name in enumerate(names, start=first):
                self._schedule(name, f"bench-node-{i // 8}")
            self.reconcile()
            for name in names:
                self._run(name)
            self.reconcile()
        return {name: seconds / self.pods * 1e6 for name, seconds in self.cpu.items()}

    def _schedule(self, name: str, node: str) -> None:
        """What the scheduler and the binder write for one pod: its PodGroup's start time, its BindRequest, the
        binding."""
        pod = self.store.get("pods", name, NAMESPACE)
        group = pod["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME]
        self.store.patch(
            "podgroups",
            group,
            NAMESPACE,
            {"metadata": {"annotations": {constants.ANNOTATION_LAST_START_TIMESTAMP: "2026-01-01T00:00:00Z"}}},
        )
        self.store.create(
            {
                "apiVersion": constants.BINDREQUEST_API_VERSION,
                "kind": "BindRequest",
                "metadata": {
                    "name": name,
                    "namespace": NAMESPACE,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod["metadata"]["uid"]}
                    ],
                },
                "spec": {"podName": name, "selectedNode": node, "receivedResourceType": "Regular"},
            }
        )
        self.store.bind(NAMESPACE, name, node)

    def _run(self, name: str) -> None:
        self.store.patch(
            "pods",
            name,
            NAMESPACE,
            {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
            "status",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=20, help="pods created (and scheduled) between reconciles")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", default="", metavar="OUT")
    args = parser.parse_args()
    collector.tune_for_service()  # the collector as in a component process
    collector.freeze_startup()
    runs = []
    for i in range(args.repeat):
        profile = cProfile.Profile(time.thread_time) if args.profile and i == args.repeat - 1 else None
        runs.append(Fill(args.pods, profile).run(args.batch))
        print("  ".join(f"{name} {runs[-1][name]:6.1f}" for name in COMPONENTS), f"  all {sum(runs[-1].values()):6.1f}")
        if profile is not None:
            profile.dump_stats(args.profile)
    print(
        f"median µs CPU per pod ({args.pods} pods, batches of {args.batch}): "
        + "  ".join(f"{name} {statistics.median(r[name] for r in runs):.1f}" for name in COMPONENTS)
        + f"  all {statistics.median(sum(r.values()) for r in runs):.1f}"
    )


if __name__ == "__main__":
    main()
