"""Pipelined pods on a real API server. By default (KAI's behaviour) a pod pipelined by a reclaim gets a
`Pipelined` event and no `status.nominatedNodeName`; with `--pipelined-claims=true` (docs/configuration.md, not
KAI's) every pipelined pod keeps its `status.nominatedNodeName` until it is bound there. Either way the reclaim
evicts no more than the pods need.

A 2-pod job with minMember 1 (what the podgrouper makes of a Job) is elastic: reclaim pipelines one pod per pass.
While the victims terminate (a grace period: a Job's pods have 30 s), allocate serves the claims first; it used to
place only the first pod of a pipelined job again, the commit cleared the second pod's claim as lapsed, and reclaim
evicted again for it on another node, every other cycle (tests/e2e/repro_nomlost.py found it). Without the claims,
allocate used to stop at a job's first pipelined pod (KAI puts the job back for its next one), and reclaim evicted
for the second pod every cycle while the victims terminated.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from tests.e2e.checks import never_over_committed
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup, queue
from tests.e2e.podwatch import PodWatch, Seen, lost_nominations

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

GRACE = 8  # seconds an evicted team-a pod stays terminating: several scheduling cycles


@pytest.fixture
def claims(clean: Cluster) -> Iterator[Cluster]:
    """The suite's scheduler replaced by one with `--pipelined-claims=true` for the test, and put back after."""
    processes = clean.processes
    processes.kill("scheduler")
    try:
        processes.start_component("scheduler", "--pipelined-claims=true")
        yield clean
    finally:
        proc = processes.running.pop("scheduler", None)
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        processes.start_component("scheduler")


def _reclaim_by_an_elastic_job(cluster: Cluster) -> tuple[dict[str, list[Seen]], set[str]]:
    """team-a (quota 0) borrows all 32 GPUs with 8 four-GPU pods; team-b (quota 32) submits a 2-pod job of
    8-GPU pods, minMember 1, and both are bound. Every version of team-b's pods seen meanwhile, and the team-a
    pods evicted."""
    cluster.create(queue("e2e-a", gpu_quota=0))
    cluster.create(queue("e2e-b", gpu_quota=32))
    for i in range(8):
        victim = pod(f"claims-a-{i}", gpus=4, queue="e2e-a", labels={"app": "claims-a"})
        victim["spec"]["terminationGracePeriodSeconds"] = GRACE
        cluster.create(victim)
    cluster.wait("team-a on all 32 GPUs", lambda: len(cluster.bound("app=claims-a")) == 8)
    with PodWatch(cluster.processes.kubeconfig, NAMESPACE) as watch:
        cluster.create(podgroup("claims-b", min_member=1, queue="e2e-b"))
        for i in range(2):
            cluster.create(pod(f"claims-b-{i}", gpus=8, group="claims-b", queue="e2e-b", labels={"app": "claims-b"}))
        cluster.wait("team-b's two pods bound", lambda: len(cluster.bound("app=claims-b")) == 2, timeout=120)
        time.sleep(1.0)  # the watch catches up
    histories = watch.history("claims-b-")
    assert sorted(histories) == ["claims-b-0", "claims-b-1"], (sorted(histories), watch.errors[-3:])
    evicted = {s.name for s in watch.seen if s.name.startswith("claims-a-") and s.deleting}
    return histories, evicted


def test_by_default_a_pipelined_pod_gets_the_event_and_no_nomination_as_in_kai(clean: Cluster) -> None:
    """KAI's behaviour: team-b's pods never name a node before they are bound, each has a `Pipelined` event naming
    the node it waited on, and 4 team-a pods are evicted (two nodes' worth), not more."""
    histories, evicted = _reclaim_by_an_elastic_job(clean)
    for name, history in histories.items():
        shown = "\n".join(f"  rv={s.rv} node={s.node or '-'} nominated={s.nominated or '-'}" for s in history)
        assert not any(s.nominated for s in history), f"{name} was given a nominatedNodeName:\n{shown}"
    pipelined = {
        e["involvedObject"]["name"]: e["message"]
        for e in clean.store.list("events", NAMESPACE)[0]
        if e.get("reason") == "Pipelined" and e["involvedObject"]["name"].startswith("claims-b-")
    }
    assert sorted(pipelined) == ["claims-b-0", "claims-b-1"], pipelined
    assert len(evicted) == 4, f"team-a pods evicted: {sorted(evicted)} (two nodes of 8 GPUs need 4)"
    never_over_committed(clean)


def test_with_claims_every_pipelined_pod_keeps_its_claim_until_bound_there(claims: Cluster) -> None:
    """With `--pipelined-claims=true`: each team-b pod names its node from its pipelining until it is bound on
    that node, and 4 team-a pods are evicted (two nodes' worth), not more."""
    histories, evicted = _reclaim_by_an_elastic_job(claims)
    for name, history in histories.items():
        shown = "\n".join(f"  rv={s.rv} node={s.node or '-'} nominated={s.nominated or '-'}" for s in history)
        named = [s.nominated for s in history if s.nominated and not s.node]
        assert named, f"{name} was never pipelined (no nominatedNodeName before it was bound):\n{shown}"
        assert not lost_nominations(history), f"{name} lost its nomination before it was bound:\n{shown}"
        bound = next(s.node for s in history if s.node)
        assert bound == named[-1], f"{name} named {named[-1]} but was bound on {bound}:\n{shown}"
    assert len(evicted) == 4, f"team-a pods evicted: {sorted(evicted)} (two nodes of 8 GPUs need 4)"
    never_over_committed(claims)
