"""Turn one scenario mapping into a Scenario: the cluster objects, the jobs, and the extras (SCENARIOS.md).

Order matters only for references: priority classes, topologies, nodes and queues are read first so that
jobs and tasks can be checked against them; every produced object is then parsed through its api type, the
same check a cluster's reader applies, with errors located at the entry that produced it.
"""

from __future__ import annotations

import copy
from pathlib import PurePath
from typing import Any

from kai_scheduler.api import fields
from kai_scheduler.scenario import autoscaler, cluster, dra, expect, jobs, meta
from kai_scheduler.scenario.entry import MAX_OBJECTS, Entry, Where
from kai_scheduler.scenario.model import DEFAULT_NOW, Scenario, Shard
from kai_scheduler.scenario.source import line_map

TOP_FIELDS = (
    "name",
    "now",
    "cycles",
    "config",
    "priorityClasses",
    "namespaces",
    "topologies",
    "nodes",
    "queues",
    "jobs",
    "expect",
    "autoscaler",
    "deviceClasses",
    "devicePools",
    "resourceClaims",
    "shards",
)
SHARD_FIELDS = ("name", "partitionLabelValue", "config")
SCENARIO_MARKERS = ("nodes", "queues", "jobs")


SIMULATE_ONLY = "generators"  # the simulator's (sim.sources expands and removes it before building)


def is_scenario(doc: Any) -> bool:
    """A scenario is a mapping with nodes, queues or jobs (and no `kind`, which marks a Kubernetes object)."""
    return isinstance(doc, dict) and "kind" not in doc and any(key in doc for key in SCENARIO_MARKERS)


def build(where: Where, doc: dict[str, Any]) -> Scenario:
    """The scenario's objects in kind order (see Scenario), its jobs and its expectations."""
    top = Entry(where, doc, "scenario", "top-level")
    if SIMULATE_ONLY in doc:
        raise top.error(
            SIMULATE_ONLY,
            "read by `kai simulate` only (it draws the jobs): run `kai simulate FILE` "
            "(with --dashboard it records the views for `kai dashboard`)",
        )
    top.check_keys(TOP_FIELDS)
    now = _now(top)
    facts = cluster.Cluster()
    classes = cluster.priority_classes(top, facts)
    namespaces = cluster.namespaces(top)
    topologies = cluster.topologies(top, facts)
    nodes = cluster.nodes(top, facts, now)
    queues = cluster.queues(top, facts, now)
    pools = dra.device_pools(top)
    classes_dra = dra.device_classes(top, facts.dra, dra.any_devices(top))
    claims = dra.shared_claims(top, facts.dra)
    built = jobs.build(top, facts, now)
    objects = [
        *classes,
        *facts.synthesized,
        *namespaces,
        *topologies,
        *nodes,
        *queues,
        *built.podgroups,
        *built.pods,
        *built.bindrequests,
        *classes_dra,
        *facts.dra_objects,
        *pools,
        *claims,
        *built.dra,
    ]
    for item in objects:
        if item.obj["kind"] != "Node":  # nodes were parsed when built, for their GPU memory
            meta.parse(item)
    config = top.mapping("config")
    names = expect.Names(
        tasks={f"{job.namespace}/{name}" for job in built.metas for name in job.task_names},
        jobs={f"{job.namespace}/{job.name}" for job in built.metas},
        nodes=facts.node_gpu_memory.keys(),
        queues=facts.queue_children.keys(),
    )
    return Scenario(
        name=top.text("name", PurePath(where.source).stem),
        now=now,
        cycles=top.integer("cycles", minimum=1, maximum=MAX_OBJECTS),
        config=config,
        config_lines=line_map(config, where.lines),
        objects=[copy.deepcopy(item.obj) for item in objects],  # no nested dict shared between objects
        jobs=built.metas,
        expect=expect.read(top, names),
        source=where.source,
        autoscaler=autoscaler.read(top, now),
        shards=_shards(top, where),
    )


def _shards(top: Entry, where: Where) -> tuple[Shard, ...]:
    """`shards:` each a scheduler over one node pool; names and pools unique (two schedulers over one pool
    would both place its jobs)."""
    out: list[Shard] = []
    pools: dict[str, str] = {}
    for e in top.named_items("shards", "shard"):
        e.check_keys(SHARD_FIELDS)
        value = e.text("partitionLabelValue")
        if value in pools:
            raise e.error("partitionLabelValue", f"pool {value!r} is served by shard {pools[value]!r} already")
        pools[value] = e.name
        config = e.mapping("config") if e.has("config") else None
        lines = line_map(config, where.lines) if config is not None else {}
        out.append(Shard(e.name, value, config, lines))
    return tuple(out)


def _now(top: Entry) -> float:
    """`now` as POSIX seconds: an RFC 3339 time, or a number of seconds; default 2026-01-01T00:00:00Z."""
    value = top.data.get("now")
    if value is None:
        return DEFAULT_NOW
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        return fields.parse_time(value)
    except (TypeError, ValueError):
        example = '"2026-01-01T00:00:00Z"'
        raise top.error("now", f"expected an RFC 3339 time such as {example}, got {value!r}") from None
