"""The dashboard's document: the scheduler's own figures, jobs in its order with its reasons, the GPU map."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kai_scheduler import scenario as scenarios
from kai_scheduler.dashboard import view
from kai_scheduler.dashboard.feed import Feed
from kai_scheduler.dashboard.sources import EmbeddedSource
from kai_scheduler.scheduler import config_file
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests.dashboard.scenarios import CLUSTER


def cluster(text: str = CLUSTER) -> EmbeddedCluster:
    loaded = scenarios.loads(text, "cluster.yaml")
    config = config_file.load(config_file.ConfigSource(loaded.config, "cluster.yaml", loaded.config_lines))
    return EmbeddedCluster(loaded.objects, config, now=loaded.now)


@pytest.fixture(scope="module")
def settled() -> Iterator[tuple[EmbeddedSource, dict[str, Any]]]:
    source = EmbeddedSource(cluster(), Feed(), cycles=3)
    for _ in range(3):
        source.step()
    yield source, orjson.loads(source.feed.current()[1])


def test_queue_figures_are_the_schedulers_shares_in_gpus_cores_and_gib(
    settled: tuple[EmbeddedSource, dict[str, Any]],
) -> None:
    source, doc = settled
    shares = source.cluster.results[-1].queue_shares
    queues = {q["name"]: q for q in doc["queues"]}
    assert set(queues) == set(shares)
    for name, share in shares.items():
        q = queues[name]
        assert q["allocated"][0] == pytest.approx(float(share.allocated[2]))
        assert q["fair"][0] == pytest.approx(float(share.fair_share[2]))
        assert q["requested"][0] == pytest.approx(float(share.request[2]))
        assert q["allocated"][1] == pytest.approx(float(share.allocated[0]) / 1000)  # millicores → cores
        assert q["allocated"][2] == pytest.approx(float(share.allocated[1]) / 2**30)  # bytes → GiB
    assert queues["vision"]["deserved"] == [2.0, 0.0, 0.0]
    assert queues["vision"]["limit"] == [6.0, -1.0, -1.0]  # -1: no limit, kept as such
    assert queues["vision"]["allocated"][0] == 4.5  # over its deserved 2: the page marks it
    assert (queues["nlp"]["parent"], queues["research"]["parent"], queues["org"]["parent"]) == ("research", "org", "")


def test_pending_jobs_come_first_in_order_with_the_podgroup_condition_text(
    settled: tuple[EmbeddedSource, dict[str, Any]],
) -> None:
    source, doc = settled
    names = [q["name"] for q in doc["queues"]]
    nlp = [row for row in doc["jobs"] if names[row[0]] == "nlp"]
    assert [(r[2], r[3], r[4]) for r in nlp] == [("nlp-gang", "pending", 1), ("nlp-one", "running", 0)]
    gang = nlp[0]
    podgroup = source.cluster.store.get("podgroups", "nlp-gang", "default")
    condition = podgroup["status"]["schedulingConditions"][0]
    assert condition["nodePool"] == "default"  # the unlabelled pool, named as KAI names it
    assert gang[9] == "default: " + "; ".join(r["message"] for r in condition["reasons"])
    assert gang[5:8] == [0, 2, 8.0]  # pods running, pods, GPUs asked
    assert 600 <= gang[8] < 700  # created 10 minutes before the first cycle; a few cycles since


def test_reason_names_each_node_pool_that_refused() -> None:
    from kai_scheduler.api.podgroup import SchedulingCondition

    c = cluster()
    snap = c.scheduler.snapshot()
    job = next(j for j in snap.jobs.values() if j.name == "nlp-gang")
    job.podgroup.scheduling_conditions = [
        SchedulingCondition("pool-a", [("Unschedulable", "no GPUs")]),
        SchedulingCondition("pool-b", [("Unschedulable", "a taint"), ("Unschedulable", "no memory")]),
    ]
    assert view.reason(job, snap) == "pool-a: no GPUs | pool-b: a taint; no memory"


def test_gpu_map_has_whole_shared_and_idle_cells_and_marks_stranded_nodes(
    settled: tuple[EmbeddedSource, dict[str, Any]],
) -> None:
    _, doc = settled
    names = [q["name"] for q in doc["queues"]]
    nodes = doc["nodes"]
    assert nodes["name"] == ["a-0", "a-1", "b-0"]
    assert nodes["levels"] == ["topology/rack"]
    assert [nodes["domains"][d] for d in nodes["domain"]] == ["r1", "r1", "r2"]
    vision, nlp = names.index("vision"), names.index("nlp")
    assert nodes["cells"][0] == [vision] * 4
    assert nodes["cells"][1] == [nlp, nlp, [vision, 0.5], view.IDLE]  # the half GPU: a shared device
    assert nodes["cells"][2] == [view.IDLE] * 4
    # The pending gang needs 4 GPUs on an untainted node: a-1's one idle GPU and the tainted b-0 fit nothing.
    assert [f & 2 for f in nodes["flags"]] == [0, 2, 2]
    assert all(f & 1 for f in nodes["flags"])


def test_decisions_are_the_schedulers_binds_newest_first(settled: tuple[EmbeddedSource, dict[str, Any]]) -> None:
    _, doc = settled
    assert ["Scheduled", "default/nlp-one-0", "assigned default/nlp-one-0 to a-1"] in [d[1:] for d in doc["decisions"]]
    times = [d[0] for d in doc["decisions"]]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize(
    "event, want",
    [
        pytest.param(
            {
                "reason": "Evict",
                "involvedObject": {"namespace": "ns", "name": "p"},
                "message": "reclaimed by x",
                "source": {"component": "kai-scheduler"},
                "metadata": {"creationTimestamp": "2026-01-01T00:00:10Z"},
            },
            view.Decision(1767225610.0, "Evict", "ns/p", "reclaimed by x"),
            id="an eviction with its action and preemptor",
        ),
        pytest.param({"reason": "Unschedulable", "involvedObject": {"name": "p"}}, None, id="not a decision"),
        pytest.param(
            {"reason": "Scheduled", "involvedObject": {"name": "p"}, "source": {"component": "default-scheduler"}},
            None,
            id="another scheduler's bind",
        ),
    ],
)
def test_decision_from_an_event(event: dict[str, Any], want: view.Decision | None) -> None:
    assert view.decision(event, "kai-scheduler") == want


def test_a_source_publishes_only_when_something_moved() -> None:
    source = EmbeddedSource(cluster(), Feed(), cycles=1)
    source.step()
    version = source.feed.version
    source.step()  # cycles done and nothing written: the same picture, no new version
    assert source.feed.version == version
    source.cluster.store.create(
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "late"}, "spec": {}}
    )
    source.step()
    assert source.feed.version == version + 1
    assert "late" in [q["name"] for q in orjson.loads(source.feed.current()[1])["queues"]]


def test_idle_gpus_are_not_stranded_when_no_gpu_job_is_pending() -> None:
    """Yellow means fragmentation: idle GPUs some pending job cannot use. With nothing pending they are just idle
    (the simulator's idle_unusable_gpus is 0 then too)."""
    text = """
name: quiet
nodes:
- {name: n, count: 2, gpus: 4, cpu: "32", memory: 256Gi}
queues:
- {name: a, resources: {gpu: {quota: 8}}}
jobs:
- name: j
  queue: a
  tasks:
  - {name: j-0, status: Running, node: n-0, gpus: 1}
"""
    source = EmbeddedSource(cluster(text), Feed(), cycles=2)
    for _ in range(2):
        source.step()
    doc = orjson.loads(source.feed.current()[1])
    nodes = doc["nodes"]
    assert sum(c == view.IDLE for cells in nodes["cells"] for c in cells) == 7  # one GPU in use, seven idle
    assert [f & 2 for f in nodes["flags"]] == [0, 0]
