"""An Explanation as plain text for a person: sections in a fixed order, lines wrapped at 80 columns, no
colour or terminal codes (the same in a terminal and in a pipe)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from kai_scheduler.api.duration import format_duration
from kai_scheduler.explain import model

WIDTH = 80


def render(ex: model.Explanation) -> str:
    """The whole explanation; ends with a newline."""
    lines: list[str] = []
    lines += _head(ex)
    if ex.queues:
        lines += ["", *_queues(ex.queues)]
    if ex.order is not None:
        lines += ["", *_order(ex.order)]
    if ex.next_cycle is not None:
        lines += ["", *_next_cycle(ex.next_cycle, pending=ex.state in ("pending", "partial"))]
    for pool in ex.pools if ex.state in ("pending", "partial") else ():
        lines += ["", *_pool(pool, several=len(ex.pools) > 1)]
    if ex.victims:
        lines += ["", *_victims(ex.victims)]
    if ex.protection is not None:
        lines += ["", *_threats(ex.threats), "", *_protection(ex.protection)]
    if ex.notes:
        lines += ["", *(line for note in ex.notes for line in _wrap(f"Note: {note}", indent=2))]
    return "\n".join(lines) + "\n"


def _head(ex: model.Explanation) -> list[str]:
    kind = "preemptible" if ex.preemptible else "non-preemptible"
    pods = ", ".join(f"{n} {status}" for status, n in ex.pods) or "no pods"
    out = [f"Job {ex.job}", f"  queue {ex.queue}, priority {ex.priority}, {kind}", f"  state: {ex.state} ({pods})"]
    out += _wrap(f"Verdict: {ex.summary}", indent=2, first="")
    for problem in ex.problems:
        if problem not in ex.summary:  # the verdict quotes the first
            out += _wrap(f"Problem: {problem}", indent=2, first="")
    return out


# --- queues ---------------------------------------------------------------------------------------------------


def _queues(chain: Iterable[model.QueueLine]) -> list[str]:
    out = ["Queues (the job's queue first, then its parents):"]
    header = f"  {'':<12}{'deserved':>10}{'fair share':>12}{'allocated':>11}{'requested':>11}{'limit':>9}"
    for q in chain:
        parent = f", parent {q.parent}" if q.parent else ""
        out.append(f"  {q.name} (priority {q.priority}{parent})")
        out.append(header)
        for label, pick, scale in (
            ("gpu", "gpu", 1.0),
            ("cpu (cores)", "cpu", 1000.0),
            ("memory (GB)", "memory", 1000.0),
        ):
            values = [getattr(a, pick) for a in (q.deserved, q.fair_share, q.allocated, q.requested, q.limit)]
            cells = [_quota(v, scale) for v in values]
            out.append(f"  {label:<12}{cells[0]:>10}{cells[1]:>12}{cells[2]:>11}{cells[3]:>11}{cells[4]:>9}")
    return out


def _quota(value: float, scale: float) -> str:
    if value < 0:
        return "-"
    return f"{value / scale:.4g}"


# --- order ----------------------------------------------------------------------------------------------------


def _order(order: model.QueueOrder) -> list[str]:
    if order.position is None:
        return _wrap(f"Queue order: not among the jobs allocate tries: {order.reason}", indent=2, first="")
    if order.ahead_count == 0:
        return ["Queue order: allocate tries this job first (at the start of a cycle)."]
    queues = ", ".join(f"{q} {n}" for q, n in order.queues_ahead)
    out = [f"Queue order: position {order.position} at the start of a cycle; {order.ahead_count} job(s) ahead"]
    out += _wrap(f"by queue: {queues}", indent=4, first="  ")
    for a in order.ahead:
        out += _wrap(
            f"{a.job} (queue {a.queue}, priority {a.priority}): {a.pods} pod(s), {a.gpus:g} GPU(s)",
            indent=6,
            first="    ",
        )
    if order.ahead_count > len(order.ahead):
        out.append(f"    … and {order.ahead_count - len(order.ahead)} more")
    return out


# --- the next cycle -------------------------------------------------------------------------------------------


def _next_cycle(nc: model.NextCycle, *, pending: bool) -> list[str]:
    out = ["Next cycle (every configured action, dry run):"]
    if nc.placements:
        out.append("  places its pods:")
        out += [f"    {p.task} -> {p.node} ({p.status})" for p in nc.placements]
    elif pending:
        out.append("  leaves it pending" + ("; its PodGroup condition would say:" if nc.reasons else ""))
        out += [line for r in nc.reasons for line in _wrap(f"- {r.message} [{r.plugin}]", indent=6, first="    ")]
    for title, victims in (("takes, to make room for it:", nc.made_room), ("takes of its pods:", nc.taken)):
        if victims:
            out.append(f"  {title}")
            out += [line for v in victims for line in _wrap(_victim_line(v, with_action=True), indent=6, first="    ")]
    if len(out) == 1:
        out.append("  changes nothing for it")
    return out


def _victim_line(v: model.Victim, *, with_action: bool = False) -> str:
    what = f"moved {v.node} -> {v.moved_to}" if v.moved_to else f"evicted from {v.node}"
    by = f" by {v.action} for {v.by}" if with_action and v.action else ""
    return f"{v.task} (job {v.job}, queue {v.queue}): {what}{by}"


# --- node pools -----------------------------------------------------------------------------------------------


def _pool(pool: model.PoolView, *, several: bool) -> list[str]:
    name = f"node pool {pool.name!r}" if pool.name else "the unlabelled node pool"
    mine = " (serves this job)" if several and pool.is_job_pool else (" (another shard's)" if several else "")
    verdict = "the job's next pods fit" if pool.placeable else "the job's next pods do not fit"
    if not pool.shapes and not pool.placeable and not pool.reasons:
        verdict = "nothing pending to place"
    out = _wrap(f"Nodes of {name}{mine}, {pool.nodes} node(s): {verdict}", indent=2, first="")
    if pool.placements:
        out.append("  a dry allocate (as if the job came first) would place:")
        out += [f"    {p.task} -> {p.node} ({p.status})" for p in pool.placements]
    for reason in pool.reasons:
        out += _wrap(f"- {reason.message} [{reason.plugin}]", indent=4, first="  ")
    for shape in pool.shapes:
        out += _shape(shape)
    return out


def _shape(shape: model.TaskShape) -> list[str]:
    like = f" and {shape.pods - 1} like it" if shape.pods > 1 else ""
    head = f"pod {shape.task}{like} ({shape.request}): {shape.nodes_fit} of {shape.nodes} node(s) have room for one"
    out = _wrap(head + ("; closest:" if shape.closest else ""), indent=4, first="  ")
    for node in shape.closest:
        domain = f", {node.domain}" if node.domain else ""
        state = "fits" if node.fits else "lacks:"
        out.append(f"    {node.name} ({node.free_gpus:g} of {node.allocatable_gpus:g} GPUs free{domain}): {state}")
        for lack in node.lacks:
            out += _wrap(f"- {lack.message} [{lack.plugin}]", indent=8, first="      ")
    return out


# --- victims and threats --------------------------------------------------------------------------------------


def _victims(plans: Iterable[model.VictimPlan]) -> list[str]:
    out = _wrap(
        "Making room (each victim action dry-run for this job at its turn in the next cycle; nothing is evicted):",
        indent=2,
        first="",
    )
    for plan in plans:
        if not plan.possible:
            out += _wrap(f"{plan.action}: no: {plan.reason}", indent=4, first="  ")
            continue
        out.append(f"  {plan.action}: yes, taking {len(plan.victims)} pod(s):")
        for v in plan.victims:
            out += _wrap(_victim_line(v), indent=6, first="    ")
        if plan.placements:
            out.append("    then the job's pods go to:")
            out += [f"      {p.task} -> {p.node} ({p.status})" for p in plan.placements]
    return out


def _threats(found: Iterable[model.Threat]) -> list[str]:
    found = list(found)
    if not found:
        return _wrap(
            "Could lose its pods to: nothing in the next cycle (no pending job may preempt, reclaim or move them).",
            indent=2,
            first="",
        )
    out = _wrap(
        "Could lose its pods to (pending jobs whose action, at its turn in the next cycle, accepts this job as a "
        "victim; each dry-run for that job alone):",
        indent=2,
        first="",
    )
    for t in found:
        if t.would_evict is None:
            verdict = "not dry-run"
        elif t.would_evict:
            verdict = f"a dry run takes {t.pods} of its pods"
        else:
            verdict = "a dry run takes none of its pods"
        out += _wrap(
            f"{t.action} by {t.preemptor} (queue {t.queue}, priority {t.priority}): {verdict}", indent=4, first="  "
        )
    return out


def _protection(p: model.Protection) -> list[str]:
    started = (
        "no start time recorded, so min-runtime does not apply"
        if p.started_ago is None
        else f"started {format_duration(round(p.started_ago))} ago"
    )
    out = _wrap(f"Protection: {'preemptible' if p.preemptible else 'non-preemptible'}, {started}", indent=2, first="")
    protected = dict(p.protected_for)
    for action, runtime in p.min_runtime:
        left = protected.get(action, 0.0)
        state = f"protected for another {format_duration(round(left))}" if left > 0 else "not protected"
        out.append(f"  {action} min-runtime {format_duration(round(runtime))}: {state}")
    for note in p.notes:
        out += _wrap(f"- {note}", indent=4, first="  ")
    return out


def _wrap(text: str, *, indent: int, first: str | None = None) -> list[str]:
    """`text` wrapped at WIDTH; the first line starts with `first` (default: the indent), the rest are indented."""
    lead = " " * indent if first is None else first
    return textwrap.wrap(
        text, WIDTH, initial_indent=lead, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False
    ) or [lead]
