"""The report's figures, drawn with matplotlib's object API (no pyplot: no global state, no display needed).

Each function takes finished runs and returns PNG bytes. Series are step functions (`where="post"`). Time
axes switch unit with the span (seconds, minutes, hours, days) so a 270 s burst and a 150-day trace both read.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from kai_scheduler.sim import occupancy as occupancy_maps
from kai_scheduler.sim.replay import Run

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
          "#7f7f7f", "#393b79", "#637939")
MAX_QUEUES = 12
_UNITS = ((86400.0 * 2, 86400.0, "days"), (3600.0 * 2, 3600.0, "hours"), (120.0, 60.0, "minutes"),
          (0.0, 1.0, "seconds"))


def _unit(runs: Sequence[Run]) -> tuple[float, str]:
    span = max((r.summary.end for r in runs), default=0.0)
    return next((size, name) for above, size, name in _UNITS if span >= above)


def _png(fig: Figure) -> bytes:
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


def allocation(runs: Sequence[Run]) -> bytes:
    """GPU allocation ratio over time; below it, pending jobs and idle GPUs the pending work cannot use."""
    scale, unit = _unit(runs)
    fig = Figure(figsize=(10, 5.2))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        label = run.label or run.name
        ratio = [100.0 * v for v in run.series.cluster["allocation_ratio"]]
        _steps(top, run, ratio, scale, color=color, label=f"{label} ({100 * run.summary.allocation_ratio:.1f} % mean)")
        _steps(bottom, run, run.series.cluster["pending_jobs"], scale, color=color, label=f"{label}: pending jobs")
        _steps(bottom, run, run.series.cluster["idle_unusable_gpus"], scale, color=color, linestyle="--",
               label=f"{label}: idle GPUs no pending task fits")
    top.set_ylabel("GPUs allocated (%)")
    top.set_ylim(0, 105)
    top.legend(loc="lower right", fontsize="small")
    top.grid(alpha=0.3)
    bottom.set_ylabel("count")
    bottom.set_xlabel(f"virtual time ({unit})")
    bottom.legend(loc="upper right", fontsize="small")
    bottom.grid(alpha=0.3)
    return _png(fig)


def queue_shares(run: Run) -> bytes:
    """Per leaf queue with work: allocated GPUs (solid) against fair share (dashed) and deserved (dotted)."""
    scale, unit = _unit([run])
    queues = _busiest(run)
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
        ax.set_title(name, fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes[len(queues):]:
        ax.set_visible(False)
    axes[0].legend(fontsize="small")
    for ax in axes[(rows - 1) * cols:]:
        ax.set_xlabel(f"virtual time ({unit})")
    fig.supylabel("GPUs")
    return _png(fig)


def _busiest(run: Run) -> list[str]:
    """Leaf queues that held GPUs or had a fair share, most allocated first, at most MAX_QUEUES."""
    parents = {p for p in run.parents.values() if p}
    scored = []
    for name, cols in run.series.queues.items():
        if name in parents:
            continue
        weight = max(max(cols["allocated"], default=0.0), max(cols["fair_share"], default=0.0))
        if weight > 0:
            scored.append((-float(np.mean(cols["allocated"])), name))
    return [name for _, name in sorted(scored)[:MAX_QUEUES]] or sorted(run.series.queues)[:1]


def waits(runs: Sequence[Run]) -> bytes:
    """The share of jobs that started within a given wait: overall per run, and per queue (thin lines)."""
    fig = Figure(figsize=(10, 4))
    ax = fig.subplots()
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        label = run.label or run.name
        _ecdf(ax, [j.started - j.submitted for j in run.jobs if j.started is not None and j.submitted is not None],
              color=color, linewidth=2.2, label=f"{label}: all jobs")
        if len(runs) == 1:
            for k, queue in enumerate(sorted({j.meta.queue for j in run.jobs})):
                waited = [j.started - j.submitted for j in run.jobs
                          if j.meta.queue == queue and j.started is not None and j.submitted is not None]
                _ecdf(ax, waited, color=COLORS[(k + 1) % len(COLORS)], linewidth=1, label=queue)
    ax.set_xlabel("wait from submission to all pods running (s)")
    ax.set_ylabel("share of started jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return _png(fig)


def _ecdf(ax: Axes, values: list[float], **style: object) -> None:
    if not values:
        return
    x = np.sort(np.asarray(values, dtype=float))
    y = np.arange(1, x.size + 1) / x.size
    ax.step(np.insert(x, 0, 0.0), np.insert(y, 0, 0.0), where="post", **style)  # type: ignore[arg-type]


def occupancy(maps: Sequence[occupancy_maps.OccupancyMap]) -> bytes:
    """Node × GPU use at each captured instant: one row of cells per instant, a column per node."""
    shown = list(maps) or []
    fig = Figure(figsize=(10, 1.2 + 1.6 * max(1, len(shown))), layout="constrained")
    axes = np.atleast_1d(fig.subplots(max(1, len(shown)), 1, squeeze=False)).ravel()
    image = None
    for ax, m in zip(axes, shown, strict=False):
        cells = np.ma.masked_invalid(m.cells.T)
        image = ax.imshow(cells, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1)
        used = float(np.nansum(m.cells))
        total = float(np.sum(~np.isnan(m.cells)))
        ax.set_title(f"t = {m.time:g} s: {used:g} of {total:g} GPUs in use", fontsize="medium")
        ax.set_ylabel("GPU")
        ax.set_yticks([])
    if not shown:
        axes[0].text(0.5, 0.5, "no instant captured", ha="center", va="center")
        axes[0].set_axis_off()
    else:
        axes[-1].set_xlabel("node (name order)")
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="share of the device in use", fraction=0.03)
    return _png(fig)


def fairness(runs: Sequence[Run]) -> bytes:
    """Jain's index over time (1 = every queue at the same fraction of its fair share)."""
    scale, unit = _unit(runs)
    fig = Figure(figsize=(10, 2.8))
    ax = fig.subplots()
    for i, run in enumerate(runs):
        _steps(ax, run, run.series.cluster["fairness"], scale, color=COLORS[i % len(COLORS)],
               label=run.label or run.name)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Jain index")
    ax.set_xlabel(f"virtual time ({unit})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return _png(fig)
