"""`kai node-scale-adjuster` and `kai run --node-scale-adjuster`: flags, defaults, one-line errors, and the
component built from them over a store (the process against a real API server: tests/e2e/test_scale_adjuster.py)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cli import main
from kai_scheduler.nodescaleadjuster import pods
from kai_scheduler.runtime import components
from kai_scheduler.runtime.options import ScaleAdjusterOptions
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NOW, node, pod
from tests.cli.invoke import exit_code

FLAGS = [
    "--reconcile-period",
    "--scheduler-name",
    "--scaling-pod-namespace",
    "--scaling-pod-image",
    "--gpu-memory-to-fraction-ratio",
    "--cool-down-seconds",
]


def help_text(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_lists_the_flags_and_their_defaults(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # no line breaks inside a default
    text = help_text("node-scale-adjuster", capsys)
    for flag in [*FLAGS, "--leader-elect", "--kubeconfig"]:
        assert f"{flag} " in text, flag
    for default in ("(default kai-scale-adjust)", "(default 0.1)", "(default 60)", "(default 1s)"):
        assert default in text, default
    run = help_text("run", capsys)
    assert "--node-scale-adjuster [BOOL]" in run and "--scaling-pod-namespace NS" in run


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["node-scale-adjuster", "--gpu-memory-to-fraction-ratio", "0"], "kai: --gpu-memory-to-fraction-ratio: want"),
        (
            ["node-scale-adjuster", "--gpu-memory-to-fraction-ratio", "x"],
            "kai: --gpu-memory-to-fraction-ratio: invalid",
        ),
        (["node-scale-adjuster", "--cool-down-seconds", "-1"], "kai: --cool-down-seconds: must be 0 or more"),
        (["node-scale-adjuster", "--reconcile-period", "soon"], "kai: --reconcile-period: invalid duration"),
        (["run", "--node-scale-adjuster", "--cool-down-seconds", "never"], "kai: --cool-down-seconds: invalid"),
    ],
)
def test_a_bad_flag_value_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1


def test_the_component_is_optional_in_kai_run_and_leader_elected_on_its_own_lease() -> None:
    assert "node-scale-adjuster" not in components.NAMES
    clock = ManualClock(NOW)
    store = MemoryStore(clock)
    waiting = pod("a", fraction=0.5)
    waiting["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    store.add_many([node("n1"), waiting])
    (built,) = components.build(
        ["node-scale-adjuster"], store, clock, CollectorRegistry(), scale_adjuster_options=ScaleAdjusterOptions()
    )
    assert (built.name, built.lease, built.period, built.triggers) == (
        "node-scale-adjuster",
        "kai-node-scale-adjuster",
        1.0,
        ("pods",),
    )
    built.step()
    items, _ = store.list("pods", pods.DEFAULT_NAMESPACE)
    assert len(items) == 1
