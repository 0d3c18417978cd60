"""YuniKorn's queue configuration (`queues.yaml`) as KAI Queues (`kai migrate --from yunikorn`).

The file as YuniKorn reads it (`partitions[].queues[]`, nested `queues`), or the `yunikorn-configs` ConfigMap
that holds it under `data["queues.yaml"]`.

| YuniKorn | KAI |
|---|---|
| a queue under `root` | a top-level queue; deeper queues keep their parent |
| `resources.guaranteed` | `quota` per resource (`vcore` is CPU, `memory`, `nvidia.com/gpu`) |
| `resources.max` | `limit` per resource (absent: -1, no limit) |
| `properties["priority.offset"]` | `priority` 100 + offset |

YuniKorn has no over-quota weight: every queue gets weight 1 (equal shares of what is left). `root` is not
written. A partition other than `default` prefixes its queue names (`gpu-partition-team`): KAI has no
partitions. Names are made unique (a child whose name is taken is named `parent-child`). Listed as not mapped:
ACLs (`submitacl`, `adminacl`: see queue access control), `maxapplications`, `limits`, other properties,
placement rules, resources other than vcore, memory and nvidia.com/gpu.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.errors import UserError
from kai_scheduler.install.migrate import Plan, Result, amounts, kai_name, load_documents, show

ROOT = "root"
_MAPPED = {"name", "queues", "resources", "parent", "properties"}


def convert(text: str, source: str) -> Result:
    docs = load_documents(text, source)
    config = _config(docs, source)
    partitions = config.get("partitions")
    if not isinstance(partitions, list) or not partitions:
        raise UserError(f"{source}: partitions: expected a list of partitions (YuniKorn's queues.yaml)")
    result = Result()
    taken: set[str] = set()
    for i, partition in enumerate(partitions):
        if not isinstance(partition, Mapping):
            raise UserError(f"{source}: partitions[{i}]: expected a map, got {partition!r}")
        pname = str(partition.get("name") or "default")
        prefix = "" if pname == "default" else f"{kai_name(pname)}-"
        if prefix:
            result.unmapped.append(f"partition {pname}: KAI has no partitions; its queues are prefixed {prefix!r}")
        for key in sorted(set(partition) - {"name", "queues"}):
            result.unmapped.append(f"partition {pname}: {key} has no KAI equivalent")
        queues = partition.get("queues") or []
        if not isinstance(queues, list):
            raise UserError(f"{source}: partition {pname} queues: expected a list")
        for q in queues:
            _walk(q, f"partition {pname} queue", "", prefix, taken, result, top=True)
    if not result.plans:
        raise UserError(f"{source}: no queue below root in any partition")
    return result


def _config(docs: list[Any], source: str) -> Mapping[str, Any]:
    for doc in docs:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "ConfigMap":
            data = doc.get("data") or {}
            text = data.get("queues.yaml") if isinstance(data, Mapping) else None
            if not isinstance(text, str):
                raise UserError(f'{source}: ConfigMap without data["queues.yaml"]')
            inner = load_documents(text, f'{source} data["queues.yaml"]')
            return _config(inner, source)
        if "partitions" in doc:
            return doc
    raise UserError(f"{source}: no partitions: not a YuniKorn queues.yaml (nor a ConfigMap holding one)")


def _walk(q: Any, where: str, parent: str, prefix: str, taken: set[str], result: Result, *, top: bool = False) -> None:
    if not isinstance(q, Mapping) or not isinstance(q.get("name"), str) or not q["name"]:
        raise UserError(f"{where}: a queue without a name")
    name = q["name"]
    path = f"{where} {name}"
    children = q.get("queues") or []
    if not isinstance(children, list):
        raise UserError(f"{path}: queues: expected a list")
    if top and name.lower() == ROOT:
        for key in sorted(set(q) - {"name", "queues", "submitacl", "adminacl", "properties"}):
            result.unmapped.append(f"{path}.{key}: the root queue is not written")
        _acls(q, path, result)
        for child in children:
            _walk(child, where, "", prefix, taken, result)
        return
    kname = prefix + kai_name(name)
    if kname in taken:
        kname = f"{parent}-{kai_name(name)}" if parent else kname
    if kname in taken:
        raise UserError(f"{path}: the name {kname!r} is taken by another queue")
    taken.add(kname)
    plan = Plan(name=kname, parent=parent, source=name)
    if kname != prefix + name:
        result.unmapped.append(f"{path}: named {kname!r} (a Queue name is a unique DNS label)")
    resources = q.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise UserError(f"{path}.resources: expected a map, got {resources!r}")
    for key, target in (("guaranteed", "quota"), ("max", "limit")):
        raw = resources.get(key)
        if isinstance(raw, Mapping):
            raw = {("cpu" if k == "vcore" else k): v for k, v in raw.items()}
        found, rest = amounts(raw, f"{path}.resources.{key}")
        setattr(plan, target, found)
        for res, value in sorted(rest.items()):
            result.unmapped.append(
                f"{path}.resources.{key}.{res}: {show(value)}: KAI queues count only vcore, memory and nvidia.com/gpu"
            )
    for key in sorted(set(resources) - {"guaranteed", "max"}):
        result.unmapped.append(f"{path}.resources.{key} has no KAI equivalent")
    _properties(q, path, plan, result)
    _acls(q, path, result)
    for key in sorted(set(q) - _MAPPED - {"submitacl", "adminacl"}):
        result.unmapped.append(f"{path}.{key}: {show(q[key])} has no KAI equivalent")
    result.plans.append(plan)
    for child in children:
        _walk(child, where, kname, prefix, taken, result)


def _properties(q: Mapping[str, Any], path: str, plan: Plan, result: Result) -> None:
    props = q.get("properties") or {}
    if not isinstance(props, Mapping):
        raise UserError(f"{path}.properties: expected a map, got {props!r}")
    for key, value in sorted(props.items()):
        if key == "priority.offset":
            try:
                plan.priority = constants.DEFAULT_QUEUE_PRIORITY + int(str(value))
            except ValueError:
                raise UserError(f"{path}.properties.priority.offset: expected an integer, got {show(value)}") from None
        else:
            result.unmapped.append(f"{path}.properties.{key}: {show(value)} has no KAI equivalent")


def _acls(q: Mapping[str, Any], path: str, result: Result) -> None:
    for key in ("submitacl", "adminacl"):
        if key in q:
            result.unmapped.append(
                f"{path}.{key}: {show(q[key])}: KAI has no user ACLs; a Queue may list allowedNamespaces instead"
            )
