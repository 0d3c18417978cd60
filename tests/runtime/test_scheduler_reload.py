"""The scheduler rereads --scheduler-conf between cycles when it changed: a shard's placement strategy changed by
the operator (binpack → spread) changes where the next pod goes, without a restart; a bad new file is logged and
the running configuration kept."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.admission.operator import parse_shard
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.operator import render
from kai_scheduler.runtime import components
from kai_scheduler.runtime.options import SchedulerOptions
from kai_scheduler.scheduler.config_file import Watcher
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.operator.builders import shard


def shard_config(gpu: str) -> str:
    return render.config_text(parse_shard(shard("s", placementStrategy={"gpu": gpu})))


def placed(store: MemoryStore, pod: str) -> str:
    found = [br for br in store.list("bindrequests")[0] if br["spec"]["podName"] == pod]
    assert found, f"no BindRequest for {pod}"
    return str(found[0]["spec"]["selectedNode"])


def submit(store: MemoryStore, name: str) -> None:
    store.add_many([b.podgroup(name), b.pod(name, gpus=1)])


def test_a_changed_placement_strategy_takes_effect_in_the_next_cycle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "config.yaml"
    conf.write_text(shard_config("binpack"))
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q"), b.node("n1", gpus=8), b.node("n2", gpus=8)])
    store.add_many([b.podgroup("anchor"), b.pod("anchor", gpus=1, node="n1", phase="Running")])
    step = components.scheduler(store, SchedulerOptions(scheduler_conf=str(conf)), CollectorRegistry(), clock).step

    submit(store, "packed")
    step()
    assert placed(store, "packed") == "n1"  # binpack: beside the anchor

    conf.write_text(shard_config("spread"))  # what the kubelet does when the operator updates the ConfigMap
    submit(store, "spread")
    with caplog.at_level(logging.INFO):
        step()
    assert placed(store, "spread") == "n2"  # spread: the emptier node
    assert "scheduler configuration reloaded" in caplog.text

    conf.write_text("actions: [not, a, string]\n")
    submit(store, "kept")
    with caplog.at_level(logging.WARNING):
        step()
    assert "cannot be used; keeping the running one" in caplog.text
    assert placed(store, "kept") == "n2"  # n1 holds 2 GPUs, n2 1: still spread


def test_the_watcher_sees_content_changes_only(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\n")
    watcher = Watcher(str(path))
    assert not watcher.changed()
    path.write_text("a: 1\n")
    assert not watcher.changed()  # rewritten, same content
    path.write_text("a: 2\n")
    assert watcher.changed() and not watcher.changed()
    path.unlink()
    assert not watcher.changed()  # gone for a moment (a volume being swapped): no change


@pytest.mark.parametrize(
    "partition, lease",
    [("", "kai-scheduler"), ("pool-a", "kai-scheduler-pool-a"), ("Pool_B", "kai-scheduler-pool-b")],
)
def test_each_node_pool_has_its_own_scheduler_lease(partition: str, lease: str) -> None:
    assert components.scheduler_lease(partition) == lease


def test_the_configuration_a_replica_runs_is_one_line_at_start_and_at_each_reload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a rolling change of the ConfigMap an operator compares the replicas' lines: the file's digest (as
    `sha256sum` prints it, 12 digits) and the actions it runs."""
    conf = tmp_path / "config.yaml"
    conf.write_text('actions: "allocate, reclaim"\n')
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    with caplog.at_level(logging.INFO, logger="kai_scheduler.runtime.components"):
        step = components.scheduler(store, SchedulerOptions(scheduler_conf=str(conf)), CollectorRegistry(), clock).step
        [started] = [r for r in caplog.records if r.getMessage() == "scheduler configuration"]
        conf.write_text('actions: "allocate"\n')
        step()
    [reloaded] = [r for r in caplog.records if r.getMessage() == "scheduler configuration reloaded"]
    assert started.__dict__["sha256"] == hashlib.sha256(b'actions: "allocate, reclaim"\n').hexdigest()[:12]
    assert started.__dict__["actions"] == ["allocate", "reclaim"] and started.__dict__["file"] == str(conf)
    assert reloaded.__dict__["sha256"] == hashlib.sha256(b'actions: "allocate"\n').hexdigest()[:12]
    assert reloaded.__dict__["actions"] == ["allocate"]


def test_without_a_file_the_line_says_the_defaults_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock(b.NOW)
    with caplog.at_level(logging.INFO, logger="kai_scheduler.runtime.components"):
        components.scheduler(MemoryStore(clock), SchedulerOptions(), CollectorRegistry(), clock)
    [started] = [r for r in caplog.records if r.getMessage() == "scheduler configuration"]
    assert started.__dict__["file"] == "(none: KAI's defaults)" and "consolidation" in started.__dict__["actions"]
