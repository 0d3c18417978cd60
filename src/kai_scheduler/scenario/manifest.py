"""Load plain Kubernetes manifests: a multi-document YAML or a `List` (`kubectl get … -o yaml`).

The kinds the scheduler reads are kept as they are, each validated by its api parser; the API server's
defaults a hand-written manifest may lack are filled in (namespace `default` for namespaced kinds, a
deterministic uid). Other kinds (Deployments, ConfigMaps…) are skipped and reported in `ignored_kinds`.

A hand-written manifest is read as applied to a cluster KAI is installed in: it has the PriorityClasses KAI
ships (train, build-preemptible, build, inference) besides those it defines (its own of the same name wins),
and a pod naming a class that is in neither is refused, as the API server's Priority admission refuses it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from kai_scheduler.api import constants, fields
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.kinds import KIND_TO_PLURAL, RESOURCES
from kai_scheduler.scenario import cluster, meta
from kai_scheduler.scenario.entry import Where
from kai_scheduler.scenario.model import DEFAULT_NOW, JSON, MANIFEST_KINDS, JobMeta, Scenario
from kai_scheduler.scenario.source import ScenarioError


def build(where: Where, docs: list[Any], *, check_references: bool = True) -> Scenario:
    """The manifest's objects in kind order (file order within a kind), its PodGroups as jobs. Without
    `check_references` (a scheduler's snapshot: a cluster as it was) a PodGroup may name a queue that is not
    there, a pod a node or a priority class: the scheduler reports such objects, as it does in the cluster;
    and no shipped class is added (the snapshot holds the classes its cluster had)."""
    by_kind: dict[str, list[JSON]] = {kind: [] for kind in MANIFEST_KINDS}
    ignored: set[str] = set()
    located: dict[int, str] = {}  # id of a kept object → `file:line` of the document it came from
    for raw in _items(where, docs):
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind or not isinstance(raw.get("apiVersion"), str):
            raise ScenarioError(where.at(raw), _not_an_object(raw))
        if kind not in by_kind:
            ignored.add(kind)
            continue
        built = meta.Built(copy.deepcopy(_with_defaults(raw)), where.at(raw))  # YAML aliases share nodes
        meta.parse(built)
        huge = _integer_past_int64(built.obj)
        if huge is not None:
            names = built.obj["metadata"]
            name = f"{names['namespace']}/{names['name']}" if names.get("namespace") else str(names["name"])
            raise _error(where, raw, kind, name, huge, "an integer past int64, which no Kubernetes object holds")
        by_kind[kind].append(built.obj)
        located[id(built.obj)] = built.where
    if check_references:
        defined = {str(pc["metadata"]["name"]) for pc in by_kind["PriorityClass"]}
        by_kind["PriorityClass"].extend(cluster.shipped_classes(defined))
        _check_references(Located(where, located), by_kind)
    objects = [obj for kind in MANIFEST_KINDS for obj in by_kind[kind]]
    return Scenario(
        name=PurePath(where.source).stem,
        now=_latest_creation(objects),
        objects=objects,
        jobs=_jobs(by_kind["PodGroup"], by_kind["Pod"]),
        source=where.source,
        ignored_kinds=tuple(sorted(ignored)),
    )


INT64 = 2**63


def _integer_past_int64(value: Any, path: str = "") -> str | None:
    """The path of the first integer of `value` outside int64 (YAML reads any), None if there is none: the
    store, as the API server, holds none, in fields the scheduler reads or not."""
    if isinstance(value, int) and not -INT64 <= value < INT64:
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _integer_past_int64(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}".lstrip("."))
        if found is not None:
            return found
    return None


def _items(where: Where, docs: list[Any]) -> list[dict[str, Any]]:
    """Every object of every document, `List` documents (any `…List` kind with items) unpacked."""
    out = []
    for doc in docs:
        if not isinstance(doc, dict):
            raise ScenarioError(where.source, f"expected Kubernetes objects, got a document {doc!r}")
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ScenarioError(where.at(doc, "items"), f"{kind} items: expected a list of objects")
            out.extend(items)
        else:
            out.append(doc)
    return out


# Top-level keys of KAI's scheduler configuration (config.yaml): such a file goes to --config, not as the scenario.
CONFIG_KEYS = frozenset({"actions", "tiers"})


def _not_an_object(raw: dict[str, Any]) -> str:
    keys = ", ".join(str(k) for k in list(raw)[:6])
    if CONFIG_KEYS & set(raw):
        return f"a scheduler configuration ({keys}), not a scenario: give it with --config"
    return (
        "neither a scenario (no nodes, queues or jobs) nor a Kubernetes object (needs apiVersion and kind); "
        f"keys: {keys}"
    )


def _with_defaults(raw: dict[str, Any]) -> JSON:
    """The object with what the API server would have set: namespace `default` if namespaced, a uid."""
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict):
        return raw  # the api parser reports the missing name
    metadata = dict(metadata)
    if RESOURCES[KIND_TO_PLURAL[raw["kind"]]].namespaced and not metadata.get("namespace"):
        metadata["namespace"] = "default"
    if not metadata.get("uid") and isinstance(metadata.get("name"), str):
        metadata["uid"] = meta.uid(raw["kind"], metadata.get("namespace") or "", metadata["name"])
    return {**raw, "metadata": metadata}


def _latest_creation(objects: list[JSON]) -> float:
    """The latest creationTimestamp: the snapshot was taken no earlier. Without any, the fixed default.

    Deletion timestamps are not used: Kubernetes sets them a grace period into the future."""
    latest = None
    for obj in objects:
        stamp = obj["metadata"].get("creationTimestamp")
        if isinstance(stamp, str):
            seconds = fields.parse_time(stamp)
            latest = seconds if latest is None else max(latest, seconds)
    return DEFAULT_NOW if latest is None else latest


def _jobs(podgroups: list[JSON], pods: list[JSON]) -> list[JobMeta]:
    """One JobMeta per PodGroup, with the pods that name it (pod-group-name) and their owner's kind."""
    members: dict[tuple[str, str], list[JSON]] = {}
    for pod in pods:
        group = (pod["metadata"].get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME)
        if group:
            members.setdefault((pod["metadata"]["namespace"], group), []).append(pod)
    out = []
    for pg in podgroups:
        namespace, name = pg["metadata"]["namespace"], pg["metadata"]["name"]
        group_pods = members.get((namespace, name), [])
        refs = [ref for p in group_pods for ref in p["metadata"].get("ownerReferences") or []]
        owners = [str(ref.get("kind", "")) for ref in refs if isinstance(ref, dict)]
        out.append(
            JobMeta(
                name=name,
                namespace=namespace,
                queue=str((pg.get("spec") or {}).get("queue", "")),
                owner_kind=owners[0] if owners else "",
                task_names=tuple(p["metadata"]["name"] for p in group_pods),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Located:
    """Where the kept objects came from: the file, and the line of each object's document."""

    where: Where
    lines: dict[int, str]

    def at(self, obj: JSON) -> str:
        return self.lines.get(id(obj), self.where.source)


def _check_references(where: Located, by_kind: dict[str, list[JSON]]) -> None:
    """What one object says of another must hold in the file, as it would in a cluster the file describes:
    queue parents exist and form no cycle, PodGroups name a leaf queue, pods name a node of the file and a
    PriorityClass of the file or of KAI's install (a PodGroup may name any: the scheduler gives it the default
    priority, as it does in a cluster)."""
    queues = {q["metadata"]["name"]: q for q in by_kind["Queue"]}
    parents = {name: str((q.get("spec") or {}).get("parentQueue") or "") for name, q in queues.items()}
    for name, q in queues.items():
        seen, current = [name], parents[name]
        while current:
            if current not in queues:
                raise _error(where, q, "Queue", name, "spec.parentQueue", f"parent queue {current!r} does not exist")
            if current in seen:
                cycle = " → ".join([*seen, current])
                raise _error(where, q, "Queue", name, "spec.parentQueue", f"queues form a cycle: {cycle}")
            seen.append(current)
            current = parents[current]
    leaves = set(queues) - set(parents.values())
    for pg in by_kind["PodGroup"]:
        queue = str((pg.get("spec") or {}).get("queue") or "")
        key = f"{pg['metadata']['namespace']}/{pg['metadata']['name']}"
        if queue not in queues:
            raise _error(where, pg, "PodGroup", key, "spec.queue", f"queue {queue!r} does not exist")
        if queue not in leaves:
            raise _error(where, pg, "PodGroup", key, "spec.queue", f"queue {queue!r} is not a leaf queue")
    nodes = {n["metadata"]["name"] for n in by_kind["Node"]}
    classes = [str(pc["metadata"]["name"]) for pc in by_kind["PriorityClass"]]
    for pod in by_kind["Pod"]:
        spec = pod.get("spec") or {}
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        node = str(spec.get("nodeName") or "")
        if node and node not in nodes:
            raise _error(where, pod, "Pod", key, "spec.nodeName", f"node {node!r} does not exist")
        priority_class = str(spec.get("priorityClassName") or "")
        if priority_class and priority_class not in classes:
            message = (
                f"no PriorityClass {priority_class!r} (the API server refuses such a pod); "
                f"classes: {', '.join(sorted(classes))}"
            )
            raise _error(where, pod, "Pod", key, "spec.priorityClassName", message)


def _error(where: Where | Located, obj: JSON, kind: str, name: str, field: str, message: str) -> ObjectError:
    return ObjectError(kind, name, field, message, source=where.at(obj))
