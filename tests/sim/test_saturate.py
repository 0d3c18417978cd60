"""The saturation experiment: drawing tasks, the points recorded, withdrawal of what does not fit, determinism
per seed, and `kai simulate --saturate` (JSON, report, one-line errors)."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path

import pytest

from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import saturate, trace
from tests.cli.invoke import run

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
NODES = """sn,cpu_milli,memory_mib,gpu,model
node-a,64000,262144,2,T4
node-b,64000,262144,4,V100M32
node-c,32000,131072,0,
"""
PODS = (
    "\n".join(
        [
            HEADER,
            "p0,4000,8192,1,1000,,LS,Running,0,400,0",
            "p1,2000,4096,1,250,,BE,Running,0,250,0",
            "p2,2000,4096,1,700,,BE,Running,0,250,0",
            "p3,8000,16384,2,1000,V100M32,LS,Running,0,900,0",
            "p4,1000,1024,0,0,,Burstable,Running,0,360,0",
            "p5,2000,4096,1,500,T4,BE,Running,0,250,0",
        ]
    )
    + "\n"
)
ALLOCATE_ONLY = {"actions": "allocate"}


def _files(tmp_path: Path, pods: str = PODS, nodes: str = NODES) -> tuple[str, str]:
    (tmp_path / "pods.csv").write_text(pods)
    (tmp_path / "nodes.csv").write_text(nodes)
    return str(tmp_path / "pods.csv"), str(tmp_path / "nodes.csv")


def _experiment(
    tmp_path: Path, seed: int, *, until: float = 1.3, per_cycle: int = 2, config: dict[str, object] | None = None
) -> saturate.SaturationRun:
    pods, nodes = _files(tmp_path)
    node_entries = trace.read_nodes(nodes)
    drawn = saturate.draw(trace.read_tasks(pods), 6.0, until, seed)
    return saturate.Saturation(node_entries, drawn, load_config(config or ALLOCATE_ONLY), per_cycle=per_cycle).run()


def test_draws_until_the_demand_reaches_the_multiple(tmp_path: Path) -> None:
    tasks = trace.read_tasks(_files(tmp_path)[0])
    drawn = saturate.draw(tasks, 6.0, 1.3, seed=4)
    asked = [saturate.task_gpus(t) for t in drawn]
    assert sum(asked) >= 1.3 * 6 - 1e-9
    assert sum(asked[:-1]) < 1.3 * 6
    assert drawn == saturate.draw(tasks, 6.0, 1.3, seed=4)
    assert drawn != saturate.draw(tasks, 6.0, 1.3, seed=5)


def test_a_task_that_does_not_fit_on_arrival_is_withdrawn_and_counted(tmp_path: Path) -> None:
    # One 1-GPU node, half-GPU tasks: two fill it, the third finds no room and leaves.
    pods = "\n".join([HEADER, "h,1000,1024,1,500,,LS,Running,0,10,0"]) + "\n"
    _, nodes = _files(tmp_path, pods, "sn,cpu_milli,memory_mib,gpu,model\nn,8000,65536,1,T4\n")
    drawn = saturate.draw(trace.read_tasks(tmp_path / "pods.csv"), 1.0, 1.5, seed=0)
    result = saturate.Saturation(trace.read_nodes(nodes), drawn, load_config(ALLOCATE_ONLY)).run()
    assert [(p.arrived, p.allocated, p.failed) for p in result.points] == [
        (0.0, 0.0, 0),
        (0.5, 0.5, 0),
        (1.0, 1.0, 0),
        (1.5, 1.0, 1),
    ]
    out = result.to_json()
    assert out["unallocated_gpu_ratio"] == [1.0, 0.5, 0.0, 0.0]
    assert out["unallocated_gpu_ratio_at_full"] == 0.0
    assert out["failed_tasks"] == 1
    # The workload is half-GPU tasks only: a half-used GPU is no fragment, a full node has nothing free.
    assert [p.fragmentation for p in result.points] == [0.0, 0.0, 0.0, 0.0]


def test_fragmentation_counts_free_gpus_the_workload_cannot_use(tmp_path: Path) -> None:
    # 0.7-GPU tasks only on one 2-GPU node: after one, 0.3 of its GPU is stranded (of 2 GPUs: 0.15).
    pods = "\n".join([HEADER, "s,1000,1024,1,700,,LS,Running,0,10,0"]) + "\n"
    _, nodes = _files(tmp_path, pods, "sn,cpu_milli,memory_mib,gpu,model\nn,8000,65536,2,T4\n")
    drawn = saturate.draw(trace.read_tasks(tmp_path / "pods.csv"), 2.0, 1.0, seed=0)
    result = saturate.Saturation(trace.read_nodes(nodes), drawn, load_config(ALLOCATE_ONLY)).run()
    assert [round(p.fragmentation, 6) for p in result.points] == [0.0, 0.15, 0.3, 0.3]
    assert [round(p.allocated, 6) for p in result.points] == [0.0, 0.35, 0.7, 0.7]


def test_deterministic_per_seed(tmp_path: Path) -> None:
    first, again = _experiment(tmp_path, 7).to_json(), _experiment(tmp_path, 7).to_json()
    other = _experiment(tmp_path, 8).to_json()
    for out in (first, again, other):
        del out["wall_seconds"], out["cpu_seconds"]
    assert first == again
    assert first != other


def test_cli_json_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods, nodes = _files(tmp_path)
    config = tmp_path / "allocate.yaml"
    config.write_text('actions: "allocate"\n')
    code, out, err = run(
        capsys,
        "simulate",
        "--trace",
        pods,
        "--nodes",
        nodes,
        "--saturate",
        "--seed",
        "3",
        "--arrivals-per-cycle",
        "2",
        "--config",
        str(config),
        "-o",
        "json",
        "--no-progress",
        "--out",
        str(tmp_path / "report"),
    )
    assert code == 0, err
    saturation = json.loads(out)["saturation"]
    assert saturation["arrived"][0] == 0.0 and saturation["arrived"][-1] >= 1.3
    assert len(saturation["unallocated_gpu_ratio"]) == len(saturation["arrived"])
    assert 0.0 <= saturation["unallocated_gpu_ratio_at_full"] <= 1.0
    assert "saturate: " in err and "report: " in err
    html = (tmp_path / "report" / "report.html").read_text()
    assert "data:image/png;base64," in html
    written = json.loads((tmp_path / "report" / "saturation.json").read_text())
    assert [run["arrived"] for run in written.values()] == [saturation["arrived"]]


def test_progress_off_a_terminal_is_whole_lines_at_each_tenth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a log or a pipe the progress is a line per 10 % of demand, without the carriage returns of a terminal."""
    pods, nodes = _files(tmp_path)
    code, _, err = run(capsys, "simulate", "--trace", pods, "--nodes", nodes, "--saturate", "--no-report")
    assert code == 0, err
    assert "\r" not in err
    lines = [line for line in err.splitlines() if "demand arrived" in line]
    percents = [int(line.split("demand arrived ")[1].split(" %")[0]) for line in lines]
    assert len(percents) >= 2 and percents == sorted(percents)
    assert [p // 10 for p in percents] == sorted(set(p // 10 for p in percents))  # one line per tenth


def test_progress_on_a_terminal_redraws_one_line() -> None:
    from kai_scheduler.cli.saturate import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    progress = _Progress("run", screen)
    for arrived in (0.0, 0.004, 0.01, 0.5, 1.3):
        progress(arrived)
    progress.close()
    assert screen.getvalue().count("\r") == 4 and screen.getvalue().endswith("130 % of the cluster's GPUs\n")


def test_cli_compare_puts_both_runs_in_one_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods, nodes = _files(tmp_path)
    examples = Path(__file__).resolve().parents[2] / "examples" / "config"
    code, out, err = run(
        capsys,
        "simulate",
        "--trace",
        pods,
        "--nodes",
        nodes,
        "--saturate",
        "--no-report",
        "--no-progress",
        "-o",
        "json",
        "--compare",
        str(examples / "gpupack.yaml"),
        str(examples / "gpufrag.yaml"),
    )
    assert code == 0, err
    assert sorted(json.loads(out)) == ["gpufrag", "gpupack"]


@pytest.mark.parametrize(
    "argv, message",
    [
        pytest.param(["--saturate"], "--saturate needs --trace PODS_CSV and --nodes NODES_CSV", id="no trace"),
        pytest.param(
            ["--saturate", "--trace", "P", "--nodes", "N", "--sample", "5"],
            "--sample does not apply to --saturate",
            id="sample",
        ),
        pytest.param(
            ["x.yaml", "--until-demand", "1.1"],
            "--until-demand and --arrivals-per-cycle go with --saturate",
            id="without --saturate",
        ),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", *argv, "--no-report")
    assert code != 0
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("policy", ["gpupack", "gpuspread", "gpufrag"])
def test_the_example_configurations_load_with_allocate_only(policy: str) -> None:
    from kai_scheduler.scheduler import config_file

    path = Path(__file__).resolve().parents[2] / "examples" / "config" / f"{policy}.yaml"
    config = config_file.load(config_file.read(str(path)))
    assert config.actions == ("allocate",)
    assert policy in [p.name for p in config.plugins()]


def test_each_cycle_updates_the_kept_snapshot_rather_than_rebuilding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run lets go of each cycle's snapshot, so the next cycle changes the kept model in place: one build
    from nothing in a whole run, not one per arrival."""
    from kai_scheduler.cluster.snapshot import incremental

    fresh = []
    real = incremental.new_model
    monkeypatch.setattr(incremental, "new_model", lambda *a, **k: fresh.append(1) or real(*a, **k))
    run = _experiment(tmp_path, 3, per_cycle=1)
    assert run.cycles > 5
    assert len(fresh) == 1


def test_the_meter_kept_between_points_agrees_with_measuring_every_node(tmp_path: Path) -> None:
    """Each point, measured from the rows that changed, equals measuring the whole snapshot from nothing."""
    pods, nodes = _files(tmp_path)
    drawn = saturate.draw(trace.read_tasks(pods), 6.0, 1.3, 11)
    experiment = saturate.Saturation(trace.read_nodes(nodes), drawn, load_config(ALLOCATE_ONLY), per_cycle=1)
    kept_meter = experiment._meter
    checked = []

    def both(snap: Snapshot) -> tuple[float, float]:
        fresh = saturate.Meter(kept_meter.shapes, kept_meter.eligible).measure(snap)
        kept = kept_meter.measure(snap)
        checked.append(fresh)
        assert kept == pytest.approx(fresh, abs=1e-9)
        return kept

    experiment._meter = types.SimpleNamespace(measure=both)  # type: ignore[assignment]
    run = experiment.run()
    assert len(checked) == run.cycles + 1 and len({c[1] for c in checked}) > 1


def test_the_perfect_packing_line_is_drawn_in_the_runs_unit(tmp_path: Path) -> None:
    """The dotted reference and the runs share the axis in % of the cluster's GPUs: 100 at no demand, 0 from
    demand 100 % on (it was drawn in ratios, a speck at the origin under the runs' 0–130 %)."""
    from kai_scheduler.sim import saturation_report

    run = _experiment(tmp_path, 7)
    left = saturation_report.figure([run], ["a"]).axes[0]
    reference, drawn = left.lines[0], left.lines[1]
    assert reference.get_label() == "perfect packing"
    assert list(reference.get_xdata()[:2]) == [0, 100] and list(reference.get_ydata()) == [100, 0, 0]
    assert max(reference.get_xdata()) >= max(drawn.get_xdata())
