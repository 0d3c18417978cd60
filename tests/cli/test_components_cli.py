"""`kai scheduler|binder|podgrouper|controllers|run`: flags, one-line errors, and a real process stopped by
SIGTERM."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.api.clock import SystemClock
from kai_scheduler.cli import main
from kai_scheduler.store.exposition import text
from kai_scheduler.store.memory import MemoryStore
from tests import children
from tests.builders import node, queue
from tests.cli.invoke import exit_code
from tests.runtime import exposition
from tests.runtime.test_process import closed_port, eventually, get, kubeconfig, pending_pod
from tests.store.mock_apiserver import MockApiServer

COMMON = [
    "--kubeconfig",
    "--context",
    "--qps",
    "--burst",
    "--listen-address",
    "--leader-elect",
    "--leader-elect-namespace",
    "--leader-elect-lease-duration",
    "--leader-elect-renew-deadline",
    "--leader-elect-retry-period",
]
SCHEDULER = [
    "--scheduler-name",
    "--scheduler-conf",
    "--schedule-period",
    "--nodepool-label-key",
    "--partition-label-value",
    "--queue-label-key",
    "--restrict-node-scheduling",
    "--max-consolidation-preemptees",
    "--detailed-fit-errors",
    "--update-pod-eviction-condition",
    "--use-scheduling-signatures",
    "--full-hierarchy-fairness",
    "--allow-consolidating-reclaim",
    "--default-staleness-grace-period",
    "--stuck-in-releasing-threshold",
    "--metrics-namespace",
    "--plugin-server-port",
]
BINDER = [
    "--reconcile-period",
    "--max-concurrent-reconciles",
    "--resource-reservation-namespace",
    "--resource-reservation-pod-image",
    "--resource-reservation-allocation-timeout",
    "--runtime-class-name",
]
GROUPER = ["--reconcile-period", "--scheduler-name", "--queue-label-key", "--nodepool-label-key"]
SELECTORS = ["--pod-label-selector", "--namespace-label-selector"]
QUEUE_METRICS = ["--queue-label-to-metric-label", "--queue-label-to-default-metric-value"]


def help_text(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("scheduler", SCHEDULER),
        ("binder", BINDER),
        ("podgrouper", GROUPER + SELECTORS),
        ("controllers", GROUPER + QUEUE_METRICS + ["--metrics-namespace", "--max-concurrent-reconciles"]),
        ("run", SCHEDULER + BINDER + QUEUE_METRICS + SELECTORS),
    ],
)
def test_help_lists_every_flag(command: str, flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(command, capsys)
    for flag in COMMON + flags:
        assert f"{flag} " in text, flag


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_text("scheduler", capsys).split())
    for default in (
        "(default 1s)",
        "(default 50)",
        "(default 300)",
        '(default ":8080")',
        "(default 15s)",
        "(default 10s)",
        "(default 2s)",
        "(default kai)",
        "(default 16)",
        "(default 2m)",
        "(default 8081)",
    ):
        assert default in text, default
    assert "(default 0.2s)" in " ".join(help_text("binder", capsys).split())
    assert "(default 0.5s)" in " ".join(help_text("podgrouper", capsys).split())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["scheduler", "--schedule-period", "5x"], "kai: --schedule-period: invalid duration '5x'"),
        (["binder", "--reconcile-period", "fast"], "kai: --reconcile-period: invalid duration 'fast'"),
        (
            ["binder", "--resource-reservation-allocation-timeout", "soon"],
            "kai: --resource-reservation-allocation-timeout: invalid duration 'soon'",
        ),
        (["run", "--leader-elect-lease-duration", "1"], "kai: --leader-elect-lease-duration: invalid duration"),
        (["scheduler", "--detailed-fit-errors=maybe"], "kai: --detailed-fit-errors: invalid boolean 'maybe'"),
        (
            ["scheduler", "--plugin-server-port", "http"],
            "kai: --plugin-server-port: invalid value 'http': want an integer",
        ),
        (
            ["node-scale-adjuster", "--cool-down-seconds", "soon"],
            "kai: --cool-down-seconds: invalid value 'soon': want a number",
        ),
        (
            ["scheduler", "--detailed-fit-errors=2"],
            "kai: --detailed-fit-errors: invalid boolean '2': want true or false",
        ),
        (["run", "--plugin-server-port", "70000"], "kai: --plugin-server-port: want 0 (off) to 65535, got 70000"),
        (["podgrouper", "--qps", "lots"], "kai: --qps: invalid value 'lots': want a number"),
        (["scheduler", "--max-consolidation-preemptees", "1.5"], "kai: --max-consolidation-preemptees: invalid value"),
        (
            ["controllers", "--queue-label-to-metric-label", "tier=queue_tier,zone"],
            "kai: --queue-label-to-metric-label: invalid map item 'zone': want key=value",
        ),
        (
            ["run", "--queue-label-to-metric-label", "tier=queue-tier"],
            "kai: --queue-label-to-metric-label: queue label 'tier': 'queue-tier' is not a label name",
        ),
        (
            ["controllers", "--queue-label-to-default-metric-value", "tier"],
            "kai: --queue-label-to-default-metric-value: invalid map item 'tier': want key=value",
        ),
        (["podgrouper", "--pod-label-selector", "app=batch,web"], "kai: --pod-label-selector: 'web' is not key=value"),
        (
            ["run", "--namespace-label-selector", "team=m l"],
            "kai: --namespace-label-selector: label team: 'm l' is not a label value",
        ),
        (["podgrouper", "--pod-label-selector", "=batch"], "kai: --pod-label-selector: '' is not a label key"),
        (["controllers", "--metrics-namespace", "my-team"], "kai: --metrics-namespace: 'my-team' is not a metric name"),
        (["scheduler", "--metrics-namespace", "9"], "kai: --metrics-namespace: '9' is not a metric name prefix"),
        (
            ["controllers", "--leader-elect", "--leader-elect-renew-deadline", "20s"],
            "kai: --leader-elect-lease-duration: must be longer than --leader-elect-renew-deadline",
        ),
    ],
)
def test_a_bad_flag_value_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1


def test_an_unreadable_kubeconfig_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["binder", "--kubeconfig", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kai: --kubeconfig: cannot load the Kubernetes configuration") and err.count("\n") == 1


def test_a_bad_scheduler_conf_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = kubeconfig(tmp_path, f"http://127.0.0.1:{closed_port()}")
    conf = tmp_path / "conf.yaml"
    conf.write_text("actions: allocate, fly\n")
    assert main(["scheduler", "--kubeconfig", config, "--scheduler-conf", str(conf)]) == 2
    err = capsys.readouterr().err
    assert "unknown action 'fly'" in err and err.count("\n") == 1
    assert main(["scheduler", "--kubeconfig", config, "--scheduler-conf", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kai: --scheduler-conf") and err.count("\n") == 1


def test_kai_run_binds_a_pod_serves_webhooks_and_readyz_and_exits_0_on_sigterm(tmp_path: Path) -> None:
    memory = MemoryStore(SystemClock())
    memory.add_many([node("n1", gpus=0), queue("q"), pending_pod("p")])
    conf = tmp_path / "configmap.yaml"  # a ConfigMap wrapping config.yaml, with flags the CLI overrides
    conf.write_text("apiVersion: v1\nkind: ConfigMap\ndata:\n  config.yaml: |\n    actions: allocate\n")
    port = closed_port()
    with MockApiServer(memory) as server:
        proc = children.spawn_kai(
            [
                "run",
                "--kubeconfig",
                kubeconfig(tmp_path, server.url),
                "--listen-address",
                f"127.0.0.1:{port}",
                "--plugin-server-port=0",
                "--schedule-period",
                "50ms",
                "--reconcile-period",
                "50ms",
                "--scheduler-conf",
                str(conf),
                "--leader-elect=true",
                "--leader-elect-retry-period",
                "100ms",
                "--admission",
                f"--webhook-port={closed_port()}",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert eventually(
                lambda: proc.poll() is not None or bool(memory.get("pods", "p", "team-a")["spec"].get("nodeName"))
            ), "the pod was not bound"
            assert proc.poll() is None, "the process ended early"
            assert eventually(lambda: _ready(port))
        finally:
            err = children.stop(proc)
        assert proc.returncode == 0, err
        # Released on the way out; a mock server starved of CPU (this test's, in a loaded pytest worker) may not
        # answer the release within its bound, and then the process must say so (docs/components.md, Stopping).
        kept = {lease["metadata"]["name"] for lease in memory.list("leases")[0] if lease["spec"]["holderIdentity"]}
        assert not kept or ("Leases not released" in err and all(name in err for name in kept)), err
        assert [s["metadata"]["name"] for s in memory.list("secrets")[0]] == ["kai-admission-cert"]


def _ready(port: int) -> bool:
    try:
        return get(port, "/readyz")[0] == 200
    except OSError:
        return False


@pytest.mark.parametrize(("command", "frozen"), [("binder", True), ("controllers", True), ("scheduler", False)])
def test_a_component_without_a_scheduler_freezes_its_start_up_heap_before_running(
    command: str, frozen: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process running no scheduler moves what it made while starting out of the collector's full collections;
    a scheduler's collections follow its cycles and are left as they are (bench/README.md, "A second pass")."""
    import gc

    from kai_scheduler.runtime.process import Process

    seen: list[int] = []

    def run(self: Process) -> int:
        seen.append(gc.get_freeze_count())
        return 0

    monkeypatch.setattr(Process, "run", run)
    before = gc.get_freeze_count()
    try:
        with MockApiServer(MemoryStore(SystemClock())) as server:
            args = [
                command,
                "--kubeconfig",
                kubeconfig(tmp_path, server.url),
                f"--listen-address=127.0.0.1:{closed_port()}",
            ]
            if command == "scheduler":
                args.append("--plugin-server-port=0")
            assert main(args) == 0
    finally:
        gc.unfreeze()
    assert len(seen) == 1
    assert (seen[0] > before) is frozen


@pytest.mark.parametrize("command", ["run", "binder", "scheduler"])
def test_a_component_process_collects_its_young_objects_less_often(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A component process runs with the collector's service threshold for young collections (not Python's 700);
    the older generations keep their ratios."""
    import gc

    from kai_scheduler.runtime.process import Process
    from kai_scheduler.store import collector

    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(Process, "run", lambda self: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    try:
        with MockApiServer(MemoryStore(SystemClock())) as server:
            args = [command, "--kubeconfig", kubeconfig(tmp_path, server.url)]
            args.append(f"--listen-address=127.0.0.1:{closed_port()}")
            if command in ("scheduler", "run"):
                args.append("--plugin-server-port=0")
            assert main(args) == 0
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
    assert seen == [(collector.SERVICE_THRESHOLD, before[1], before[2])]
    assert collector.SERVICE_THRESHOLD > 700


@pytest.mark.parametrize(("command", "namespace"), [("controllers", "team"), ("run", "team"), ("controllers", "")])
def test_the_queue_controller_s_series_take_the_namespace_and_the_queue_labels_of_the_flags(
    command: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KAI's queue controller flags: `tier` read from the queue, `zone` missing there and given its default; under
    `kai run` the one --metrics-namespace names the scheduler's series and the queue controller's; an empty one
    prefixes nothing, as in KAI."""
    import gc

    from kai_scheduler.runtime import components as builders
    from kai_scheduler.runtime.process import Process

    scraped: list[str] = []
    original = builders.build

    def build(*args: Any, **options: Any) -> list[builders.Component]:
        components = original(*args, **options)
        next(c for c in components if c.name == "controllers").step()
        scraped.append(text(args[3]).decode())
        return components

    monkeypatch.setattr(builders, "build", build)
    monkeypatch.setattr(Process, "run", lambda self: 0)
    memory = MemoryStore(SystemClock())
    memory.add_many([queue("q", labels={"tier": "gold"})])
    try:
        with MockApiServer(memory) as server:
            args = [
                command,
                "--kubeconfig",
                kubeconfig(tmp_path, server.url),
                f"--listen-address=127.0.0.1:{closed_port()}",
                f"--metrics-namespace={namespace}",
                "--queue-label-to-metric-label=tier=queue_tier",
                "--queue-label-to-metric-label=zone=queue_zone",
                "--queue-label-to-default-metric-value=zone=eu",
            ]
            if command == "run":
                args.append("--plugin-server-port=0")
            assert main(args) == 0
    finally:
        gc.unfreeze()
    scrape = exposition.parse(scraped[0])
    labels = {"queue_name": "q", "queue_metadata_name": "q", "queue_display_name": ""}
    prefix = f"{namespace}_" if namespace else ""
    assert scrape.value(f"{prefix}queue_info", **labels, queue_tier="gold", queue_zone="eu") == 1
    assert "kai_queue_info" not in scrape.types
    if command == "run":
        assert f"{prefix}e2e_scheduling_latency_milliseconds" in scrape.types
