"""Write a replay's results: one self-contained HTML report, and the raw series for notebooks.

`write(runs, out)` creates in directory `out`:
- `report.html`: the summary figures and tables, and the plots as embedded PNG images (no external file,
  script or font: it opens from a mail attachment). With two runs (`--compare`) the tables put them side by
  side and the time plots overlay them.
- `summary.json`: every figure of every run (`Summary.details`), keyed by run label.
- `series.json` and `series.csv` (with several runs: `series-<label>.*`): the step-function time series.
"""

from __future__ import annotations

import base64
import csv
import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from kai_scheduler.api.duration import describe_duration
from kai_scheduler.sim import plots
from kai_scheduler.sim.replay import Run

PLOTS = ("allocation", "queue-shares", "wait-times", "occupancy", "fairness")
MAX_LISTED = 25

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;
padding:0 1em}
.scroll{overflow-x:auto}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0} td,th{padding:.25em .8em;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left} .note{color:#666;font-size:.9em} img{max-width:100%}
figure{margin:0}
.bad{color:#b00020} .pair{display:flex;gap:1em;flex-wrap:wrap} .pair>div{flex:1 1 480px}
"""


def label_of(run: Run, index: int) -> str:
    return run.label or (run.name if index == 0 else f"run {index + 1}")


def write(runs: Sequence[Run], out: Path, notes: Sequence[str] = ()) -> Path:
    """Write the report and data files into `out` (created if needed); return the report's path. `notes`: what the
    command said about its input on standard error (the trace replay's `trace:` line), repeated under the title."""
    out.mkdir(parents=True, exist_ok=True)
    labels = [label_of(r, i) for i, r in enumerate(runs)]
    summary = {label: run.summary.details() for label, run in zip(labels, runs, strict=True)}
    (out / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))  # NaN → null
    for label, run in zip(labels, runs, strict=True):
        stem = "series" if len(runs) == 1 else f"series-{_slug(label)}"
        (out / f"{stem}.json").write_bytes(orjson.dumps(run.series.to_json()))
        header, rows = run.series.rows()
        with open(out / f"{stem}.csv", "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows([_cell(v) for v in row] for row in rows)
    path = out / "report.html"
    path.write_text(render(runs, labels, notes), encoding="utf-8")
    return path


def _cell(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.9g}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "run"


def render(runs: Sequence[Run], labels: Sequence[str], notes: Sequence[str] = ()) -> str:
    """The report as one HTML document."""
    from kai_scheduler.sim import plots  # matplotlib: the optional `sim` extra, loaded only for a report

    title = runs[0].name if runs else "simulation"
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>kai simulate: {_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>kai simulate: {_e(title)}</h1>",
        f"<p class=note>{len(runs)} run(s): {_e(', '.join(labels))}. Times are virtual time from the "
        "start of the replay; GPUs are devices (a shared pod counts its portion).</p>",
        *(f"<p class=note>{_e(note)}</p>" for note in notes),
        "<h2>Summary</h2>",
        _summary_table(runs, labels),
        "<h2>Queues</h2>",
        _queue_table(runs, labels),
    ]
    parts += _evictions(runs, labels)
    parts += _never_scheduled(runs, labels)
    parts += _unfinished(runs, labels)
    several = len(runs) > 1
    parts.append(
        _figure(
            "allocation",
            "Cluster allocation over time",
            [("", plots.png(plots.allocation(runs)))],
            "GPU allocation ratio; below: pending jobs and idle GPUs no pending task can use",
        )
    )
    per_run = list(zip([label if several else "" for label in labels], runs, strict=True))
    parts.append(
        _figure(
            "queue-shares",
            "Per-queue share vs fair share",
            [(label, plots.png(plots.queue_shares(run))) for label, run in per_run],
            "GPUs per queue, departments first and then their queues (a department's figures are "
            "its whole subtree's): allocated, fair share from the scheduler's cycles, deserved "
            "(quota)",
        )
    )
    parts.append(
        _figure(
            "wait-times",
            "Wait-time distributions",
            [("", plots.png(plots.waits(runs)))],
            "share of jobs whose pods all ran within a given wait",
        )
    )
    parts.append(
        _figure(
            "occupancy",
            "Node × GPU occupancy",
            [(label, plots.png(plots.occupancy(run.maps))) for label, run in per_run],
            _occupancy_caption(runs[0]) if runs else "",
            stacked=True,
        )
    )
    parts.append(
        _figure(
            "fairness",
            "Fairness over time",
            [("", plots.png(plots.fairness(runs)))],
            "Jain's index of allocated / fair share over the leaf queues that have a fair share",
        )
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _figure(
    anchor: str, title: str, images: Sequence[tuple[str, bytes]], caption: str, *, stacked: bool = False
) -> str:
    """A titled figure: one image, or one per run (each under its run's label) side by side or `stacked`."""
    body = "".join(
        f"<div>{f'<p>{_e(label)}</p>' if label else ''}{_img(png, f'{title}: {label}' if label else title)}</div>"
        for label, png in images
    )
    return (
        f"<figure id={anchor}><h2>{_e(title)}</h2><div{'' if stacked else ' class=pair'}>{body}</div>"
        f"<figcaption class=note>{_e(caption)}</figcaption></figure>"
    )


def _occupancy_caption(run: Run) -> str:
    """What the maps show, from the reasons the replay gave them."""
    asked = any(m.what.startswith("asked") for m in run.maps)
    when = (
        "at the asked instants"
        if asked
        else "at a quarter, half and three quarters of the horizon "
        f"({describe_duration(run.horizon)}: --until, or when the last job would end if none waited)"
    )
    return (
        f"Each GPU of each node {when}, and at peak allocation; a cell is the share of the device in use "
        "(a shared GPU shows the part its pods hold); white: the node has no GPU at that index. Instants past "
        "the end of the replay are not shown."
    )


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode()
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _e(text: object) -> str:
    return html.escape(str(text))


def _fmt(value: Any, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:,.4g}{unit}" if abs(value) < 1e5 else f"{value:,.0f}{unit}"
    return f"{value}{unit}"


def gpus(value: Any) -> str:
    """GPUs with two decimals, so a column's figures line up ("10.10", "2.57", "8.00"); also the terminal's."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):,.2f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    heads = "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>" if any(head) else ""  # no blank row
    out = ["<div class=scroll><table>" + heads]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows]
    return "".join(out) + "</table></div>"  # a table wider than a phone scrolls by itself, not the page


def summary_rows(run: Run) -> list[tuple[str, str]]:
    """The headline figures of a run as (name, value) text pairs (also the terminal table's rows)."""
    d = run.summary.details()
    jobs, wait, done, gang = d["jobs"], d["wait_seconds"], d["completion_seconds"], d["gang_wait_seconds"]
    cycle = d["cycle_seconds"]
    scaled = _autoscaled_rows(run)
    return [*scaled, *_headline(d, jobs, wait, done, gang, cycle)]


def _autoscaled_rows(run: Run) -> list[tuple[str, str]]:
    """With the scenario's autoscaler model: the nodes it added and removed, and when."""
    if not run.autoscaled:
        return []
    added = [c for c in run.autoscaled if c.what == "added"]
    removed = [c for c in run.autoscaled if c.what == "removed"]
    first = describe_duration(added[0].time) if added else "–"
    return [
        ("nodes added / removed (autoscaler model)", f"{len(added)} / {len(removed)}"),
        ("first node added at", first),
        (
            "GPUs at the start / peak",
            f"{_fmt(run.series.cluster['total_gpus'][0])} / {_fmt(max(run.series.cluster['total_gpus']))}",
        ),
    ]


def _headline(d: dict[str, Any], jobs: Any, wait: Any, done: Any, gang: Any, cycle: Any) -> list[tuple[str, str]]:
    return [
        ("makespan", describe_duration(d["makespan_seconds"])),
        ("GPU allocation (time-weighted)", _fmt(100 * d["gpu_allocation_ratio"], " %")),
        ("idle GPUs no pending task fits (mean)", _fmt(d["idle_unusable_gpus_mean"])),
        ("fairness, Jain (mean)", _fmt(d["fairness_mean"])),
        ("jobs submitted / completed", f"{jobs['submitted']} / {jobs['completed']}"),
        ("jobs never scheduled", str(jobs["never_scheduled"])),
        ("jobs unfinished at the end", str(jobs["unfinished"])),
        ("wait p50 / p90 / p99", _waits(wait, "no job started")),
        ("completion p50 / p90 / p99", _waits(done, "no job completed")),
        ("gang wait p50 / p90 / p99", _waits(gang, "no gang job started")),
        ("evictions", ", ".join(f"{k} {v}" for k, v in d["evictions"].items()) or "0"),
        ("interrupted runs", str(d["interruptions"])),
        ("scheduler cycles", str(d["cycles"])),
        ("cycle time mean / p99 / max", " / ".join(_fmt(1000 * cycle[k], " ms") for k in ("mean", "p99", "max"))),
        ("replay wall time", describe_duration(d["wall_seconds"])),
    ]


def _waits(figures: dict[str, Any], none: str) -> str:
    """p50 / p90 / p99 as durations; when there is nothing to measure, `none` in words rather than "– / – / –"."""
    values = [figures.get(k) for k in ("p50", "p90", "p99")]
    if all(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        return none
    return " / ".join(describe_duration(v) for v in values)


def _summary_table(runs: Sequence[Run], labels: Sequence[str]) -> str:
    columns = [summary_rows(r) for r in runs]
    rows = [[_e(name), *(_e(col[i][1]) for col in columns)] for i, (name, _) in enumerate(columns[0])]
    return _table(["", *_heads(labels)], rows)


def _heads(labels: Sequence[str]) -> list[str]:
    """Column heads for the runs: their labels with several, none for one (the title names it already)."""
    return list(labels) if len(labels) > 1 else ["" for _ in labels]


def _queue_table(runs: Sequence[Run], labels: Sequence[str]) -> str:
    head = ["queue"]
    for label in labels:  # one run: the columns need no run label (the title names the scenario)
        head += [f"{label}: allocated" if len(runs) > 1 else "allocated", "fair share", "deserved"]
        head += ["wait p50 / p90 / p99"]
    present = {q for r in runs for q in r.summary.queues}
    tree = plots.queue_tree({**{q: "" for q in present}, **(runs[0].parents if runs else {})})
    departments = set(runs[0].parents.values()) if runs else set()
    rows = []
    for name, depth in [(n, d) for n, d in tree if n in present]:
        row = [f'<span style="white-space:nowrap;padding-left:{1.5 * depth}em">{_e(name)}</span>']
        for run in runs:
            q = run.summary.queues.get(name, {})
            wait = q.get("wait_seconds", {})
            deserved = q.get("deserved_gpus")
            row += [
                gpus(q.get("allocated_gpus")),
                gpus(q.get("fair_share_gpus")),
                "unlimited" if deserved is not None and deserved < 0 else gpus(deserved),
                "<span style=white-space:nowrap>"
                + _waits(wait, "a department: no jobs of its own" if name in departments else "no job started")
                + "</span>",
            ]
        rows.append(row)
    note = "<p class=note>GPUs, time-weighted means over the replay.</p>"
    return _table(head, rows) + note


def _evictions(runs: Sequence[Run], labels: Sequence[str]) -> list[str]:
    actions = sorted({a for r in runs for a in r.summary.evictions})
    if not actions:
        return []
    rows = [[_e(a), *(str(r.summary.evictions.get(a, 0)) for r in runs)] for a in actions]
    return [
        "<h2>Evictions by action</h2>",
        _table(["action", *(_heads(labels) if len(runs) > 1 else ["evictions"])], rows),
    ]


def unfinished_line(run: Run) -> str:
    """What was left when the replay ended, in words ("" when nothing was)."""
    states = list(run.summary.unfinished.values())
    if not states:
        return ""
    running = states.count("running")
    counts = f"{running} running, {len(states) - running} waiting"
    if run.summary.stopped_at is not None:
        return (
            f"{len(states)} job(s) unfinished when the replay stopped at {describe_duration(run.summary.stopped_at)} "
            f"({counts}): a longer --until lets them run"
        )
    return f"{len(states)} job(s) unfinished at the end ({counts}): no duration, or interrupted for good"


def _unfinished(runs: Sequence[Run], labels: Sequence[str]) -> list[str]:
    lines = [(label, unfinished_line(run)) for label, run in zip(labels, runs, strict=True)]
    return [f"<p class=note>{_e(label)}: {_e(line)}</p>" for label, line in lines if line]


def _never_scheduled(runs: Sequence[Run], labels: Sequence[str]) -> list[str]:
    out: list[str] = []
    for label, run in zip(labels, runs, strict=True):
        never = run.summary.never_scheduled
        if not never:
            continue
        out.append(f"<h2 class=bad>{_e(label)}: {len(never)} job(s) never scheduled</h2><ul>")
        for key in never[:MAX_LISTED]:
            reason = run.summary.reasons.get(key, "")
            out.append(f"<li>{_e(key)}{': ' + _e(reason) if reason else ''}</li>")
        if len(never) > MAX_LISTED:
            out.append(f"<li>… and {len(never) - MAX_LISTED} more (summary.json lists them all)</li>")
        out.append("</ul>")
    return out
