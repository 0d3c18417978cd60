"""`kai migrate`: queues of another gang scheduler as KAI Queues (`scheduling.run.ai/v2`), and what did not map.

The readers (`migrate_volcano`, `migrate_yunikorn`) turn their input into `Plan`s: one per KAI queue, with
amounts already in the Queue CRD's units (GPU devices, CPU millicores, memory megabytes). `render` checks each
with the Queue parser (so what is printed is a Queue this scheduler accepts) and writes them parents first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kai_scheduler.api import constants
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.api.quantity import QuantityError, parse_quantity
from kai_scheduler.api.queue import Queue, queue_name

GPU_RESOURCE = constants.RESOURCE_GPU
UNLIMITED = -1.0


@dataclass(slots=True)
class Plan:
    """One KAI queue: per resource (gpu, cpu, memory) its quota, over-quota weight and limit."""

    name: str
    parent: str = ""
    priority: int = constants.DEFAULT_QUEUE_PRIORITY
    quota: dict[str, float] = field(default_factory=dict)  # omitted resource: 0
    weight: float = 1.0
    limit: dict[str, float] = field(default_factory=dict)  # omitted resource: unlimited
    source: str = ""  # the original name, when it had to change

    def to_dict(self) -> dict[str, Any]:
        resources = {
            r: {
                "quota": _number(self.quota.get(r, 0.0)),
                "overQuotaWeight": _number(self.weight),
                "limit": _number(self.limit.get(r, UNLIMITED)),
            }
            for r in ("gpu", "cpu", "memory")
        }
        spec: dict[str, Any] = {"priority": self.priority, "resources": resources}
        if self.parent:
            spec["parentQueue"] = self.parent
        meta: dict[str, Any] = {"name": self.name}
        if self.source and self.source != self.name:
            spec["displayName"] = self.source
        return {"apiVersion": constants.QUEUE_API_VERSION, "kind": "Queue", "metadata": meta, "spec": spec}


@dataclass(slots=True)
class Result:
    plans: list[Plan] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)  # one line each: what, where, why


def load_documents(text: str, source: str) -> list[Any]:
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"{source}: not YAML{where}: {getattr(err, 'problem', None) or err}") from None


def amounts(raw: Any, where: str) -> tuple[dict[str, float], dict[str, Any]]:
    """A resource list (`cpu`, `memory`, `nvidia.com/gpu`) in the Queue's units; the rest is returned as is."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        raise UserError(f"{where}: expected a map of resources, got {raw!r}")
    out: dict[str, float] = {}
    rest: dict[str, Any] = {}
    for name, value in raw.items():
        key = {"cpu": "cpu", "memory": "memory", GPU_RESOURCE: "gpu"}.get(str(name))
        if key is None:
            rest[str(name)] = value
            continue
        try:
            amount = parse_quantity(value)
        except QuantityError:
            raise UserError(f"{where}.{name}: not a quantity: {value!r}") from None
        if key == "cpu":
            out[key] = float(amount * 1000)
        elif key == "memory":
            out[key] = float(round(amount / 1_000_000))  # whole megabytes, the Queue's unit
        else:
            out[key] = float(amount)
    return out, rest


def show(value: Any) -> str:
    """A value of the input as written in YAML/JSON (true, "fifo", {"a": 1}), for the not-mapped lines."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


kai_name = queue_name


def render(result: Result) -> str:
    """The Queues as YAML documents, parents before children; each checked by the Queue parser."""
    by_name = {p.name: p for p in result.plans}
    ordered: list[Plan] = []
    done: set[str] = set()

    def visit(plan: Plan) -> None:
        if plan.name in done:
            return
        done.add(plan.name)
        if plan.parent in by_name:
            visit(by_name[plan.parent])
        ordered.append(plan)

    for plan in result.plans:
        visit(plan)
    docs = []
    for plan in ordered:
        obj = plan.to_dict()
        try:
            Queue.from_dict(obj)
        except ObjectError as err:
            raise UserError(f"the converted {err}") from None
        docs.append(obj)
    return yaml.safe_dump_all(docs, sort_keys=False)
