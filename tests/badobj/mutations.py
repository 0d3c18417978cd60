"""One field of a valid object set to a value an API server can hold but the scheduler must refuse or survive.

`mutations(obj)` lists every (path, value) change of one field: each leaf and each map or list set to each of
`BAD_VALUES` or removed, and each annotation or label the components read (`KEYS`) added with each bad string.
`apply(obj, mutation)` returns a changed deep copy. The bad values are what loose CRD schemas
(x-kubernetes-preserve-unknown-fields, int-or-string) and free-form strings (annotations, labels) let through.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import constants, crd_manifests
from tests.api import test_crds

JSON = dict[str, Any]
REMOVE = object()  # the key removed (or the list item dropped)

BAD_STRINGS: tuple[str, ...] = (
    "abc",
    "-1",
    "1.5",
    "1e400",
    "",
    "2Gi",
    "NaN",
    "-Inf",
    "9" * 40,
    "ünïcødé ☃",
    "0",
)
BAD_VALUES: tuple[Any, ...] = (
    *BAD_STRINGS,
    -1,
    0,
    1.5,
    1e30,
    True,
    None,
    [],
    {},
    ["a"],
    {"a": 1},
)

# Values YAML can hold but JSON cannot: a file `kai schedule` reads may carry them, the API server may not.
YAML_ONLY: tuple[Any, ...] = (math.inf, -math.inf, math.nan, 10**30)

# The annotations and labels the components read off pods, PodGroups and nodes (BEHAVIOR.md §2).
POD_ANNOTATIONS = (
    constants.ANNOTATION_POD_GROUP_NAME,
    constants.ANNOTATION_GPU_FRACTION,
    constants.ANNOTATION_GPU_MEMORY,
    constants.ANNOTATION_GPU_FRACTION_NUM_DEVICES,
    constants.ANNOTATION_GPU_FRACTION_CONTAINER_NAME,
    constants.ANNOTATION_MPS,
    constants.ANNOTATION_RECEIVED_RESOURCE_TYPE,
    constants.ANNOTATION_TOPOLOGY,
    constants.ANNOTATION_TOPOLOGY_REQUIRED,
    constants.ANNOTATION_TOPOLOGY_PREFERRED,
    constants.ANNOTATION_SEGMENT_SIZE,
    constants.ANNOTATION_SEGMENT_TOPOLOGY_REQUIRED,
    constants.ANNOTATION_SEGMENT_TOPOLOGY_PREFERRED,
    constants.ANNOTATION_BATCH_MIN_MEMBER,
    constants.ANNOTATION_PREEMPTION_DELAY,
    constants.ANNOTATION_STALENESS_GRACE_PERIOD,
    constants.ANNOTATION_SKIP_PODGROUPER,
    constants.ANNOTATION_FAKE_TERMINATES_AFTER,
)
POD_LABELS = (
    constants.LABEL_QUEUE,
    constants.LABEL_SUBGROUP_NAME,
    constants.LABEL_PRIORITY_CLASS,
    constants.LABEL_PREEMPTIBILITY,
    constants.LABEL_TASK_PRIORITY,
    constants.LABEL_GPU_GROUP,
    constants.DEFAULT_NODE_POOL_LABEL_KEY,
    constants.LABEL_KUBEFLOW_REPLICA_INDEX,
    constants.LABEL_LWS_WORKER_INDEX,
    constants.LABEL_LWS_GROUP_INDEX,
    constants.LABEL_JOBSET_JOB_INDEX,
)
PODGROUP_ANNOTATIONS = (
    constants.ANNOTATION_LAST_START_TIMESTAMP,
    constants.ANNOTATION_LAST_EVICTION_TIMESTAMP,
    constants.ANNOTATION_STALE_TIMESTAMP,
    constants.ANNOTATION_TOP_OWNER_METADATA,
    constants.ANNOTATION_PREEMPTION_DELAY,
    constants.ANNOTATION_STALENESS_GRACE_PERIOD,
    constants.ANNOTATION_TOPOLOGY,
    constants.ANNOTATION_TOPOLOGY_REQUIRED,
    constants.ANNOTATION_TOPOLOGY_PREFERRED,
)
NODE_LABELS = (
    constants.LABEL_GPU_MEMORY,
    constants.LABEL_GPU_COUNT,
    constants.LABEL_MIG_STRATEGY,
    "nvidia.com/gpu.product",
    constants.DEFAULT_NODE_POOL_LABEL_KEY,
    constants.LABEL_HOSTNAME,
)
KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "Pod": {"annotations": POD_ANNOTATIONS, "labels": POD_LABELS},
    "PodGroup": {"annotations": PODGROUP_ANNOTATIONS, "labels": (constants.DEFAULT_NODE_POOL_LABEL_KEY,)},
    "Node": {"labels": NODE_LABELS},
    "Queue": {"labels": (constants.DEFAULT_NODE_POOL_LABEL_KEY,)},
}


@dataclass(frozen=True)
class Mutation:
    path: tuple[str | int, ...]
    value: Any

    def __str__(self) -> str:
        where = ".".join(f"[{p}]" if isinstance(p, int) else p for p in self.path).replace(".[", "[")
        return f"{where} = {'<removed>' if self.value is REMOVE else repr(self.value)}"


def paths(obj: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every field path under `obj` but apiVersion, kind, metadata.name and metadata.namespace (the identity a
    store keys objects by, which the API server checks itself)."""
    items: Any = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        path = (*prefix, key)
        if path not in _IDENTITY:
            yield path
        if path != ("kind",):
            yield from paths(value, path)


_IDENTITY = frozenset({("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace")})


def mutations(obj: JSON, values: tuple[Any, ...] = BAD_VALUES) -> list[Mutation]:
    """Every one-field change of `obj` to one of `values` (or removed), in a fixed order."""
    out = [Mutation(p, v) for p in paths(obj) for v in (*values, REMOVE)]
    for where, keys in KEYS.get(obj.get("kind", ""), {}).items():
        out.extend(Mutation(("metadata", where, key), v) for key in keys for v in BAD_STRINGS)
    return out


def typed_mutations(obj: JSON) -> list[Mutation]:
    """The changes a strictly typed schema lets through (a core kind's): each field set only to bad values of its
    own JSON type, or removed; and the annotations and labels read, added with bad strings."""
    out = []
    for path in paths(obj):
        current = _at(obj, path)
        same = [v for v in BAD_VALUES if _json_type(v) == _json_type(current) and not isinstance(v, dict | list)]
        out.extend(Mutation(path, v) for v in (*same, REMOVE))
    for where, keys in KEYS.get(obj.get("kind", ""), {}).items():
        out.extend(Mutation(("metadata", where, key), v) for key in keys for v in BAD_STRINGS)
    return out


CORE_KINDS = frozenset({"Pod", "Node", "Namespace", "PriorityClass", "Job", "Deployment", "ReplicaSet", "StatefulSet"})


def server_mutations(obj: JSON) -> list[Mutation]:
    """The changes an API server would store: for a kind this project ships a CRD of, those its schema admits
    (`tests/api/test_crds.violations`); for a core kind, `typed_mutations`; for another project's CRD (a
    Kubeflow, Ray, LeaderWorkerSet or JobSet owner, whose schema varies by version), every change."""
    kind = obj.get("kind", "")
    if kind in CORE_KINDS:
        return typed_mutations(obj)
    try:
        schema = crd_manifests.crd_for(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    except KeyError:
        return mutations(obj)
    return [mu for mu in mutations(obj) if not test_crds.violations(schema, apply(obj, mu))]


def _at(obj: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def apply(obj: JSON, mutation: Mutation) -> JSON:
    out = copy.deepcopy(obj)
    node: Any = out
    for key in mutation.path[:-1]:
        if isinstance(key, str) and isinstance(node, dict) and node.get(key) is None:
            node[key] = {}
        node = node[key]
    last = mutation.path[-1]
    if mutation.value is REMOVE:
        if isinstance(node, dict):
            node.pop(last, None)
        else:
            del node[last]
    else:
        node[last] = copy.deepcopy(mutation.value)
    return out
