"""`kai simulate` with a scenario's `shards:`: the shards schedule side by side over virtual time (docs/shards.md);
every placement stays in its job's pool, and each pool's jobs run and finish."""

from __future__ import annotations

from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.config_file import ConfigSource
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources
from kai_scheduler.sim.shards import shard_configs

TEXT = """
shards:
- {name: pool-a, partitionLabelValue: a}
- {name: default}
nodes:
- {name: a, count: 1, gpus: 4, labels: {kai.scheduler/node-pool: a}}
- {name: u, count: 2, gpus: 4}
queues:
- {name: qa, labels: {kai.scheduler/node-pool: a}}
- {name: qu}
jobs:
- {name: ja, count: 3, queue: qa, labels: {kai.scheduler/node-pool: a}, replicas: 1, template: {gpus: 4}, duration: 10m}
- {name: ju, count: 2, queue: qu, replicas: 1, template: {gpus: 4}, duration: 10m}
"""


def test_shards_place_only_in_their_pools_over_virtual_time_and_all_jobs_finish() -> None:
    loaded = sources.loads(TEXT, "shards.yaml", seed=0)
    config = load_config(loaded.config)
    shards = shard_configs(loaded.shards, ConfigSource(loaded.config, loaded.source, loaded.config_lines))
    simulation = replay.Replay(loaded, config, replay.Options(), shards=shards)
    placed: list[tuple[str, str]] = []

    def watch(_: float, result: CycleResult) -> None:
        placed.extend((op.task.name, op.after.node) for op in result.operations if op.op is Op.ALLOCATE)

    simulation.observers.append(watch)
    run = simulation.run()
    assert run.summary.completed == 5
    assert {node for task, node in placed if task.startswith("ja")} == {"a-0"}  # one at a time, 30 minutes
    assert {node for task, node in placed if task.startswith("ju")} <= {"u-0", "u-1"}
    assert simulation.shards is not None and set(simulation.shards.placed_by.values()) == {"pool-a", "default"}


def test_a_shards_own_config_is_its_own_and_its_pool_wins() -> None:
    loaded = sources.loads(
        TEXT.replace("- {name: default}", "- {name: default, config: {flags: {partition-label-value: a}}}"),
        "shards.yaml",
    )
    shards = shard_configs(loaded.shards, ConfigSource(loaded.config, loaded.source, loaded.config_lines))
    assert [(name, c.flags.partition_label_value) for name, c in shards] == [("pool-a", "a"), ("default", "")]


def test_one_binder_and_one_set_of_controllers_serve_every_pool() -> None:
    """The embedded cluster's single binder binds both shards' BindRequests (pods Running in both pools), and
    the status controllers write every pool's PodGroup and Queue status."""
    from kai_scheduler import scenario as scenarios
    from kai_scheduler.sim.embedded import EmbeddedCluster

    loaded = scenarios.loads(TEXT, "shards.yaml")
    config = load_config(loaded.config)
    shards = shard_configs(loaded.shards, ConfigSource(loaded.config, loaded.source, loaded.config_lines))
    cluster = EmbeddedCluster(loaded.objects, config, now=loaded.now, shards=shards)
    cluster.run(2)
    cluster.settle()
    pods, _ = cluster.store.list("pods")
    running = [
        (p["metadata"]["name"], p["spec"].get("nodeName", "")) for p in pods if p["status"].get("phase") == "Running"
    ]
    assert sorted(node for name, node in running if name.startswith("ja")) == ["a-0"]
    assert sorted(node for name, node in running if name.startswith("ju")) == ["u-0", "u-1"]
    queues = {q["metadata"]["name"]: q.get("status", {}).get("allocated", {}) for q in cluster.store.list("queues")[0]}
    assert float(queues["qa"]["nvidia.com/gpu"]) == 4 and float(queues["qu"]["nvidia.com/gpu"]) == 8
    groups = cluster.store.list("podgroups")[0]
    allocated = {
        g["metadata"]["name"]: float(
            ((g.get("status") or {}).get("resourcesStatus") or {}).get("allocated", {}).get("nvidia.com/gpu", 0)
        )
        for g in groups
    }
    assert sum(v for k, v in allocated.items() if k.startswith("ja")) == 4
    assert sum(v for k, v in allocated.items() if k.startswith("ju")) == 8
