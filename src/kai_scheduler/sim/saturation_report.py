"""The saturation experiment's report: one self-contained HTML file with the curves of every run on one chart,
and the points as JSON and CSV (`saturation.json`, `saturation.csv`, one row per run and point)."""

from __future__ import annotations

import base64
import csv
import html
import math
from collections.abc import Sequence
from pathlib import Path

import orjson
from matplotlib.figure import Figure

from kai_scheduler.sim import plots
from kai_scheduler.sim.saturate import FULL, SaturationRun

LEVELS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3)
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;
padding:0 1em}
.scroll{overflow-x:auto}
h1{font-size:1.5em} table{border-collapse:collapse;margin:.6em 0}
td,th{padding:.25em .8em;border-bottom:1px solid #eee;text-align:right} th:first-child,td:first-child{text-align:left}
.note{color:#666;font-size:.9em} img{max-width:100%} figure{margin:0}
"""


def write(runs: Sequence[SaturationRun], out: Path) -> Path:
    """Write report.html, saturation.json and saturation.csv into `out` (created); return the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    labels = [_label(r, i) for i, r in enumerate(runs)]
    data = {label: r.to_json() for label, r in zip(labels, runs, strict=True)}
    (out / "saturation.json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    with open(out / "saturation.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["run", "tasks", "failed", "arrived", "allocated_gpu_ratio", "unallocated_gpu_ratio", "fragmentation_ratio"]
        )
        for label, r in zip(labels, runs, strict=True):
            writer.writerows(
                [
                    label,
                    p.tasks,
                    p.failed,
                    f"{p.arrived:.6f}",
                    f"{p.allocated:.6f}",
                    f"{p.unallocated:.6f}",
                    f"{p.fragmentation:.6f}",
                ]
                for p in r.points
            )
    path = out / "report.html"
    path.write_text(render(runs, labels), encoding="utf-8")
    return path


def _label(run: SaturationRun, index: int) -> str:
    return run.label or (run.name if index == 0 else f"run {index + 1}")


def render(runs: Sequence[SaturationRun], labels: Sequence[str]) -> str:
    title = html.escape(runs[0].name if runs else "saturation")
    image = base64.b64encode(plots.png(figure(runs, labels))).decode()
    head = ["", *labels]
    rows = [
        ["tasks arrived (withdrawn unplaced)", *(f"{r.points[-1].tasks} ({r.points[-1].failed})" for r in runs)],
        ["cluster GPUs", *(f"{r.total_gpus:g}" for r in runs)],
        ["cycles; wall time", *(f"{r.cycles}; {r.wall_seconds:.1f} s" for r in runs)],
    ]
    rows += [[f"unallocated GPUs at demand {level:g}", *(_percent(r.at(level)) for r in runs)] for level in LEVELS]
    rows.append(
        ["fragmentation at demand 1", *(_percent(r.at(FULL, [p.fragmentation for p in r.points])) for r in runs)]
    )
    table = (
        "<div class=scroll><table><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        + "</table></div>"
    )
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>kai simulate: {title}</title>"
        f"<style>{_CSS}</style></head><body><h1>kai simulate: {title}</h1>"
        "<p class=note>Tasks drawn from the trace arrive one after the other and never leave; a task the "
        "scheduler cannot place on arrival is withdrawn. Shares are of the cluster's GPUs.</p>"
        f"{table}<h2>Unallocated GPUs and fragmentation as demand arrives</h2><figure>"
        f"<img alt='unallocated GPU share and fragmentation against arrived demand' "
        f"src='data:image/png;base64,{image}'><figcaption class=note>Left: the share of GPUs not allocated "
        "(the dotted line is what a perfect packing leaves: 100 % − arrived, down to 0). Right: the expected "
        "fragmentation, the free GPU capacity the workload's tasks (weighed by how common each shape is) "
        "could not use.</figcaption></figure></body></html>"
    )


def figure(runs: Sequence[SaturationRun], labels: Sequence[str]) -> Figure:
    fig = Figure(figsize=(11, 4.4))
    left, right = fig.subplots(1, 2)
    top = max((r.points[-1].arrived for r in runs if r.points), default=1.0)
    # What a perfect packing leaves, in the runs' unit (% of the cluster's GPUs): 100 − arrived, down to 0.
    left.plot([0, 100, 100 * max(top, 1)], [100, 0, 0], ":", color="#999", label="perfect packing")
    for i, (label, r) in enumerate(zip(labels, runs, strict=True)):
        xs = [100 * p.arrived for p in r.points]
        color = plots.COLORS[i % len(plots.COLORS)]
        left.plot(xs, [100 * p.unallocated for p in r.points], color=color, label=label)
        right.plot(xs, [100 * p.fragmentation for p in r.points], color=color, label=label)
    for ax, what in ((left, "unallocated GPUs"), (right, "expected fragmentation")):
        ax.set_xlabel("demand arrived (% of cluster GPUs)")
        ax.set_ylabel(f"{what} (% of cluster GPUs)")
        ax.grid(alpha=0.3)
    left.legend(loc="upper right", fontsize="small")
    right.legend(loc="lower right", fontsize="small")  # fragmentation grows with demand: the lower right is free
    left.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    fig.tight_layout()
    return fig


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.2f} %"
