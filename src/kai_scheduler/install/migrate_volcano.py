"""Volcano Queues (`scheduling.volcano.sh/v1beta1`) as KAI Queues (`kai migrate --from volcano`).

| Volcano | KAI |
|---|---|
| `spec.deserved` (else `spec.guarantee.resource`) | `quota` per resource |
| `spec.weight` | `overQuotaWeight` of every resource |
| `spec.capability` | `limit` per resource (absent: -1, no limit) |
| `spec.parent` (`root`: none) | `parentQueue` |
| `spec.priority` | `priority` |

The `root` queue itself is not written (KAI's top-level queues have no common parent). Everything else
(`reclaimable`, `state`, `affinity`, `type`, `extendClusters`, resources other than cpu, memory and
nvidia.com/gpu, a `guarantee` beside a different `deserved`) is listed as not mapped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kai_scheduler.api.errors import UserError
from kai_scheduler.install.migrate import Plan, Result, amounts, kai_name, load_documents, show

API_GROUP = "scheduling.volcano.sh/"
ROOT = "root"
_MAPPED = {"weight", "capability", "deserved", "guarantee", "parent", "priority"}


def convert(text: str, source: str) -> Result:
    result = Result()
    queues = [d for d in _objects(load_documents(text, source)) if d.get("kind") == "Queue"]
    if not queues:
        raise UserError(f"{source}: no Volcano Queue (apiVersion {API_GROUP}v1beta1, kind Queue) in the file")
    names: dict[str, str] = {}
    for q in queues:
        meta = q.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            raise UserError(f"{source}: a Queue without metadata.name")
        if not str(q.get("apiVersion", "")).startswith(API_GROUP):
            raise UserError(
                f"{source}: Queue {name}: apiVersion {q.get('apiVersion')!r} is not Volcano's ({API_GROUP}…)"
            )
        names[name] = kai_name(name)
    for q in queues:
        plan = _queue(q, names, result)
        if plan is not None:
            result.plans.append(plan)
    return result


def _objects(docs: list[Any]) -> list[Mapping[str, Any]]:
    """The documents, with `kind: List` items (as `kubectl get -o yaml` prints) taken out."""
    out: list[Mapping[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "List" or isinstance(doc.get("items"), list):
            out += [i for i in doc.get("items") or [] if isinstance(i, Mapping)]
        else:
            out.append(doc)
    return out


def _queue(q: Mapping[str, Any], names: dict[str, str], result: Result) -> Plan | None:
    name = q["metadata"]["name"]
    where = f"Queue {name} spec"
    spec = q.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise UserError(f"Queue {name}: spec: expected a map, got {spec!r}")
    if name == ROOT:
        result.unmapped.append(f"Queue {ROOT}: Volcano's root queue is not written; its children are top-level queues")
        return None
    plan = Plan(name=names[name], source=name)
    deserved, rest = amounts(spec.get("deserved"), f"{where}.deserved")
    _note_rest(rest, f"{where}.deserved", result)
    guarantee_raw = spec.get("guarantee")
    guarantee: dict[str, float] = {}
    if guarantee_raw is not None:
        if not isinstance(guarantee_raw, Mapping):
            raise UserError(f"{where}.guarantee: expected a map, got {guarantee_raw!r}")
        guarantee, rest = amounts(guarantee_raw.get("resource"), f"{where}.guarantee.resource")
        _note_rest(rest, f"{where}.guarantee.resource", result)
    plan.quota = deserved or guarantee
    if deserved and guarantee and guarantee != deserved:
        result.unmapped.append(
            f"{where}.guarantee: KAI has no reservation apart from the quota; the quota is spec.deserved"
        )
    limit, rest = amounts(spec.get("capability"), f"{where}.capability")
    _note_rest(rest, f"{where}.capability", result)
    plan.limit = limit
    weight = spec.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        raise UserError(f"{where}.weight: expected a number at least 0, got {weight!r}")
    plan.weight = float(weight)
    priority = spec.get("priority")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise UserError(f"{where}.priority: expected an integer, got {priority!r}")
        plan.priority = priority
    parent = spec.get("parent")
    if parent not in (None, "", ROOT):
        if parent not in names:
            raise UserError(f"{where}.parent: no Queue named {parent!r} in the file")
        plan.parent = names[str(parent)]
    if name != plan.name:
        result.unmapped.append(
            f"Queue {name}: renamed {plan.name!r} (a Queue name is a DNS label); displayName keeps {name!r}"
        )
    for key in sorted(set(spec) - _MAPPED):
        result.unmapped.append(f"{where}.{key}: {show(spec[key])} has no KAI equivalent")
    return plan


def _note_rest(rest: dict[str, Any], where: str, result: Result) -> None:
    for resource, value in sorted(rest.items()):
        result.unmapped.append(
            f"{where}.{resource}: {show(value)}: KAI queues count only cpu, memory and nvidia.com/gpu"
        )
