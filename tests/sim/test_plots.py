"""The report's figures read as a person would read them: maps named by node and GPU index at the instants
the caption promises, legends without the scenario's name, the queue tree with its departments."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import plots, replay, report, sources
from tests.sim.helpers import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TREE = """
nodes:
- {name: gpu, count: 2, gpus: 4, gpuMemory: 81920, cpu: "64", memory: 512Gi}
queues:
- name: research
  resources: {gpu: {quota: 4, overQuotaWeight: 1, limit: -1}}
- name: product
  resources: {gpu: {quota: 4, overQuotaWeight: 1, limit: -1}}
- {name: vision, parent: research, resources: {gpu: {quota: 2, overQuotaWeight: 1, limit: -1}}}
- {name: nlp, parent: research, resources: {gpu: {quota: 2, overQuotaWeight: 1, limit: -1}}}
- {name: search, parent: product, resources: {gpu: {quota: 4, overQuotaWeight: 1, limit: -1}}}
jobs:
- {name: v, queue: vision, duration: 10m, replicas: 2, template: {gpus: 2}}
- {name: n, queue: nlp, submitAt: 1m, duration: 5m, replicas: 1, template: {gpus: 2}}
- {name: s, queue: search, submitAt: 2m, duration: 8m, replicas: 1, template: {gpus: 1}}
"""


@pytest.fixture(scope="module")
def quickstart() -> replay.Run:
    loaded = sources.load(EXAMPLES / "simulate-quickstart.yaml")
    return replay.Replay(loaded, load_config(loaded.config)).run()


def test_maps_are_at_the_quarters_of_the_horizon_and_at_peak(quickstart: replay.Run) -> None:
    horizon = quickstart.horizon
    assert horizon > 0
    by_reason = {m.what: m.time for m in quickstart.maps}
    assert by_reason.pop("1/4 of horizon") == 0.25 * horizon
    assert by_reason.pop("1/2 of horizon") == 0.5 * horizon
    assert by_reason.pop("3/4 of horizon") == 0.75 * horizon
    assert list(by_reason) == ["peak"]


def test_maps_are_labelled_with_node_names_and_gpu_indices(quickstart: replay.Run) -> None:
    fig = plots.occupancy(quickstart.maps)
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(axes) == len(quickstart.maps) == 4
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["gpu-node-0", "gpu-node-1"]
    for ax in axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(8)]
        assert ax.get_xlabel() == "GPU index"
    titles = [ax.get_title() for ax in axes]
    assert any("(peak" in t for t in titles) and any("1/2 of horizon" in t for t in titles)


def test_legends_of_one_run_do_not_repeat_the_scenario_name(quickstart: replay.Run) -> None:
    for fig in (plots.allocation([quickstart]), plots.waits([quickstart]), plots.fairness([quickstart])):
        for ax in fig.axes:
            legend = ax.get_legend()
            texts = [t.get_text() for t in legend.get_texts()] if legend else []
            assert not any(quickstart.name in t for t in texts), texts
    compared = replay.Run(**{**{f: getattr(quickstart, f) for f in quickstart.__dataclass_fields__}, "label": "b"})
    fig = plots.allocation([quickstart, compared])
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts[1].startswith("b: ") and not any(quickstart.name in t for t in texts[1:])


def test_the_queue_panels_show_departments_before_their_queues() -> None:
    run = simulate(TREE)
    fig = plots.queue_shares(run)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["product", "product › search", "research", "research › nlp", "research › vision"]
    table = report.render([run], ["tree"])
    rows = [name for name in ("research", "vision", "nlp", "product", "search") if f">{name}</span>" in table]
    assert len(rows) == 5
    assert table.index(">product</span>") < table.index(">search</span>") < table.index(">research</span>")
    assert 'padding-left:1.5em">vision' in table
    assert table.count("a department: no jobs of its own") == 2  # research and product: no "– / – / –"


def test_queue_tree_orders_depth_first() -> None:
    parents = {"b": "", "a": "", "a2": "a", "a1": "a", "a1x": "a1", "orphan": "gone"}
    assert plots.queue_tree(parents) == [("a", 0), ("a1", 1), ("a1x", 2), ("a2", 1), ("b", 0), ("orphan", 0)]


def test_waits_and_counts_have_no_axis_below_zero_and_all_zero_waits_say_so() -> None:
    no_wait = simulate(
        "name: idle\nnodes:\n- {name: n, gpus: 8}\nqueues:\n- {name: a}\njobs:\n"
        "- {name: j, queue: a, duration: 60s, template: {gpus: 1}}\n"
    )
    fig = plots.waits([no_wait])
    ax = fig.axes[0]
    assert ax.get_xlim()[0] > -0.1 and ax.get_xlim()[1] > 0
    assert any("without waiting" in t.get_text() for t in ax.texts)
    bottom = plots.allocation([no_wait]).axes[1]
    assert bottom.get_ylim() == (0, 1)  # pending jobs and stranded GPUs, all 0: whole counts, none below 0


def test_waits_axis_starts_at_zero_and_keeps_the_longest_wait(quickstart: replay.Run) -> None:
    ax = plots.waits([quickstart]).axes[0]
    longest = max(j.started - j.submitted for j in quickstart.jobs if j.started is not None and j.submitted is not None)
    assert longest > 120  # the quickstart's longest wait is over two minutes: the axis reads in minutes
    assert ax.get_xlabel() == "wait from submission to all pods running (minutes)"
    low, high = ax.get_xlim()
    assert -0.05 * longest / 60 <= low <= 0 and high >= longest / 60
    assert not ax.texts


def test_a_map_whose_nodes_differ_from_its_rows_first_names_its_own_and_white_is_explained() -> None:
    loaded = sources.load(EXAMPLES / "simulate-autoscaler.yaml")
    run = replay.Replay(loaded, load_config(loaded.config)).run()
    assert len({tuple(m.nodes) for m in run.maps}) > 1  # the autoscaler model added and removed a node
    fig = plots.occupancy(run.maps)
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    for ax, m in zip(axes, run.maps, strict=True):
        assert [t.get_text() for t in ax.get_yticklabels()] in (list(m.nodes), []), ax.get_title()
        if tuple(m.nodes) != tuple(run.maps[0].nodes):
            assert [t.get_text() for t in ax.get_yticklabels()] == list(m.nodes)
    assert "white: the node has no GPU at that index" in report._occupancy_caption(run)
