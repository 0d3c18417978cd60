"""The shipped CRDs: identity, schemas that take KAI's examples, agreement with our parsers and the store.

An API server prunes fields its schema does not declare, silently; `violations` below reports them (and type,
enum and bound errors), so a field our parsers read or our writers write can never be dropped on the way.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from kai_scheduler.api import bindrequest, podgroup, queue, schedulingshard, topology
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.crd_manifests import crd_for, load_crds
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.queue import Queue
from kai_scheduler.api.topology import Topology
from kai_scheduler.store.interface import RESOURCES

JSON = dict[str, Any]


@functools.cache
def schema_of(kind: str) -> JSON:
    """The kind's schema, parsed once for the module (tests only read it)."""
    schema: JSON = crd_for(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def violations(schema: JSON, value: Any, path: str = "") -> list[str]:
    """What an API server would reject or prune in `value`; metadata is the server's, not the schema's."""
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        return [] if ok else [f"{path}: want int or string, got {value!r}"]
    if "type" not in schema and schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    problems = _scalar_violations(schema, value, path)
    if problems:
        return problems
    if isinstance(value, list):
        items = schema.get("items", {})
        return [p for i, item in enumerate(value) for p in violations(items, item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return _object_violations(schema, value, path)
    return []


_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": int | float,
}


def _scalar_violations(schema: JSON, value: Any, path: str) -> list[str]:
    want = schema.get("type")
    if want is None:
        return [f"{path}: the schema gives no type"]
    if not isinstance(value, _TYPES[want]) or (isinstance(value, bool) and want != "boolean"):
        return [f"{path}: want {want}, got {value!r}"]
    checks: list[tuple[str, Callable[[Any], bool]]] = [
        ("enum", lambda bound: value in bound),
        ("minimum", lambda bound: value >= bound),
        ("maximum", lambda bound: value <= bound),
        ("minItems", lambda bound: len(value) >= bound),
        ("maxItems", lambda bound: len(value) <= bound),
        ("minLength", lambda bound: len(value) >= bound),
        ("maxLength", lambda bound: len(value) <= bound),
        ("pattern", lambda bound: re.search(bound, value) is not None),
    ]
    return [
        f"{path}: {value!r} breaks {rule} {schema[rule]!r}"
        for rule, ok in checks
        if rule in schema and not ok(schema[rule])
    ]


def _object_violations(schema: JSON, value: JSON, path: str) -> list[str]:
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    problems = [f"{path}.{key}: required" for key in schema.get("required", ()) if key not in value]
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if where == "metadata":
            continue
        if key in properties:
            problems += violations(properties[key], item, where)
        elif isinstance(extra, dict):
            problems += violations(extra, item, where)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            problems.append(f"{where}: unknown field, would be pruned")
    return problems


def schema_at(schema: JSON, path: str) -> JSON | None:
    """The schema of a dotted path ("spec.subGroups[].name"); None if the schema does not declare it."""
    node: JSON | None = schema
    for part in path.split("."):
        is_list = part.endswith("[]")
        node = (node or {}).get("properties", {}).get(part.removesuffix("[]"))
        if node is not None and is_list:
            node = node.get("items")
    return node


# --- identity ---


@pytest.mark.parametrize(
    "kind, group, version, scope, plural, short_names, has_status",
    [
        pytest.param("Queue", "scheduling.run.ai", "v2", "Cluster", "queues", None, True, id="Queue"),
        pytest.param(
            "PodGroup", "scheduling.run.ai", "v2alpha2", "Namespaced", "podgroups", ["pg"], True, id="PodGroup is pg"
        ),
        pytest.param(
            "BindRequest", "scheduling.run.ai", "v1alpha2", "Namespaced", "bindrequests", None, True, id="BindRequest"
        ),
        pytest.param(
            "Topology", "kai.scheduler", "v1alpha1", "Cluster", "topologies", None, False, id="Topology has no status"
        ),
        pytest.param(
            "SchedulingShard", "kai.scheduler", "v1", "Cluster", "schedulingshards", None, True, id="SchedulingShard"
        ),
        pytest.param("Config", "kai.scheduler", "v1", "Cluster", "configs", None, True, id="Config"),
    ],
)
def test_crd_identity(
    kind: str, group: str, version: str, scope: str, plural: str, short_names: list[str] | None, has_status: bool
) -> None:
    crd = crd_for(kind)
    spec = crd["spec"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{plural}.{group}"
    assert (spec["group"], spec["scope"], spec["names"]["plural"]) == (group, scope, plural)
    assert spec["names"].get("shortNames") == short_names
    [only] = spec["versions"]
    assert (only["name"], only["served"], only["storage"]) == (version, True, True)
    assert ("status" in only.get("subresources", {})) == has_status


def test_load_crds_is_every_file_in_name_order() -> None:
    names = [crd["metadata"]["name"] for crd in load_crds()]
    assert names == [
        "configs.kai.scheduler",
        "schedulingshards.kai.scheduler",
        "topologies.kai.scheduler",
        "bindrequests.scheduling.run.ai",
        "podgroups.scheduling.run.ai",
        "queues.scheduling.run.ai",
    ]


@pytest.mark.parametrize("crd", load_crds(), ids=lambda crd: crd["spec"]["names"]["kind"])
def test_store_serves_each_crd_at_its_version_and_scope(crd: JSON) -> None:
    spec = crd["spec"]
    served = RESOURCES[spec["names"]["plural"]]
    assert served.kind == spec["names"]["kind"]
    assert served.api_version == f"{spec['group']}/{spec['versions'][0]['name']}"
    assert served.namespaced == (spec["scope"] == "Namespaced")


def test_queue_printer_columns() -> None:
    columns = crd_for("Queue")["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"]) for c in columns] == [
        ("Priority", ".spec.priority"),
        ("Parent", ".spec.parentQueue"),
        ("Children", ".status.childQueues"),
        ("DisplayName", ".spec.displayName"),
    ]


# --- samples (BEHAVIOR.md §1.1-1.4 examples, plus status as the controllers write it) ---

VALID = yaml.safe_load_all("""
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  parentQueue: org-1
  priority: 100
  reclaimMinRuntime: 10m
  resources:
    gpu:    {quota: 4,    overQuotaWeight: 1, limit: -1}
    cpu:    {quota: 8000, overQuotaWeight: 1, limit: -1}
    memory: {quota: 32000, overQuotaWeight: 1, limit: -1}
status:
  childQueues: [team-a-1]
  allocated: {nvidia.com/gpu: "1.5", cpu: 4000m, memory: 16Gi}
  requested: {nvidia.com/gpu: 2}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg-train-1, namespace: team-a}
spec:
  queue: team-a
  minMember: 4
  priorityClassName: train
  topologyConstraint: {topology: cluster-topology, requiredTopologyLevel: zone, preferredTopologyLevel: rack}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: disagg, namespace: team-a}
spec:
  queue: team-a
  priorityClassName: inference
  preemptibility: non-preemptible
  minSubGroup: 2
  markUnschedulable: false
  schedulingBackoff: 1
  preemptionDelay: 5m
  stalenessGracePeriod: -1s
  subGroups:
  - name: prefill
    minMember: 2
    topologyConstraint: {topology: cluster-topology, requiredTopologyLevel: rack}
  - {name: decode,  minMember: 3}
status:
  schedulingConditions:
  - type: UnschedulableOnNodePool
    nodePool: default
    status: "True"
    transitionID: "3"
    lastTransitionTime: "2026-01-01T00:00:00Z"
    reasons:
    - reason: OverLimit
      message: queue team-a is over its gpu limit
      details: {queueDetails: {name: team-a, queueResourceLimits: {nvidia.com/gpu: 4}}}
  resourcesStatus:
    allocated: {nvidia.com/gpu: "2"}
    requested: {nvidia.com/gpu: "5"}
---
apiVersion: scheduling.run.ai/v1alpha2
kind: BindRequest
metadata: {name: my-pod, namespace: team-a, labels: {selected-node: node-7}}
spec:
  podName: my-pod
  selectedNode: node-7
  receivedResourceType: Fraction
  receivedGPU: {count: 1, portion: "0.50"}
  selectedGPUGroups: ["3f6c-uuid"]
status: {phase: Failed, reason: node gone, failedAttempts: 2}
---
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: cluster-topology}
spec:
  levels:
  - {nodeLabel: cloud.provider.com/topology-block, alias: block}
  - {nodeLabel: cloud.provider.com/topology-rack,  alias: rack}
  - {nodeLabel: kubernetes.io/hostname}
""")
VALID_SAMPLES = [pytest.param(doc, id=f"{doc['kind']} {doc['metadata']['name']}") for doc in VALID]


def _podgroup(**spec: Any) -> JSON:
    return {"kind": "PodGroup", "metadata": {"name": "pg"}, "spec": {"queue": "q", **spec}}


def _object(kind: str, **fields: Any) -> JSON:
    return {"kind": kind, "metadata": {"name": "x"}, **fields}


INVALID_SAMPLES = [
    pytest.param(_podgroup(preemptibility="sometimes"), id="preemptibility outside its enum"),
    pytest.param(_podgroup(minMember=-1), id="negative minMember"),
    pytest.param(_podgroup(minMember="4"), id="minMember as a string"),
    pytest.param(_podgroup(subGroups=[{"minMember": 1}]), id="subgroup without a name"),
    pytest.param(_podgroup(subGroups=[{"name": "Not_A_Label"}]), id="subgroup name not a DNS label"),
    pytest.param(_podgroup(minMembers=2), id="misspelt field would be pruned"),
    pytest.param(
        _object("BindRequest", spec={"receivedResourceType": "Whole"}), id="receivedResourceType outside its enum"
    ),
    pytest.param(_object("BindRequest", status={"phase": "Binding"}), id="bind phase outside its enum"),
    pytest.param(_object("Queue", spec={"resources": {"gpu": {"quota": "4"}}}), id="queue quota as a string"),
    pytest.param(
        _object("Queue", spec={"resources": {"tpu": {"quota": 1}}}),
        id="queue resource other than gpu cpu memory would be pruned",
    ),
    pytest.param(_object("Topology", spec={"levels": []}), id="topology without levels"),
    pytest.param(
        _object("Topology", spec={"levels": [{"nodeLabel": f"l{i}"} for i in range(17)]}), id="topology over 16 levels"
    ),
    pytest.param(_object("Topology", spec={"levels": [{"alias": "a"}]}), id="level without nodeLabel"),
]


@pytest.mark.parametrize("sample", VALID_SAMPLES)
def test_schema_accepts_kai_examples(sample: JSON) -> None:
    assert violations(schema_of(sample["kind"]), sample) == []


@pytest.mark.parametrize("sample", INVALID_SAMPLES)
def test_schema_rejects(sample: JSON) -> None:
    assert violations(schema_of(sample["kind"]), sample) != []


@pytest.mark.parametrize("sample", VALID_SAMPLES)
def test_examples_validate_with_jsonschema(sample: JSON) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft7Validator(schema_of(sample["kind"])).validate(sample)


@pytest.mark.parametrize("sample", [p for p in INVALID_SAMPLES if "pruned" not in str(p.id)])
def test_bad_samples_fail_jsonschema(sample: JSON) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema_of(sample["kind"])).validate(sample)


# --- agreement with the parsers ---

PARSED_TYPES: dict[str, Any] = {"Queue": Queue, "PodGroup": PodGroup, "BindRequest": BindRequest, "Topology": Topology}


@pytest.mark.parametrize("sample", VALID_SAMPLES)
def test_what_our_writers_write_survives_the_schema(sample: JSON) -> None:
    written = PARSED_TYPES[sample["kind"]].from_dict(sample).to_dict()
    assert violations(schema_of(sample["kind"]), written) == []


def _paths(prefix: str, *names: str) -> list[str]:
    return [f"{prefix}.{name}" for name in names]


FIELDS = {
    "PodGroup": [
        *_paths(
            "spec",
            "minMember",
            "minSubGroup",
            "queue",
            "priorityClassName",
            "preemptibility",
            "topologyConstraint",
            "subGroups",
            "markUnschedulable",
            "schedulingBackoff",
            "preemptionDelay",
            "stalenessGracePeriod",
        ),
        *_paths("spec.topologyConstraint", "topology", "requiredTopologyLevel", "preferredTopologyLevel"),
        *_paths("spec.subGroups[]", "name", "minMember", "minSubGroup", "parent", "topologyConstraint"),
        "spec.subGroups[].topologyConstraint.requiredTopologyLevel",
        "status.conditions",
        *_paths("status.resourcesStatus", "allocated", "allocatedNonPreemptible", "requested"),
        *_paths(
            "status.schedulingConditions[]",
            "type",
            "nodePool",
            "status",
            "transitionID",
            "lastTransitionTime",
            "reasons",
            "reason",
            "message",
        ),
        "status.schedulingConditions[].reasons[].details.queueDetails",
        *_paths(
            "status.schedulingConditions[].reasons[].details.queueDetails",
            "name",
            "queueRequestedResources",
            "queueDeservedResources",
            "queueAllocatedResources",
            "queueAllocatedNonPreemptibleResources",
            "queueResourceLimits",
            "podGroupRequestedResources",
            "podGroupRequestedNonPreemptibleResources",
        ),
    ],
    "Queue": [
        *_paths("spec", "displayName", "parentQueue", "priority", "preemptMinRuntime", "reclaimMinRuntime"),
        *(
            path
            for r in ("gpu", "cpu", "memory")
            for path in _paths(f"spec.resources.{r}", "quota", "overQuotaWeight", "limit")
        ),
        *_paths("status", "childQueues", "allocated", "allocatedNonPreemptible", "requested", "conditions"),
        *_paths("status.conditions[]", "type", "status", "lastProbeTime", "lastTransitionTime", "reason", "message"),
    ],
    "BindRequest": [
        *_paths(
            "spec",
            "podName",
            "selectedNode",
            "receivedResourceType",
            "receivedGPU.count",
            "receivedGPU.portion",
            "selectedGPUGroups",
            "resourceClaimAllocations",
            "extendedResourceClaimAllocation",
            "predictedNUMAZones",
            "backoffLimit",
        ),
        *_paths("status", "phase", "reason", "failedAttempts"),
    ],
    "Topology": ["spec.levels", "spec.levels[].nodeLabel", "spec.levels[].alias"],
}


@pytest.mark.parametrize(
    "kind, path",
    [pytest.param(kind, path, id=f"{kind} {path}") for kind, paths in FIELDS.items() for path in paths],
)
def test_schema_declares_kai_field(kind: str, path: str) -> None:
    assert schema_at(schema_of(kind), path) is not None


# --- a manifest of each kind with every field KAI's CRDs declare ---

EVERY_FIELD: list[JSON] = list(yaml.safe_load_all((Path(__file__).parent / "kai_every_field.yaml").read_text()))
EXTENSIONS = {"Queue": {"spec.allowedNamespaces", "spec.allowedNamespaceSelector"}}  # this project's, not KAI's


def leaf_paths(schema: JSON, prefix: str = "") -> list[str]:
    """The dotted paths of a schema's leaves (a map's or a preserved object's path counts as one)."""
    properties = schema.get("properties")
    if properties:
        return [
            leaf
            for key, sub in properties.items()
            if key not in ("apiVersion", "kind", "metadata")
            for leaf in leaf_paths(sub, f"{prefix}.{key}" if prefix else key)
        ]
    if "items" in schema:
        return leaf_paths(schema["items"], f"{prefix}[]")
    return [prefix]


def is_set(obj: Any, path: str) -> bool:
    found = [obj]
    for part in path.split("."):
        key = part.removesuffix("[]")
        values = [item[key] for item in found if isinstance(item, dict) and key in item]
        found = [v for value in values for v in value] if part.endswith("[]") else values
    return bool(found)


@pytest.mark.parametrize("sample", EVERY_FIELD, ids=lambda d: f"{d['kind']} {d['metadata']['name']}")
def test_every_field_of_a_kai_manifest_is_kept(sample: JSON) -> None:
    """Nothing of it would be pruned or refused (tests/kube/test_crd_roundtrip.py: the real API server agrees)."""
    assert violations(schema_of(sample["kind"]), sample) == []


@pytest.mark.parametrize("kind", ["Queue", "PodGroup", "BindRequest", "Topology"])
def test_the_every_field_manifests_set_every_field(kind: str) -> None:
    """The samples above cover the whole schema: a field added to a CRD without a sample value fails here."""
    samples = [d for d in EVERY_FIELD if d["kind"] == kind]
    unset = [
        path
        for path in leaf_paths(schema_of(kind))
        if not any(path.startswith(e) for e in EXTENSIONS.get(kind, ())) and not any(is_set(d, path) for d in samples)
    ]
    assert unset == []


PARSERS: dict[str, ModuleType] = {
    "PodGroup": podgroup,
    "Queue": queue,
    "BindRequest": bindrequest,
    "Topology": topology,
    "SchedulingShard": schedulingshard,
}


def literal_paths(module: ModuleType) -> set[str]:
    """Every "spec.…" or "status.…" string literal a parser passes as a call's first argument."""
    paths = set()
    for call in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Constant):
            value = call.args[0].value
            if isinstance(value, str) and re.fullmatch(r"(spec|status)(\.[A-Za-z]+)+", value):
                paths.add(value)
    return paths


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_schema_declares_every_field_the_parser_reads(kind: str) -> None:
    paths = literal_paths(PARSERS[kind])
    assert paths, "found no field paths: has the parser's style changed?"
    assert sorted(p for p in paths if schema_at(schema_of(kind), p) is None) == []


@pytest.mark.parametrize(
    "kind, path, parser_values",
    [
        pytest.param("PodGroup", "spec.preemptibility", podgroup.PREEMPTIBILITY_VALUES, id="preemptibility"),
        pytest.param("BindRequest", "spec.receivedResourceType", bindrequest.RESOURCE_TYPES, id="receivedResourceType"),
        pytest.param("BindRequest", "status.phase", bindrequest.PHASES, id="bind phase"),
    ],
)
def test_enums_match_what_the_parser_accepts(kind: str, path: str, parser_values: tuple[str, ...]) -> None:
    field = schema_at(schema_of(kind), path)
    assert field is not None
    assert set(field["enum"]) == set(parser_values) - {""}  # "" is the parser's name for "unset"
