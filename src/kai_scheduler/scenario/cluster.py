"""Build the cluster half of a scenario: PriorityClasses, Namespaces, Topologies, Nodes and Queues (SCENARIOS.md).

Each builder returns the Kubernetes objects and the facts the jobs are checked against (node names and GPU
memory, the queue tree, class values, topology levels), gathered in `Cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.scenario import dra, meta, mig
from kai_scheduler.scenario.entry import MAX_OBJECTS, MAX_QUEUE_CREATED_SECONDS, Entry
from kai_scheduler.scenario.model import JSON

NODE_FIELDS = (
    "name",
    "count",
    "gpus",
    "gpuMemory",
    "migStrategy",
    "mig",
    "cpu",
    "memory",
    "pods",
    "labels",
    "taints",
    "unschedulable",
    "ready",
    "draGpus",
    "draDevices",
)
QUEUE_FIELDS = (
    "name",
    "parent",
    "priority",
    "createdAt",
    "resources",
    "preemptMinRuntime",
    "reclaimMinRuntime",
    "allowedNamespaces",
    "labels",
)
QUEUE_RESOURCE_FIELDS = ("quota", "overQuotaWeight", "limit")
QUEUE_RESOURCES = ("gpu", "cpu", "memory")
PRIORITY_CLASS_FIELDS = ("name", "value", "globalDefault")
TOPOLOGY_FIELDS = ("name", "levels")
NAMESPACE_FIELDS = ("name", "labels")
TOPOLOGY_LEVEL_FIELDS = ("nodeLabel", "alias")

DEFAULT_NODE_CPU = "64"
DEFAULT_NODE_MEMORY = "512Gi"
DEFAULT_NODE_PODS = 110
OMITTED_QUEUE_RESOURCE = {"quota": 0, "overQuotaWeight": 1, "limit": -1}
AGE_BASE = 86400.0
"""Nodes and queues are created one day before `now`; a queue `createdAt` seconds later (smaller = older)."""


@dataclass(slots=True)
class Cluster:
    """Names the jobs may refer to, and the classes a job's `priority: N` may add."""

    node_gpu_memory: dict[str, int | None] = field(default_factory=dict)  # MiB per GPU (node label)
    queue_children: dict[str, list[str]] = field(default_factory=dict)
    class_values: dict[str, int] = field(default_factory=dict)  # in declaration order
    topology_levels: dict[str, frozenset[str]] = field(default_factory=dict)  # labels and aliases
    synthesized: list[meta.Built] = field(default_factory=list)
    dra: dra.DraFacts = field(default_factory=dra.DraFacts)
    dra_objects: list[meta.Built] = field(default_factory=list)  # ResourceSlices of the nodes, claims' objects

    def class_for(self, value: int, where: str) -> str:
        """The first class with this value; else a new `priority-<value>` class, added to `synthesized`."""
        for name, known in self.class_values.items():
            if known == value:
                return name
        name = f"priority-{value}"
        self.class_values[name] = value
        self.synthesized.append(meta.Built(_priority_class(name, value, False), where))
        return name


def _priority_class(name: str, value: int, global_default: bool) -> JSON:
    return {
        "apiVersion": constants.PRIORITYCLASS_API_VERSION,
        "kind": "PriorityClass",
        "metadata": meta.metadata("PriorityClass", name),
        "value": value,
        "globalDefault": global_default,
    }


def priority_classes(top: Entry, cluster: Cluster) -> list[meta.Built]:
    """The declared classes, then each class KAI ships that the scenario does not declare (a declared one of
    the same name wins), as a KAI install creates them (§2)."""
    out = []
    for e in top.named_items("priorityClasses", "priorityClass"):
        e.check_keys(PRIORITY_CLASS_FIELDS)
        value = e.integer("value")
        if value is None:
            raise e.error("value", "missing value")
        cluster.class_values[e.name] = value
        out.append(meta.Built(_priority_class(e.name, value, e.flag("globalDefault")), e.where.at(e.data)))
    shipped = shipped_classes(set(cluster.class_values))
    cluster.class_values.update((pc["metadata"]["name"], pc["value"]) for pc in shipped)
    return [*out, *(meta.Built(pc, top.where.source) for pc in shipped)]


def shipped_classes(defined: set[str]) -> list[JSON]:
    """The PriorityClasses KAI ships whose names are not in `defined`, as the install creates them."""
    return [
        priorityclass.shipped_object(pc, meta.metadata("PriorityClass", pc.name))
        for pc in priorityclass.SHIPPED
        if pc.name not in defined
    ]


def namespaces(top: Entry) -> list[meta.Built]:
    """Namespace objects from `{name, labels}`: what a namespaceSelector of a pod (anti-)affinity term (and a
    queue's access control) matches. A namespace that jobs use but that is not listed has no labels."""
    out = []
    for e in top.named_items("namespaces", "namespace"):
        e.check_keys(NAMESPACE_FIELDS)
        obj = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": meta.metadata("Namespace", e.name, labels=e.text_map("labels") or None),
        }
        out.append(meta.Built(obj, e.where.at(e.data)))
    return out


def topologies(top: Entry, cluster: Cluster) -> list[meta.Built]:
    """Topology objects from `{name, levels}`; a level is a node label or `{nodeLabel, alias}`."""
    out = []
    for e in top.named_items("topologies", "topology"):
        e.check_keys(TOPOLOGY_FIELDS)
        levels: list[JSON] = []
        for i, raw in enumerate(e.sequence("levels")):
            if isinstance(raw, str):
                levels.append({"nodeLabel": raw})
                continue
            level = Entry(e.where, raw, e.kind, e.name, f"levels[{i}]") if isinstance(raw, dict) else None
            if level is None:
                raise e.error(f"levels[{i}]", f"expected a node label or a mapping, got {raw!r}")
            level.check_keys(TOPOLOGY_LEVEL_FIELDS)
            written = {"nodeLabel": level.required_text("nodeLabel"), "alias": level.text("alias")}
            levels.append({key: value for key, value in written.items() if value})
        names = {lv["nodeLabel"] for lv in levels} | {lv["alias"] for lv in levels if "alias" in lv}
        cluster.topology_levels[e.name] = frozenset(names)
        obj = {
            "apiVersion": constants.TOPOLOGY_API_VERSION,
            "kind": "Topology",
            "metadata": meta.metadata("Topology", e.name),
            "spec": {"levels": levels},
        }
        out.append(meta.Built(obj, e.where.at(e.data)))
    return out


def nodes(top: Entry, cluster: Cluster, now: float) -> list[meta.Built]:
    """Node objects; `count: N` makes name-0 … name-(N-1). Declared labels win over derived ones."""
    out = []
    for e in top.named_items("nodes", "node"):
        e.check_keys(NODE_FIELDS)
        count = e.integer("count", minimum=0, maximum=MAX_OBJECTS)
        names = [e.name] if count is None else [f"{e.name}-{i}" for i in range(count)]
        resources, derived = _node_resources(e)
        for name in names:
            if name in cluster.node_gpu_memory:
                raise e.error("name", f"duplicate node name {name!r}")
            labels = {constants.LABEL_HOSTNAME: name, **derived, **e.text_map("labels")}
            built = meta.Built(_node(e, name, labels, resources, now), e.where.at(e.data))
            cluster.node_gpu_memory[name] = meta.parse(built).gpu_memory_mib
            out.append(built)
            published = dra.node_devices(e, name, cluster.node_gpu_memory[name], cluster.dra)
            if published is not None:
                cluster.dra_objects.append(meta.Built(published, built.where))
    return out


def _node_resources(e: Entry) -> tuple[dict[str, str], dict[str, str]]:
    """The node's allocatable resources and the GPU labels derived from them."""
    gpus = e.integer("gpus", 0, minimum=0, maximum=MAX_OBJECTS) or 0
    gpu_memory = e.integer("gpuMemory", minimum=0)
    resources = {
        constants.RESOURCE_CPU: e.quantity("cpu", DEFAULT_NODE_CPU) or DEFAULT_NODE_CPU,
        constants.RESOURCE_MEMORY: e.quantity("memory", DEFAULT_NODE_MEMORY) or DEFAULT_NODE_MEMORY,
    }
    labels = {}
    if gpus > 0:
        resources[constants.RESOURCE_GPU] = str(gpus)
        labels[constants.LABEL_GPU_COUNT] = str(gpus)
    if gpu_memory:
        labels[constants.LABEL_GPU_MEMORY] = str(gpu_memory)
    mig_resources, mig_labels = mig.node_resources(e, gpus)
    resources.update(mig_resources)
    labels = {**mig_labels, **labels}
    resources[constants.RESOURCE_PODS] = str(e.integer("pods", DEFAULT_NODE_PODS, minimum=0))
    return resources, labels


def _node(e: Entry, name: str, labels: dict[str, str], resources: dict[str, str], now: float) -> JSON:
    spec: JSON = {}
    taints = e.mappings("taints")
    if taints:
        spec["taints"] = taints
    if e.flag("unschedulable"):
        spec["unschedulable"] = True
    ready = e.flag("ready", True)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta.metadata("Node", name, created=now - AGE_BASE, labels=labels),
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def queues(top: Entry, cluster: Cluster, now: float) -> list[meta.Built]:
    """Queue v2 objects; then every parent must exist and the parent links must not loop."""
    entries = top.named_items("queues", "queue")
    out = []
    for e in entries:
        e.check_keys(QUEUE_FIELDS)
        cluster.queue_children[e.name] = []
        out.append(meta.Built(_queue(e, now), e.where.at(e.data)))
    parents = {e.name: e.text("parent") for e in entries}
    for e in entries:
        parent = parents[e.name]
        if parent and parent not in parents:
            raise e.error("parent", f"no queue named {parent!r}; queues: {', '.join(parents)}")
        if parent:
            cluster.queue_children[parent].append(e.name)
    for e in entries:
        _check_acyclic(e, parents)
    return out


def _queue(e: Entry, now: float) -> JSON:
    spec: JSON = {}
    if e.text("parent"):
        spec["parentQueue"] = e.text("parent")
    spec["priority"] = e.integer("priority", constants.DEFAULT_QUEUE_PRIORITY)
    spec["resources"] = _queue_resources(e)
    for key in ("preemptMinRuntime", "reclaimMinRuntime"):
        runtime = e.duration(key)
        if runtime is not None:
            spec[key] = runtime[1]
    allowed = e.sequence("allowedNamespaces")
    for i, name in enumerate(allowed):
        if not isinstance(name, str) or not name:
            raise e.error("allowedNamespaces", f"item {i}: expected a namespace name, got {name!r}")
    if allowed:
        spec["allowedNamespaces"] = list(allowed)
    created_at = e.number("createdAt", 0.0, minimum=0, maximum=MAX_QUEUE_CREATED_SECONDS) or 0.0
    return {
        "apiVersion": constants.QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": meta.metadata(
            "Queue", e.name, created=now - AGE_BASE + created_at, labels=e.text_map("labels") or None
        ),
        "spec": spec,
    }


def _queue_resources(e: Entry) -> JSON:
    """Omitted resource: quota 0, weight 1, no limit. Omitted field of a written one: left out (CRD: 0)."""
    resources = e.child("resources", QUEUE_RESOURCES)
    out: JSON = {}
    for name in QUEUE_RESOURCES:
        written = resources.child(name, QUEUE_RESOURCE_FIELDS) if resources is not None else None
        if written is None:
            out[name] = dict(OMITTED_QUEUE_RESOURCE)
            continue
        values: JSON = {}
        for key in QUEUE_RESOURCE_FIELDS:
            value = written.number(key)
            if value is None:
                continue
            if value < 0 and (key == "overQuotaWeight" or value != -1):
                unlimited = "" if key == "overQuotaWeight" else " (or -1 for unlimited)"
                message = f"negative quantity {written.data[key]!r}; want at least 0{unlimited}"
                raise written.error(key, message)
            # Whole numbers as integers, as a user writes them; one past int64 (1e30) stays a float: JSON (and
            # the API server) holds no larger integer.
            values[key] = int(value) if value.is_integer() and abs(value) < 2**63 else value
        out[name] = values
    return out


def _check_acyclic(e: Entry, parents: dict[str, str]) -> None:
    """Report a loop of parent links on its first queue in file order (the others then never get here)."""
    chain, current = [e.name], parents[e.name]
    while current and current not in chain:
        chain.append(current)
        current = parents.get(current, "")
    if current == e.name:
        raise e.error("parent", f"queue cycle {' -> '.join([*chain, current])}")
