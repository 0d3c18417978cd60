"""Read the `expect:` block into typed Expectations, rejecting unknown keys and names that do not exist.

A typo in an expectation would otherwise make `kai schedule --check` vacuously pass or fail on nothing, so
every key is checked and every task, job, node and queue named must be one the scenario declares.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from kai_scheduler.scenario.entry import Entry
from kai_scheduler.scenario.model import (
    NODE_EXPECTATION_KEYS,
    QUEUE_EXPECTATION_KEYS,
    QUEUE_EXPECTATION_RESOURCES,
    TASK_STATUSES,
    Expectations,
    StatusExpectation,
)

EXPECT_FIELDS = ("tasks", "jobs", "nodes", "queues", "maxBinds", "maxEvictions", "maxPipelines")
STATUS_FIELDS = ("status", "node")


@dataclass(frozen=True, slots=True)
class Names:
    """What the scenario declares, for checking the names an expectation uses.

    Tasks and jobs are `namespace/name` keys (names are unique only within a namespace); nodes and queues,
    cluster-wide, are names."""

    tasks: Collection[str]
    jobs: Collection[str]
    nodes: Collection[str]
    queues: Collection[str]


def namespaced_key(written: str, known: Collection[str]) -> str | None:
    """The `namespace/name` key an expectation means: `written` itself when it is a known key, else the one
    key whose name it is; None when no key matches. Raises LookupError listing the keys when a bare name
    is in more than one namespace."""
    if written in known:
        return written
    if "/" in written:
        return None
    matches = sorted(key for key in known if key.partition("/")[2] == written)
    if len(matches) > 1:
        raise LookupError(", ".join(matches))
    return matches[0] if matches else None


def read(top: Entry, names: Names) -> Expectations | None:
    """The scenario's expectations; None when it has no `expect:`."""
    if not top.has("expect"):
        return None
    raw = top.mapping("expect")
    e = Entry(top.where, raw, "expect", "block")
    e.check_keys(EXPECT_FIELDS)
    return Expectations(
        tasks=_statuses(e, "tasks", "task", names.tasks, names.nodes),
        jobs=_statuses(e, "jobs", "job", names.jobs, names.nodes),
        nodes=_nodes(e, names.nodes),
        queues=_queues(e, names.queues),
        max_binds=e.integer("maxBinds", minimum=0),
        max_evictions=e.integer("maxEvictions", minimum=0),
        max_pipelines=e.integer("maxPipelines", minimum=0),
    )


def _section(
    e: Entry, key: str, what: str, known: Collection[str], fields: Collection[str], namespaced: bool = False
) -> list[tuple[str, Entry]]:
    """(key, entry) for each name of one section, keys checked; errors read `expect <key> <name>.<field>`.

    A namespaced section (tasks, jobs) takes `namespace/name` or, when only one namespace has it, `name`;
    its entries come keyed `namespace/name`."""
    section = Entry(e.where, e.mapping(key), "expect", key)
    out = []
    for name in section.data:
        written = str(name)
        resolved: str | None = written if written in known else None
        if namespaced:
            try:
                resolved = namespaced_key(written, known)
            except LookupError as err:
                raise section.error(
                    written, f"{what} {written!r} is in more than one namespace; write one of: {err}"
                ) from None
        if resolved is None:
            raise section.error(written, f"no {what} named {name!r} in the scenario")
        child = section.child(written, fields)
        if child is not None:
            out.append((resolved, child))
    return out


def _amounts(item: Entry, minimum: float | None = None) -> dict[str, float]:
    """The numbers of a mapping whose keys were checked; null values are not expectations."""
    out = {}
    for key in item.data:
        value = item.number(str(key), minimum=minimum)
        if value is not None:
            out[str(key)] = value
    return out


def _statuses(
    e: Entry, key: str, what: str, known: Collection[str], nodes: Collection[str]
) -> dict[str, StatusExpectation]:
    out = {}
    for resolved, item in _section(e, key, what, known, STATUS_FIELDS, namespaced=True):
        status = item.text("status") or None
        if status is not None and status not in TASK_STATUSES:
            raise item.error("status", f"unknown status {status!r}; want one of {', '.join(TASK_STATUSES)}")
        node = item.text("node") or None
        if node is not None and node not in nodes:
            raise item.error("node", f"no node named {node!r}")
        out[resolved] = StatusExpectation(status, node)
    return out


def _nodes(e: Entry, known: Collection[str]) -> dict[str, dict[str, float]]:
    out = {}
    for _, item in _section(e, "nodes", "node", known, NODE_EXPECTATION_KEYS):
        out[item.path] = _amounts(item, minimum=0)
    return out


def _queues(e: Entry, known: Collection[str]) -> dict[str, dict[str, dict[str, float]]]:
    out = {}
    for _, item in _section(e, "queues", "queue", known, QUEUE_EXPECTATION_KEYS):
        amounts: dict[str, dict[str, float]] = {}
        for key in item.data:
            resources = item.child(str(key), QUEUE_EXPECTATION_RESOURCES)
            if resources is not None:
                amounts[str(key)] = _amounts(resources)
        out[item.path] = amounts
    return out
