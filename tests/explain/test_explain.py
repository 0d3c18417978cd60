"""`explain.explain` on embedded clusters loaded from small scenarios: each test states one thing an explanation
must say (what a node lacks, who is ahead, what a victim action would take, what protects a running job), and
that explaining writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler import explain
from kai_scheduler import scenario as scenarios
from kai_scheduler.explain import model
from kai_scheduler.scheduler import config_file
from kai_scheduler.sim.embedded import EmbeddedCluster

OPEN = "{quota: -1, overQuotaWeight: 1, limit: -1}"
QUEUE = "resources: {gpu: {quota: %s, overQuotaWeight: 1, limit: -1}, cpu: " + OPEN + ", memory: " + OPEN + "}"


def _cluster(tmp_path: Path, text: str) -> EmbeddedCluster:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = scenarios.load(str(path))
    config = config_file.load(config_file.ConfigSource(loaded.config, str(path), loaded.config_lines))
    return EmbeddedCluster(loaded.objects, config, now=loaded.now)


def _explain(tmp_path: Path, text: str, job: str, namespace: str | None = None) -> model.Explanation:
    cluster = _cluster(tmp_path, text)
    return explain.explain(cluster.store, cluster.config, cluster.clock, explain.JobRef.parse(job, namespace))


def _pool(ex: model.Explanation) -> model.PoolView:
    return next(p for p in ex.pools if p.is_job_pool)


def _lacks(node: model.NodeFit) -> dict[str, model.Lack]:
    return {lack.kind: lack for lack in node.lacks}


TWO_NODES = f"""
name: t
nodes:
- {{name: a, gpus: 8, cpu: "32", memory: 256Gi}}
- {{name: b, gpus: 8, cpu: "32", memory: 256Gi, taints: [{{key: dedicated, value: infer, effect: NoSchedule}}]}}
queues:
- {{name: q, {QUEUE % 16}}}
jobs:
- {{name: run, queue: q, priority: 50, tasks: [{{status: Running, node: a, gpus: 6, cpu: "2", memory: 1Gi}}]}}
"""


def test_a_pending_job_that_fits_is_placeable_and_the_next_cycle_places_it(tmp_path: Path) -> None:
    text = TWO_NODES + '- {name: small, queue: q, replicas: 1, template: {gpus: 2, cpu: "1", memory: 1Gi}}\n'
    ex = _explain(tmp_path, text, "small")
    assert ex.state == "pending" and _pool(ex).placeable
    assert ex.next_cycle is not None and [p.node for p in ex.next_cycle.placements] == ["a"]
    assert "the next cycle places it on a" in ex.summary


def test_each_node_says_what_it_lacks_with_amounts_and_the_plugin(tmp_path: Path) -> None:
    """Node a is short of GPUs (2 free of 8); node b has the GPUs but a taint the pod does not tolerate."""
    text = TWO_NODES + '- {name: big, queue: q, replicas: 1, template: {gpus: 4, cpu: "1", memory: 1Gi}}\n'
    ex = _explain(tmp_path, text, "big")
    [shape] = _pool(ex).shapes
    by_node = {n.name: n for n in shape.closest}
    gpu = _lacks(by_node["a"])["gpu"]
    assert (gpu.plugin, gpu.requested, gpu.free) == ("predicates", 4.0, 2.0)
    taint = _lacks(by_node["b"])["taint"]
    assert taint.plugin == "predicates" and "dedicated: infer" in taint.message
    assert shape.nodes_fit == 0 and not _pool(ex).placeable


def test_the_closest_nodes_come_first(tmp_path: Path) -> None:
    """A node the pod fits on first; then the node lacking one thing before the node lacking two."""
    text = """
name: t
nodes:
- {name: n1, gpus: 8, cpu: "4", memory: 256Gi, labels: {kind: slow}}
- {name: n2, gpus: 8, cpu: "64", memory: 256Gi, labels: {kind: slow}}
- {name: n3, gpus: 8, cpu: "64", memory: 256Gi, labels: {kind: fast}}
queues:
- {name: q, %s}
jobs:
- {name: j, queue: q, replicas: 1, template: {gpus: 1, cpu: "8", memory: 1Gi, nodeSelector: {kind: fast}}}
""" % (QUEUE % 8)
    ex = _explain(tmp_path, text, "j")
    [shape] = _pool(ex).shapes
    assert [(n.name, n.fits) for n in shape.closest] == [("n3", True), ("n2", False), ("n1", False)]
    assert set(_lacks(shape.closest[1])) == {"affinity"}
    assert set(_lacks(shape.closest[2])) == {"affinity", "cpu"}


def test_a_shared_gpu_pod_is_told_the_gpu_memory_it_lacks(tmp_path: Path) -> None:
    text = f"""
name: t
nodes:
- {{name: g, gpus: 1, gpuMemory: 40000}}
queues:
- {{name: q, {QUEUE % 1}}}
jobs:
- {{name: holder, queue: q, tasks: [{{status: Running, node: g, gpuMemory: 30000, gpuGroups: [g1]}}]}}
- {{name: wants, queue: q, replicas: 1, template: {{gpuMemory: 20000}}}}
"""
    ex = _explain(tmp_path, text, "wants")
    [shape] = _pool(ex).shapes
    lack = _lacks(shape.closest[0])["gpu-memory"]
    assert (lack.requested, lack.free) == (20000.0, 10000.0)


def test_the_queue_shares_and_the_jobs_ahead(tmp_path: Path) -> None:
    """Two teams of deserved 4 on 8 GPUs; team-b holds nothing, so its job goes before team-a's."""
    text = f"""
name: t
nodes:
- {{name: n, gpus: 8}}
queues:
- {{name: team-a, {QUEUE % 4}}}
- {{name: team-b, {QUEUE % 4}}}
jobs:
- {{name: held, queue: team-a, tasks: [{{status: Running, node: n, gpus: 4}}]}}
- {{name: mine, queue: team-a, createdAt: 9, replicas: 1, template: {{gpus: 4}}}}
- {{name: theirs, queue: team-b, createdAt: 1, replicas: 1, template: {{gpus: 4}}}}
"""
    ex = _explain(tmp_path, text, "mine")
    [team_a] = ex.queues
    assert (team_a.name, team_a.deserved.gpu, team_a.fair_share.gpu, team_a.allocated.gpu) == ("team-a", 4, 4, 4)
    assert ex.order is not None and ex.order.position == 2
    assert [a.job for a in ex.order.ahead] == ["default/theirs"] and ex.order.queues_ahead == (("team-b", 1),)


def test_reclaim_is_dry_run_and_names_its_victims_and_nothing_is_written(tmp_path: Path) -> None:
    text = f"""
name: t
nodes:
- {{name: n, gpus: 8}}
queues:
- {{name: team-a, {QUEUE % 4}}}
- {{name: team-b, {QUEUE % 4}}}
jobs:
- {{name: hog, queue: team-a, priority: 50, minMember: 1, tasks: [{{status: Running, node: n, gpus: 4}},
                                                                 {{status: Running, node: n, gpus: 4}}]}}
- {{name: mine, queue: team-b, priority: 50, replicas: 1, template: {{gpus: 4}}}}
"""
    cluster = _cluster(tmp_path, text)
    before = {
        (r, o["metadata"]["name"], o["metadata"].get("resourceVersion"))
        for r in ("pods", "podgroups", "queues")
        for o in cluster.store.list(r)[0]
    }
    ex = explain.explain(cluster.store, cluster.config, cluster.clock, explain.JobRef.parse("mine"))
    after = {
        (r, o["metadata"]["name"], o["metadata"].get("resourceVersion"))
        for r in ("pods", "podgroups", "queues")
        for o in cluster.store.list(r)[0]
    }
    assert before == after
    reclaim = next(v for v in ex.victims if v.action == "reclaim")
    assert reclaim.possible and [v.job for v in reclaim.victims] == ["default/hog"] and len(reclaim.victims) == 1
    assert reclaim.placements and reclaim.placements[0].node == "n"
    assert [v.action for v in ex.victims] == ["consolidation", "reclaim"]  # placed: preempt's turn does not come
    assert ex.next_cycle is not None and [v.action for v in ex.next_cycle.made_room] == ["reclaim"]


def test_a_job_no_action_can_help_is_told_why_for_each(tmp_path: Path) -> None:
    """The quickstart's notebook: team-a is at its fair share (no reclaim), nothing of lower priority runs in
    team-a (no preempt), and the free GPUs go to team-b's jobs first."""
    text = (Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml").read_text()
    ex = _explain(tmp_path, text, "notebook")
    reasons = {v.action: v.reason for v in ex.victims if not v.possible}
    assert set(reasons) == {"consolidation", "reclaim", "preempt"}
    assert "fair share" in reasons["reclaim"] and "lower priority" in reasons["preempt"]
    assert "no victim action can make room" in ex.summary


def test_preempt_takes_lower_priority_work_of_the_same_queue(tmp_path: Path) -> None:
    text = f"""
name: t
config: {{actions: "allocate, preempt"}}
nodes:
- {{name: n, gpus: 1}}
queues:
- {{name: q, {QUEUE % -1}}}
jobs:
- {{name: low, queue: q, priority: 50, tasks: [{{status: Running, node: n, gpus: 1}}]}}
- {{name: high, queue: q, priority: 75, replicas: 1, template: {{gpus: 1}}}}
"""
    ex = _explain(tmp_path, text, "high")
    [plan] = ex.victims
    assert plan.action == "preempt" and plan.possible and [v.task for v in plan.victims] == ["default/low-0"]


def test_a_running_job_is_told_who_could_take_it_and_that_min_runtime_protects_it(tmp_path: Path) -> None:
    text = f"""
name: t
config: {{actions: "allocate, preempt"}}
nodes:
- {{name: n, gpus: 1}}
queues:
- {{name: q, preemptMinRuntime: 1h, {QUEUE % -1}}}
jobs:
- {{name: low, queue: q, priority: 50, lastStartedAgo: 10m, tasks: [{{status: Running, node: n, gpus: 1}}]}}
- {{name: high, queue: q, priority: 75, replicas: 1, template: {{gpus: 1}}}}
"""
    ex = _explain(tmp_path, text, "low")
    assert ex.state == "running" and ex.protection is not None
    assert dict(ex.protection.protected_for)["preempt"] == pytest.approx(50 * 60)
    assert ex.threats == ()  # protected: preempt's victim filter passes it over
    unprotected = _explain(tmp_path, text.replace("lastStartedAgo: 10m", "lastStartedAgo: 2h"), "low")
    [threat] = unprotected.threats
    assert (threat.action, threat.preemptor, threat.would_evict) == ("preempt", "default/high", True)
    assert "the next cycle takes 1 of its pods" in unprotected.summary


def test_a_topology_constraint_shows_each_node_domain(tmp_path: Path) -> None:
    text = f"""
name: t
topologies:
- {{name: cluster, levels: [topology/rack, kubernetes.io/hostname]}}
nodes:
- {{name: r1, count: 2, gpus: 4, labels: {{topology/rack: r1}}}}
queues:
- {{name: q, {QUEUE % -1}}}
jobs:
- {{name: j, queue: q, replicas: 3, template: {{gpus: 4}},
   topologyConstraint: {{topology: cluster, requiredTopologyLevel: topology/rack}}}}
"""
    ex = _explain(tmp_path, text, "j")
    [shape] = _pool(ex).shapes
    assert {n.domain for n in shape.closest} == {"topology/rack=r1"}
    assert not _pool(ex).placeable and any(r.plugin == "topology" for r in _pool(ex).reasons)
    assert all(not n.fits and "topology" in _lacks(n) for n in shape.closest)  # each fits a pod, not the gang


def test_every_node_pool_is_shown_the_job_pool_first(tmp_path: Path) -> None:
    """The scheduler serves pool-a, whose node is too small; the unlabelled node would take the job, but it
    belongs to another shard."""
    text = f"""
name: t
config: {{flags: {{partition-label-value: pool-a}}}}
nodes:
- {{name: small, gpus: 2, labels: {{kai.scheduler/node-pool: pool-a}}}}
- {{name: big, gpus: 8}}
queues:
- {{name: q, labels: {{kai.scheduler/node-pool: pool-a}}, {QUEUE % -1}}}
jobs:
- {{name: j, queue: q, labels: {{kai.scheduler/node-pool: pool-a}}, replicas: 1, template: {{gpus: 4}}}}
"""
    ex = _explain(tmp_path, text, "j")
    assert [(p.name, p.is_job_pool, p.placeable) for p in ex.pools] == [("pool-a", True, False), ("", False, True)]
    assert [n.name for n in ex.pools[0].shapes[0].closest] == ["small"]
    assert [n.name for n in ex.pools[1].shapes[0].closest] == ["big"]
    assert ex.summary.startswith("stays pending")


# --- naming the job --------------------------------------------------------------------------------------------

NAMED = f"""
name: t
nodes:
- {{name: n, gpus: 8}}
queues:
- {{name: q, {QUEUE % 8}}}
jobs:
- {{name: j, namespace: ns-a, queue: q, replicas: 2, template: {{gpus: 1}}}}
- {{name: j, namespace: ns-b, queue: q, replicas: 1, template: {{gpus: 1}}}}
"""


@pytest.mark.parametrize(
    "job, namespace, words",
    [
        pytest.param("nope", None, ["no PodGroup, pod or workload named 'nope'"], id="an unknown job"),
        pytest.param(
            "j-2",
            "ns-b",
            ["no PodGroup, pod or workload named 'j-2' in namespace 'ns-b' (did you mean j-0?)"],
            id="a near miss",
        ),
        pytest.param("j", "ns-x", ["namespace 'ns-x' has none"], id="an unknown namespace"),
        pytest.param("j", None, ["several namespaces", "ns-a/j", "ns-b/j", "-n"], id="a name in two namespaces"),
        pytest.param("ns-a/j", "ns-b", ["-n says 'ns-b'"], id="a namespace twice, differently"),
    ],
)
def test_a_job_that_cannot_be_found_is_one_line(
    tmp_path: Path, job: str, namespace: str | None, words: list[str]
) -> None:
    with pytest.raises(explain.JobNotFound if "/" not in job else ValueError) as caught:
        _explain(tmp_path, NAMED, job, namespace)
    message = str(caught.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_a_pod_name_resolves_to_its_podgroup(tmp_path: Path) -> None:
    ex = _explain(tmp_path, NAMED, "j-1", "ns-a")
    assert ex.job == "ns-a/j"
    assert _explain(tmp_path, NAMED, "ns-b/j").job == "ns-b/j"


WORKLOADS = f"""
name: t
nodes:
- {{name: a, gpus: 8}}
queues:
- {{name: q, {QUEUE % 8}}}
jobs:
- {{name: pg-train-0c743f85-867e-4157-9745-c5e1d43d6080, namespace: ns-a, queue: q, replicas: 2, template: {{gpus: 1}}}}
- {{name: pg-train-1c743f85-867e-4157-9745-c5e1d43d6080, namespace: ns-b, queue: q, replicas: 1, template: {{gpus: 1}}}}
- {{name: pg-train-x, namespace: ns-a, queue: q, replicas: 1, template: {{gpus: 1}}}}
"""


def test_a_workload_name_resolves_to_the_podgroup_the_podgrouper_gave_it(tmp_path: Path) -> None:
    """`kai explain mnist-ddp` for the PyTorchJob mnist-ddp: its PodGroup is pg-mnist-ddp-<uid>."""
    assert _explain(tmp_path, WORKLOADS, "train", "ns-a").job == "ns-a/pg-train-0c743f85-867e-4157-9745-c5e1d43d6080"
    assert _explain(tmp_path, WORKLOADS, "ns-b/train").job == "ns-b/pg-train-1c743f85-867e-4157-9745-c5e1d43d6080"
    with pytest.raises(explain.JobNotFound) as caught:  # two namespaces have one: which is meant?
        _explain(tmp_path, WORKLOADS, "train")
    assert "several PodGroups (ns-a/pg-train-0c743f85" in str(caught.value) and "ns-b/pg-train-1c7" in str(caught.value)
    with pytest.raises(explain.JobNotFound):  # pg-train-x is no workload's PodGroup name (no uid)
        _explain(tmp_path, WORKLOADS, "x", "ns-a")


def test_a_gang_short_of_live_pods_is_told_it_waits_for_them(tmp_path: Path) -> None:
    text = f"""
name: t
nodes:
- {{name: n, gpus: 8}}
queues:
- {{name: q, {QUEUE % 8}}}
jobs:
- {{name: short, queue: q, minMember: 3, replicas: 2, template: {{gpus: 1}}}}
"""
    ex = _explain(tmp_path, text, "short")
    assert ex.summary.startswith("stays pending: waiting for its pods") and ex.victims == ()
    assert ex.order is not None and ex.order.position is None and "fewer live pods" in ex.order.reason


def test_a_backed_off_podgroup_is_told_the_scheduler_no_longer_considers_it(tmp_path: Path) -> None:
    """Manifests: a PodGroup with schedulingBackoff 1 and an unschedulable condition on the unlabelled pool."""
    text = (Path(__file__).parent / "backed_off.yaml").read_text(encoding="utf-8")
    ex = _explain(tmp_path, text, "tired-0")
    assert ex.job == "default/tired" and ex.pools == () and ex.pods == (("Pending", 1),)
    [problem] = ex.problems
    assert "schedulingBackoff is 1" in problem and "(too big)" in problem
    assert ex.summary.startswith("not considered by the scheduler")


def test_a_sharded_scenarios_job_is_explained_with_its_pools_shard_config(tmp_path: Path) -> None:
    """The job's pool's shard runs only allocate: its next cycle makes no room by reclaim, where the scenario's
    own configuration (all actions) would."""
    import argparse

    from kai_scheduler.cli import explain as explain_cli

    pool = "labels: {kai.scheduler/node-pool: a}"
    text = f"""
name: t
shards:
- {{name: a, partitionLabelValue: a, config: {{actions: allocate}}}}
nodes:
- {{name: n, gpus: 8, {pool}}}
queues:
- {{name: team-a, {pool}, {QUEUE % 4}}}
- {{name: team-b, {pool}, {QUEUE % 4}}}
jobs:
- {{name: hog, queue: team-a, {pool}, priority: 50, minMember: 1, tasks: [{{status: Running, node: n, gpus: 4}},
                                                                 {{status: Running, node: n, gpus: 4}}]}}
- {{name: mine, queue: team-b, {pool}, priority: 50, replicas: 1, template: {{gpus: 4}}}}
"""
    path = tmp_path / "sharded.yaml"
    args = argparse.Namespace(file=str(path), config=None)
    ref, limits = explain.JobRef.parse("mine"), explain.Limits()
    path.write_text(text, encoding="utf-8")
    sharded = explain_cli._from_file(args, ref, limits)
    assert sharded.next_cycle is not None and sharded.next_cycle.made_room == ()
    path.write_text(text.replace(", config: {actions: allocate}", ""), encoding="utf-8")
    whole = explain_cli._from_file(args, ref, limits)
    assert whole.next_cycle is not None and [v.action for v in whole.next_cycle.made_room] == ["reclaim"]


def test_a_podgroup_backed_off_by_kai_is_told_the_same(tmp_path: Path) -> None:
    """KAI names the unlabelled pool `default` in its condition: after the switch from KAI, the same PodGroup is
    backed off and explained with KAI's message (docs/kai-users.md, "Replacing KAI on a running cluster")."""
    text = (Path(__file__).parent / "backed_off.yaml").read_text(encoding="utf-8")
    text = text.replace('nodePool: ""', "nodePool: default")
    assert "nodePool: default" in text
    ex = _explain(tmp_path, text, "tired-0")
    [problem] = ex.problems
    assert "schedulingBackoff is 1" in problem and "(too big)" in problem
    assert ex.summary.startswith("not considered by the scheduler")
