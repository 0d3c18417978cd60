"""The report's figures, drawn with matplotlib's object API (no pyplot: no global state, no display needed).

Each function takes finished runs and returns a matplotlib Figure (`png` makes the bytes the report embeds).
Series are step functions (`where="post"`). Time axes switch unit with the span (seconds, minutes, hours,
days) so a 270 s burst and a 150-day trace both read. Legends name the run only when there are several
(`--compare`), by its short label.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from kai_scheduler.api.duration import describe_duration
from kai_scheduler.sim import occupancy as occupancy_maps
from kai_scheduler.sim.replay import Run

COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#393b79",
    "#637939",
)
MAX_QUEUES = 12
MAPS_PER_ROW = 4
MAX_TICK_LABELS = 40  # node names on a map axis; past that every k-th
_UNITS = (
    (86400.0 * 2, 86400.0, "days"),
    (3600.0 * 2, 3600.0, "hours"),
    (120.0, 60.0, "minutes"),
    (0.0, 1.0, "seconds"),
)


def _unit(runs: Sequence[Run]) -> tuple[float, str]:
    span = max((r.summary.end for r in runs), default=0.0)
    return next((size, name) for above, size, name in _UNITS if span >= above)


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes (what the report embeds)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return buf.getvalue()


def _steps(ax: Axes, run: Run, values: Sequence[float], scale: float, **style: object) -> None:
    t = np.asarray(run.series.time, dtype=float) / scale
    v = np.asarray(values, dtype=float)
    if t.size == 0:
        return
    end = run.summary.end / scale
    ax.step(np.append(t, max(end, t[-1])), np.append(v, v[-1]), where="post", **style)  # type: ignore[arg-type]


def _legend(runs: Sequence[Run], run: Run, text: str) -> str:
    """A legend entry: `text`, after the run's short label when several runs share the plot."""
    return text if len(runs) == 1 else f"{run.label or run.name}: {text}"


def allocation(runs: Sequence[Run]) -> Figure:
    """GPU allocation ratio over time; below it, pending jobs and idle GPUs the pending work cannot use (and the
    cluster's GPUs, when the autoscaler model changed them)."""
    scale, unit = _unit(runs)
    fig = Figure(figsize=(10, 5.2))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        ratio = [100.0 * v for v in run.series.cluster["allocation_ratio"]]
        _steps(
            top,
            run,
            ratio,
            scale,
            color=color,
            label=_legend(runs, run, f"allocated ({100 * run.summary.allocation_ratio:.1f} % mean)"),
        )
        _steps(
            bottom,
            run,
            run.series.cluster["pending_jobs"],
            scale,
            color=color,
            label=_legend(runs, run, "pending jobs"),
        )
        _steps(
            bottom,
            run,
            run.series.cluster["idle_unusable_gpus"],
            scale,
            color=color,
            linestyle="--",
            label=_legend(runs, run, "idle GPUs no pending task fits"),
        )
        if run.autoscaled:  # the autoscaler model changed the capacity: show it
            _steps(
                bottom,
                run,
                run.series.cluster["total_gpus"],
                scale,
                color=color,
                linestyle=":",
                label=_legend(runs, run, "GPUs in the cluster (autoscaler model)"),
            )
    top.set_ylabel("GPUs allocated (%)")
    top.set_ylim(0, 105)
    # Legends beside the plots, not over them: any corner of the axes covered some replay's curve.
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, fontsize="small")
    top.grid(alpha=0.3)
    bottom.set_ylabel("count")
    # Counts: from 0, and at least up to 1 (an all-zero series would get an axis of -0.05..0.05, or 0..0.05).
    bottom.set_ylim(0, max(1.0, bottom.get_ylim()[1]))
    bottom.set_xlabel(f"virtual time ({unit})")
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, fontsize="small")
    bottom.grid(alpha=0.3)
    return fig


def queue_shares(run: Run) -> Figure:
    """Per queue with work, departments before their queues (tree order): allocated GPUs (solid) against fair
    share (dashed) and deserved (dotted); a department's figures are its whole subtree's."""
    scale, unit = _unit([run])
    queues = _busiest(run)
    paths = queue_paths(run.parents)
    cols = min(3, max(1, len(queues)))
    rows = max(1, -(-len(queues) // cols))
    fig = Figure(figsize=(10, 2.6 * rows))
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=True, squeeze=False)).ravel()
    for ax, name in zip(axes, queues, strict=False):
        cols_ = run.series.queues[name]
        _steps(ax, run, cols_["allocated"], scale, color=COLORS[0], label="allocated")
        _steps(ax, run, cols_["fair_share"], scale, color=COLORS[1], linestyle="--", label="fair share")
        deserved = [v if v >= 0 else np.nan for v in cols_["deserved"]]
        _steps(ax, run, deserved, scale, color=COLORS[2], linestyle=":", label="deserved")
        ax.set_title(paths.get(name, name), fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes[len(queues) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize="small")
    for ax in axes[(rows - 1) * cols :]:
        ax.set_xlabel(f"virtual time ({unit})")
    fig.supylabel("GPUs")
    return fig


def _busiest(run: Run) -> list[str]:
    """Queues (departments too) that held GPUs or had a fair share, in tree order; past MAX_QUEUES, the most
    allocated ones."""
    scored = {}
    for name, cols in run.series.queues.items():
        weight = max(max(cols["allocated"], default=0.0), max(cols["fair_share"], default=0.0))
        if weight > 0:
            scored[name] = float(np.mean(cols["allocated"]))
    shown = set(sorted(scored, key=lambda q: (-scored[q], q))[:MAX_QUEUES])
    order = [name for name, _ in queue_tree(run.parents) if name in shown]
    return order or sorted(run.series.queues)[:1]


def queue_tree(parents: dict[str, str]) -> list[tuple[str, int]]:
    """The queues depth first (top queues, each followed by its children, by name) with their depth."""
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        children.setdefault(parent if parent in parents else "", []).append(name)
    out: list[tuple[str, int]] = []
    seen: set[str] = set()

    def walk(parent: str, depth: int) -> None:
        for name in sorted(children.get(parent, ())):
            if name not in seen:
                seen.add(name)
                out.append((name, depth))
                walk(name, depth + 1)

    walk("", 0)
    return out + [(name, 0) for name in sorted(parents) if name not in seen]


def queue_paths(parents: dict[str, str]) -> dict[str, str]:
    """Each queue as its path from the top: "research › vision"."""
    out = {}
    for name in parents:
        path, current, seen = [name], parents.get(name, ""), {name}
        while current and current in parents and current not in seen:
            seen.add(current)
            path.append(current)
            current = parents[current]
        out[name] = " › ".join(reversed(path))
    return out


def waits(runs: Sequence[Run]) -> Figure:
    """The share of jobs that started within a given wait: overall per run, and per queue (thin lines). The wait
    axis is in the unit its longest wait reads in (seconds, minutes, hours, days), as the time axes are."""
    fig = Figure(figsize=(10, 4))
    ax = fig.subplots()

    def waited(run: Run, queue: str | None = None) -> list[float]:
        return [
            j.started - j.submitted
            for j in run.jobs
            if j.started is not None and j.submitted is not None and (queue is None or j.meta.queue == queue)
        ]

    overall = [waited(run) for run in runs]
    longest = max((w for ws in overall for w in ws), default=0.0)
    scale, unit = next((size, name) for above, size, name in _UNITS if longest >= above)
    for i, (run, ws) in enumerate(zip(runs, overall, strict=True)):
        _ecdf(
            ax,
            [w / scale for w in ws],
            color=COLORS[i % len(COLORS)],
            linewidth=2.2,
            label=_legend(runs, run, "all jobs"),
        )
        if len(runs) == 1:
            for k, queue in enumerate(sorted({j.meta.queue for j in run.jobs})):
                scaled = [w / scale for w in waited(run, queue)]
                _ecdf(ax, scaled, color=COLORS[(k + 1) % len(COLORS)], linewidth=1, label=queue)
    ax.set_xlabel(f"wait from submission to all pods running ({unit})")
    ax.set_ylabel("share of started jobs")
    ax.set_ylim(0, 1.02)
    span = longest / scale if longest > 0 else 1.0
    ax.set_xlim(-0.02 * span, 1.05 * span)  # waits are never negative: no axis below 0 (a sliver shows the step)
    started = sum(len(ws) for ws in overall)
    empty = "no job started" if not started else "every job started without waiting (all waits 0 s)"
    if not started or longest <= 0:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def _ecdf(ax: Axes, values: list[float], **style: object) -> None:
    if not values:
        return
    x = np.sort(np.asarray(values, dtype=float))
    y = np.arange(1, x.size + 1) / x.size
    ax.step(np.insert(x, 0, 0.0), np.insert(y, 0, 0.0), where="post", **style)  # type: ignore[arg-type]


def occupancy(maps: Sequence[occupancy_maps.OccupancyMap]) -> Figure:
    """Node × GPU use at each instant: a panel per instant, a row per node (named), a column per GPU index."""
    shown = list(maps)
    count = max(1, len(shown))
    cols = min(MAPS_PER_ROW, count)
    rows = -(-count // cols)
    nodes = len(shown[0].nodes) if shown else 0
    height = min(6.0, 1.3 + 0.22 * max(nodes, 2))
    fig = Figure(figsize=(10, 0.4 + height * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    image = None
    for k, (ax, m) in enumerate(zip(axes, shown, strict=False)):
        image = ax.imshow(
            np.ma.masked_invalid(m.cells), aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1
        )
        used = float(np.nansum(m.cells))
        total = float(np.sum(~np.isnan(m.cells)))
        why = f" ({m.what})" if m.what and m.what != "asked" else ""
        ax.set_title(f"t = {describe_duration(m.time)}{why}\n{used:.4g} of {total:g} GPUs in use", fontsize="small")
        _ticks(ax.set_xticks, ax.set_xticklabels, [str(i) for i in range(m.cells.shape[1])], 16)
        ax.set_xlabel("GPU index", fontsize="small")
        first = shown[k - k % cols]  # the row's first panel, which names its nodes
        if k % cols == 0 or tuple(m.nodes) != tuple(first.nodes):  # other nodes (the autoscaler's): its own names
            _ticks(ax.set_yticks, ax.set_yticklabels, list(m.nodes), MAX_TICK_LABELS)
            if k % cols == 0:
                ax.set_ylabel("node")
        else:
            ax.set_yticks([])
    for ax in axes[len(shown) :]:
        ax.set_visible(False)
    if not shown:
        axes[0].set_visible(True)
        axes[0].text(0.5, 0.5, "no instant captured", ha="center", va="center")
        axes[0].set_axis_off()
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="share in use", fraction=0.03)
    return fig


def _ticks(set_ticks: Callable[..., object], set_labels: Callable[..., object], labels: list[str], most: int) -> None:
    """One tick per cell, labelled; with more cells than `most`, every k-th."""
    step = max(1, -(-len(labels) // most))
    positions = list(range(0, len(labels), step))
    set_ticks(positions)
    set_labels([labels[i] for i in positions], fontsize="x-small" if len(labels) > 8 else "small")


def fairness(runs: Sequence[Run]) -> Figure:
    """Jain's index over time (1 = every queue at the same fraction of its fair share)."""
    scale, unit = _unit(runs)
    fig = Figure(figsize=(10, 2.8))
    ax = fig.subplots()
    for i, run in enumerate(runs):
        _steps(
            ax, run, run.series.cluster["fairness"], scale, color=COLORS[i % len(COLORS)], label=run.label or run.name
        )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Jain index")
    ax.set_xlabel(f"virtual time ({unit})")
    ax.grid(alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize="small", loc="lower right")
    return fig
