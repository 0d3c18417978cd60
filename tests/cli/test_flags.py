"""Every scheduler flag takes effect in every run mode, or says where it does not apply.

The podgrouper flags (`queue-label-key`, `scheduler-name`, `nodepool-label-key`) reach the embedded
podgrouper of `kai schedule` and `kai simulate`; the flags accepted only at their default are errors otherwise,
in a configuration file and on the components' command line alike.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler import cli
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import components
from kai_scheduler.framework.config import FIXED_FLAGS, Flags
from kai_scheduler.runtime import components as builders
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources
from kai_scheduler.store.memory import MemoryStore
from tests.docs.flags import subcommands

SRC = Path(__file__).resolve().parents[2] / "src" / "kai_scheduler"

MANIFEST = """\
apiVersion: v1
kind: Node
metadata: {name: n, labels: {pool: p1}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110", nvidia.com/gpu: "8"}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %(queue)s}
spec:
  resources:
    gpu: {quota: 8, overQuotaWeight: 1, limit: -1}
    cpu: {quota: -1, overQuotaWeight: 1, limit: -1}
    memory: {quota: -1, overQuotaWeight: 1, limit: -1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: default-queue}
spec:
  resources:
    gpu: {quota: 0, overQuotaWeight: 1, limit: -1}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, labels: {%(labels)s}}
spec:
  schedulerName: %(scheduler)s
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
status: {phase: Pending}
"""


def _schedule(capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str, **fields: str) -> dict[str, Any]:
    values = {"queue": "legacy", "labels": "runai/queue: legacy", "scheduler": "kai-scheduler", **fields}
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST % values, encoding="utf-8")
    argv = ["schedule", str(manifest), "-o", "json"]
    if config:
        (tmp_path / "conf.yaml").write_text(config, encoding="utf-8")
        argv += ["--config", str(tmp_path / "conf.yaml")]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_queue_label_key_reads_the_legacy_runai_queue_label(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    default = _schedule(capsys, tmp_path, "")
    assert default["tasks"]["ns/p"]["queue"] == "default-queue"
    legacy = _schedule(capsys, tmp_path, "flags: {queue-label-key: runai/queue}\n")
    assert legacy["tasks"]["ns/p"]["queue"] == "legacy"
    assert legacy["tasks"]["ns/p"]["status"] == "Binding"


def test_scheduler_name_selects_the_pods_the_embedded_podgrouper_groups(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fields = {"scheduler": "other", "labels": "kai.scheduler/queue: legacy"}
    assert _schedule(capsys, tmp_path, "", **fields)["tasks"] == {}
    named = _schedule(capsys, tmp_path, "flags: {scheduler-name: other}\n", **fields)
    assert named["tasks"]["ns/p"]["status"] == "Binding"


def test_nodepool_label_key_names_the_project_queue(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A `project` label makes the queue `<project>-<node pool>`, the pool read from the node-pool label key. The
    PodGroup then carries the pod's pool label too, so it is the job of that pool's scheduler (docs/shards.md)."""
    fields = {"queue": "research-p1", "labels": "project: research, pool: p1"}
    assert _schedule(capsys, tmp_path, "", **fields)["tasks"]["ns/p"]["queue"] == "research"
    flags = "flags: {nodepool-label-key: pool, partition-label-value: p1}\n"
    pooled = _schedule(capsys, tmp_path, flags, **fields)
    assert pooled["tasks"]["ns/p"]["queue"] == "research-p1"


def test_simulate_honours_queue_label_key() -> None:
    """The replay's podgrouper groups the pod into the queue its legacy label names."""
    loaded = sources.loads(
        MANIFEST % {"queue": "legacy", "labels": "runai/queue: legacy", "scheduler": "kai-scheduler"}, "manifest.yaml"
    )
    for flags, queue in (({}, "default-queue"), ({"queue-label-key": "runai/queue"}, "legacy")):
        simulation = replay.Replay(loaded, load_config({"flags": flags}), replay.Options(until=1.0))
        simulation.podgrouper.reconcile()
        assert [g["spec"]["queue"] for g in simulation.store.list("podgroups")[0]] == [queue]


@pytest.mark.parametrize("name", sorted(FIXED_FLAGS))
def test_a_flag_supported_only_at_its_default_is_an_error_elsewhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    key = name.replace("_", "-")
    other = str(not getattr(Flags(), name)).lower()
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST % {"queue": "q", "labels": "", "scheduler": "kai-scheduler"}, encoding="utf-8")
    conf = tmp_path / "conf.yaml"
    conf.write_text(f"flags:\n  {key}: {str(getattr(Flags(), name)).lower()}\n", encoding="utf-8")
    assert cli.main(["schedule", str(manifest), "--config", str(conf), "-o", "json"]) == 0  # the default loads
    capsys.readouterr()
    conf.write_text(f"flags:\n  {key}: {other}\n", encoding="utf-8")
    for command in ("schedule", "simulate"):
        assert (
            cli.main(
                [command, str(manifest), "--config", str(conf), "--no-report"][: 4 if command == "schedule" else 5]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert err.startswith(f"kai: {conf}:2: config flags.{key}: only ") and err.count("\n") == 1
    assert cli.main(["scheduler", f"--{key}={other}", "--kubeconfig", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith(f"kai: --{key}: only ")


def test_every_other_flag_is_read_outside_the_configuration() -> None:
    """A flag nothing reads is accepted and ignored: each must be used by the code, or be in FIXED_FLAGS."""
    code = "\n".join(
        p.read_text(encoding="utf-8")
        for p in SRC.rglob("*.py")
        if p.name != "config.py" or p.parent.name != "framework"
    )
    unused = [
        f.name
        for f in dataclasses.fields(Flags)
        if f.name not in FIXED_FLAGS and not re.search(rf"flags\.{f.name}\b", code)
    ]
    assert unused == []


@pytest.mark.parametrize("command", ["run", "podgrouper", "controllers"])
def test_the_podgrouper_component_takes_the_podgrouper_flags(command: str) -> None:
    args = cli.parser().parse_args(
        [command, "--queue-label-key", "runai/queue", "--nodepool-label-key", "pool", "--scheduler-name", "other"]
    )
    options = components._grouper_options(args)
    assert (options.queue_label_key, options.node_pool_label_key, options.scheduler_name) == (
        "runai/queue",
        "pool",
        "other",
    )


@pytest.mark.parametrize("command", ["run", "controllers"])
def test_the_controllers_write_max_concurrent_reconciles_statuses_at_once(command: str) -> None:
    """One flag: under `kai run` it sets the binder's binds and the controllers' status writes alike."""
    assert components._grouper_options(cli.parser().parse_args([command])).max_concurrent_reconciles == 10
    args = cli.parser().parse_args([command, "--max-concurrent-reconciles", "3"])
    assert components._grouper_options(args).max_concurrent_reconciles == 3
    if command == "run":
        assert components._binder_options(args).max_concurrent_reconciles == 3
    assert components._grouper_options(args).grouper_writers == 20  # the grouper's own default


def test_the_podgrouper_sends_max_concurrent_reconciles_writes_at_once() -> None:
    """KAI's pod grouper flag; here its own default (20) and the controllers' setting untouched."""
    assert components._grouper_options(cli.parser().parse_args(["podgrouper"])).grouper_writers == 20
    options = components._grouper_options(cli.parser().parse_args(["podgrouper", "--max-concurrent-reconciles=3"]))
    assert (options.grouper_writers, options.max_concurrent_reconciles) == (3, 10)
    none = components._grouper_options(cli.parser().parse_args(["podgrouper", "--max-concurrent-reconciles=0"]))
    with pytest.raises(UserError, match=r"^--max-concurrent-reconciles: must be at least 1, got 0$"):
        builders.podgrouper(MemoryStore(ManualClock(0.0)), none, ManualClock(0.0))


@pytest.mark.parametrize("command", ["run", "podgrouper"])
def test_the_podgrouper_takes_kais_selector_flags(command: str) -> None:
    args = cli.parser().parse_args(
        [command, "--pod-label-selector", "app=batch, tier=gpu", "--namespace-label-selector", "example.com/team=ml"]
    )
    options = components._grouper_options(args)
    assert options.pod_label_selector == {"app": "batch", "tier": "gpu"}
    assert options.namespace_label_selector == {"example.com/team": "ml"}
    assert components._grouper_options(cli.parser().parse_args([command])).pod_label_selector == {}


def test_the_binder_takes_its_reservation_flags() -> None:
    args = cli.parser().parse_args(
        [
            "binder",
            "--resource-reservation-pod-image",
            "registry.local/reserve:1",
            "--resource-reservation-allocation-timeout",
            "2m",
            "--runtime-class-name",
            "nvidia",
        ]
    )
    options = components._binder_options(args)
    assert options.resource_reservation_pod_image == "registry.local/reserve:1"
    assert options.resource_reservation_allocation_timeout == 120.0
    assert options.runtime_class_name == "nvidia"
    defaults = components._binder_options(cli.parser().parse_args(["binder"]))
    # KAI's default: the reservation pods name no RuntimeClass (the node's default runtime)
    assert defaults.runtime_class_name == "" and defaults.resource_reservation_allocation_timeout == 40.0


def test_kai_run_gives_fractional_pods_the_webhooks_runtime_class_and_reservation_pods_the_binders() -> None:
    """KAI's defaults differ: `nvidia` for fractional pods (admission), none for the reservation pods (binder)."""
    args = cli.parser().parse_args(["run", "--admission"])
    binder = components._binder_options(args)
    settings = components._run_pod_settings(args, components._scheduler_options(args), binder)
    assert (binder.runtime_class_name, settings.runtime_class_name) == ("", "nvidia")
    argv = ["run", "--admission", "--runtime-class-name=rc", "--gpu-fraction-runtime-class-name=kata"]
    args = cli.parser().parse_args(argv)
    binder = components._binder_options(args)
    settings = components._run_pod_settings(args, components._scheduler_options(args), binder)
    assert (binder.runtime_class_name, settings.runtime_class_name) == ("rc", "kata")


@pytest.mark.parametrize("command", ["binder", "run"])
def test_the_binder_takes_hami_core_enabled_off_by_default(command: str) -> None:
    assert not components._binder_options(cli.parser().parse_args([command])).hami_core_enabled
    assert components._binder_options(cli.parser().parse_args([command, "--hami-core-enabled"])).hami_core_enabled
    args = cli.parser().parse_args([command, "--hami-core-enabled=false"])
    assert not components._binder_options(args).hami_core_enabled


def test_kai_run_gives_the_webhooks_the_binders_hami_core_setting() -> None:
    """Under `kai run --admission` one flag turns on both halves: the webhook's env and the binder's value."""
    for argv, enabled in ((["run", "--admission"], False), (["run", "--admission", "--hami-core-enabled"], True)):
        args = cli.parser().parse_args([*argv, "--gpu-sharing-enabled"])
        binder = components._binder_options(args)
        settings = components._run_pod_settings(args, components._scheduler_options(args), binder)
        assert (binder.hami_core_enabled, settings.hami_core_enabled, settings.gpu_sharing_enabled) == (
            enabled,
            enabled,
            True,
        )


@pytest.mark.parametrize("command", ["admission", "scheduler", "binder", "podgrouper", "controllers", "run"])
def test_the_components_value_flags_name_what_they_take(command: str) -> None:
    """A value flag shows a metavar such as NAME, NS, DURATION, not argparse's upper-cased flag name."""
    derived = [
        a.option_strings[-1]
        for a in subcommands(cli.parser())[command]._actions
        if a.option_strings and a.nargs != 0 and a.metavar is None
    ]
    assert derived == []
