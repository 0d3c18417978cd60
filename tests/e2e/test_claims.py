"""Pipelined claims on a real API server: every pod pipelined by a reclaim keeps its `status.nominatedNodeName`
until it is bound there, and the reclaim evicts no more than the pods need (docs/configuration.md,
`pipelined-claims`).

A 2-pod job with minMember 1 (what the podgrouper makes of a Job) is elastic: reclaim pipelines one pod per pass.
While the victims terminate (a grace period: a Job's pods have 30 s), allocate serves the claims first; it used to
place only the first pod of a pipelined job again, the commit cleared the second pod's claim as lapsed, and reclaim
evicted again for it on another node, every other cycle (tests/e2e/repro_nomlost.py found it).
"""

from __future__ import annotations

import time

from tests.e2e.checks import never_over_committed
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup, queue
from tests.e2e.podwatch import PodWatch, lost_nominations

GRACE = 8  # seconds an evicted team-a pod stays terminating: several scheduling cycles


def test_every_pipelined_pod_keeps_its_claim_until_bound_there(clean: Cluster) -> None:
    """team-a (quota 0) borrows all 32 GPUs with 8 four-GPU pods; team-b (quota 32) submits a 2-pod job of
    8-GPU pods, minMember 1. Each team-b pod names its node from its pipelining until it is bound on that node, and
    4 team-a pods are evicted (two nodes' worth), not more."""
    clean.create(queue("e2e-a", gpu_quota=0))
    clean.create(queue("e2e-b", gpu_quota=32))
    for i in range(8):
        victim = pod(f"claims-a-{i}", gpus=4, queue="e2e-a", labels={"app": "claims-a"})
        victim["spec"]["terminationGracePeriodSeconds"] = GRACE
        clean.create(victim)
    clean.wait("team-a on all 32 GPUs", lambda: len(clean.bound("app=claims-a")) == 8)
    with PodWatch(clean.processes.kubeconfig, NAMESPACE) as watch:
        clean.create(podgroup("claims-b", min_member=1, queue="e2e-b"))
        for i in range(2):
            clean.create(pod(f"claims-b-{i}", gpus=8, group="claims-b", queue="e2e-b", labels={"app": "claims-b"}))
        clean.wait("team-b's two pods bound", lambda: len(clean.bound("app=claims-b")) == 2, timeout=120)
        time.sleep(1.0)  # the watch catches up
    histories = watch.history("claims-b-")
    assert sorted(histories) == ["claims-b-0", "claims-b-1"], (sorted(histories), watch.errors[-3:])
    for name, history in histories.items():
        shown = "\n".join(f"  rv={s.rv} node={s.node or '-'} nominated={s.nominated or '-'}" for s in history)
        named = [s.nominated for s in history if s.nominated and not s.node]
        assert named, f"{name} was never pipelined (no nominatedNodeName before it was bound):\n{shown}"
        assert not lost_nominations(history), f"{name} lost its nomination before it was bound:\n{shown}"
        bound = next(s.node for s in history if s.node)
        assert bound == named[-1], f"{name} named {named[-1]} but was bound on {bound}:\n{shown}"
    evicted = {s.name for s in watch.seen if s.name.startswith("claims-a-") and s.deleting}
    assert len(evicted) == 4, f"team-a pods evicted: {sorted(evicted)} (two nodes of 8 GPUs need 4)"
    never_over_committed(clean)
