"""The Alibaba openb trace import: every column, sampling and time scale, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler.api.duration import describe_duration
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, trace

# ../shared/traces beside the checkout: where the main checkout and CI find it.
TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces" / "alibaba-gpu-v2023"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
NODES = """sn,cpu_milli,memory_mib,gpu,model
node-a,64000,262144,2,T4
node-b,96000,393216,8,V100M32
node-c,32000,131072,0,
"""


def _write(tmp_path: Path, pods: str, nodes: str = NODES) -> tuple[Path, Path]:
    (tmp_path / "pods.csv").write_text(pods)
    (tmp_path / "nodes.csv").write_text(nodes)
    return tmp_path / "pods.csv", tmp_path / "nodes.csv"


def _pods(*rows: str) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


def test_every_column_is_read(tmp_path: Path) -> None:
    pods, nodes = _write(
        tmp_path,
        _pods(
            "p0,4000,8192,1,1000,,LS,Running,100,400,110",  # whole GPU, waited 10 s in the trace
            "p1,2000,4096,1,250,T4,BE,Running,150,250,150",  # a quarter of a T4
            "p2,8000,16384,2,1000,V100M16|V100M32|V100M32,LS,Running,200,900,200",
            "p3,1000,1024,0,0,,Burstable,Pending,300,360,",  # never scheduled in the trace: 60 s
            "p4,500,512,2,500,,,Running,300,301,300",  # half of each of two GPUs
        ),
    )
    loaded = trace.load(pods, nodes, time_scale=0.5)
    node = {o["metadata"]["name"]: o for o in loaded.objects if o["kind"] == "Node"}
    assert node["node-a"]["metadata"]["labels"][trace.GPU_MODEL_LABEL] == "T4"
    assert node["node-a"]["status"]["allocatable"] == {
        "cpu": "64000m",
        "memory": "262144Mi",
        "nvidia.com/gpu": "2",
        "pods": "110",
    }
    assert node["node-b"]["metadata"]["labels"]["nvidia.com/gpu.memory"] == "32768"
    assert trace.GPU_MODEL_LABEL not in node["node-c"]["metadata"]["labels"]
    jobs = {j.name: j for j in loaded.jobs}
    assert {n: (j.queue, j.submit_at, j.duration) for n, j in jobs.items()} == {
        "p0": ("ls", 0.0, 145.0),  # arrivals from the first creation_time; times × 0.5
        "p1": ("be", 25.0, 50.0),
        "p2": ("ls", 50.0, 350.0),
        "p3": ("burstable", 100.0, 30.0),
        "p4": ("default", 100.0, 0.5),
    }
    pod = {o["metadata"]["name"]: o for o in loaded.objects if o["kind"] == "Pod"}
    container = pod["p0"]["spec"]["containers"][0]["resources"]["requests"]
    assert container == {"cpu": "4000m", "memory": "8192Mi", "nvidia.com/gpu": "1"}
    assert pod["p1"]["metadata"]["annotations"]["gpu-fraction"] == "0.25"
    assert pod["p1"]["metadata"]["labels"][trace.QOS_LABEL] == "BE"
    terms = pod["p2"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": trace.GPU_MODEL_LABEL, "operator": "In", "values": ["V100M16", "V100M32"]}
    ]
    assert pod["p4"]["metadata"]["annotations"]["gpu-fraction-num-devices"] == "2"
    assert {q["metadata"]["name"] for q in loaded.objects if q["kind"] == "Queue"} == {
        "be",
        "burstable",
        "default",
        "ls",
    }


def test_the_replay_honours_gpu_models(tmp_path: Path) -> None:
    pods, nodes = _write(
        tmp_path,
        _pods(
            "p0,1000,1024,2,1000,V100M32,LS,Running,0,100,0",
            "p1,1000,1024,1,1000,T4,LS,Running,0,100,0",
            "p2,1000,1024,1,1000,A10,LS,Running,0,100,0",  # no A10 in this cluster
        ),
    )
    result = replay.Replay(trace.load(pods, nodes), load_config(None)).run()
    assert result.summary.never_scheduled == ["default/p2"]
    assert result.summary.completed == 2


def test_sample_keeps_order_and_is_seeded(tmp_path: Path) -> None:
    rows = [f"p{i},1000,1024,1,1000,,LS,Running,{i},{i + 10},{i}" for i in range(20)]
    pods, nodes = _write(tmp_path, _pods(*rows))
    names = [j.name for j in trace.load(pods, nodes, sample=5, seed=1).jobs]
    assert len(names) == 5 and names == sorted(names, key=lambda n: int(n[1:]))
    assert names == [j.name for j in trace.load(pods, nodes, sample=5, seed=1).jobs]
    assert len(trace.load(pods, nodes, sample=0.5).jobs) == 10


def test_sample_is_a_window_of_arrivals_so_the_arrival_rate_stays(tmp_path: Path) -> None:
    sparse = [f"s{i},1000,1024,1,1000,,LS,Running,{i * 86400},{i * 86400 + 60},{i * 86400}" for i in range(30)]
    dense = [f"d{i},1000,1024,1,1000,,LS,Running,{3e6 + i},{3e6 + i + 60},{3e6 + i}" for i in range(300)]
    pods, nodes = _write(tmp_path, _pods(*sparse, *dense))
    for seed in range(5):
        jobs = trace.load(pods, nodes, sample=100, seed=seed).jobs
        assert len(jobs) == 100
        assert max(j.submit_at for j in jobs) <= 100 * 86400 * 30 / 330 + 100  # not 30 days + 300 s
        numbers = [int(j.name[1:]) + (30 if j.name[0] == "d" else 0) for j in jobs]
        assert numbers == list(range(numbers[0], numbers[0] + 100))  # consecutive arrivals


def test_the_note_says_what_was_replayed_and_how_loaded_the_cluster_is(tmp_path: Path) -> None:
    pods, nodes = _write(
        tmp_path,
        _pods(
            "p0,1000,1024,1,1000,,LS,Running,0,7200,0",
            "p1,1000,1024,1,500,,LS,Running,3600,5400,3600",  # overlaps p0: 1.5 GPUs at once
            "p2,1000,1024,2,1000,,LS,Running,7200,9000,7200",  # starts as p0 ends: 2 at once
        ),
    )
    notes: list[str] = []
    trace.load(pods, nodes, time_scale=0.5, note=notes.append)
    assert notes == [
        "3 trace tasks arriving over 1h00m; at most 2 GPUs asked for at once, 20 % of the 10 GPUs of the nodes"
    ]
    trace.load(pods, nodes, sample=2, seed=0, note=notes.append)
    assert notes[-1].startswith("2 of 3 trace tasks arriving over ")


@pytest.mark.parametrize(
    "seconds, text", [(0, "0s"), (59.6, "1m00s"), (250, "4m10s"), (11190, "3h06m"), (37 * 86400 + 7300, "37d02h")]
)
def test_spans_read_as_days_hours_minutes(seconds: float, text: str) -> None:
    assert describe_duration(seconds) == text


@pytest.mark.parametrize(
    "pods, message",
    [
        pytest.param(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,0,0\n",
            "pods.csv:1: missing column 'creation_time'",
            id="missing column",
        ),
        pytest.param(
            _pods("p0,4000,8192,1,1000,,LS,Running,100,4x0,110"),
            "pods.csv:2:10: deletion_time: expected a number, got '4x0'",
            id="non-numeric",
        ),
        pytest.param(
            _pods("p0,4000,8192,1,1000,,LS,Running,0,10,0", "p1,1,1,0,0,,LS,Running,100,50,90"),
            "pods.csv:3:10: deletion_time: negative duration: 50 is before scheduled_time 90",
            id="negative",
        ),
        pytest.param(
            _pods("p0,-5,8192,1,1000,,LS,Running,0,10,0"),
            "pods.csv:2:2: cpu_milli: must not be negative",
            id="negative amount",
        ),
    ],
)
def test_bad_trace_files_are_one_line_errors(tmp_path: Path, pods: str, message: str) -> None:
    paths = _write(tmp_path, pods)
    with pytest.raises(trace.TraceError) as err:
        trace.load(*paths)
    assert str(err.value).endswith(message.split(": ", 1)[1]) or message in str(err.value)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_node_file(tmp_path: Path) -> None:
    paths = _write(tmp_path, _pods("p0,1,1,0,0,,LS,Running,0,10,0"), "sn,cpu_milli,memory_mib,gpu\nn,1,1,1\n")
    with pytest.raises(trace.TraceError, match=r"nodes\.csv:1: missing column 'model'"):
        trace.load(*paths)


@pytest.mark.skipif(not TRACES.is_dir(), reason=f"the shared trace is not at {TRACES}")
def test_the_real_trace_where_it_lies() -> None:
    with pytest.raises(trace.TraceError, match=r"openb_pod_list_multigpu50\.csv:1: missing column 'creation_time'"):
        trace.load(TRACES / "openb_pod_list_multigpu50.csv", TRACES / "openb_node_list_gpu_node.csv")
    loaded = trace.load(
        TRACES / "openb_pod_list_gpuspec33.csv",
        TRACES / "openb_node_list_all_node.csv",
        sample=40,
        seed=2,
        time_scale=0.001,
    )
    assert len(loaded.jobs) == 40
    assert sum(1 for o in loaded.objects if o["kind"] == "Node") == 1523
    result = replay.Replay(loaded, load_config(None)).run()
    assert result.summary.completed + len(result.summary.never_scheduled) == 40


@pytest.mark.skipif(not TRACES.is_dir(), reason=f"the shared trace is not at {TRACES}")
def test_a_sample_of_the_real_trace_spans_days_not_its_37_days_and_says_it_is_light() -> None:
    notes: list[str] = []
    loaded = trace.load(
        TRACES / "openb_pod_list_default.csv",
        TRACES / "openb_node_list_all_node.csv",
        sample=500,
        seed=0,
        note=notes.append,
    )
    assert len(loaded.jobs) == 500
    assert max(j.submit_at for j in loaded.jobs) < 7 * 86400
    assert "500 of 8152 trace tasks" in notes[0] and "lightly loaded" in notes[0]


def test_the_report_repeats_the_trace_line(tmp_path: Path) -> None:
    """The `trace:` line (how many tasks, over how long, how loaded) is in the HTML report too, so a near-flat
    allocation plot comes with its reason."""
    from kai_scheduler.cli import main

    pods, nodes = _write(tmp_path, _pods("p0,1000,1024,1,1000,,LS,Running,0,7200,0"))
    out = tmp_path / "report"
    args = ["simulate", "--trace", str(pods), "--nodes", str(nodes), "--no-progress", "--out", str(out)]
    assert main(args) == 0
    page = (out / "report.html").read_text()
    assert "<p class=note>trace: 1 trace tasks arriving over" in page
