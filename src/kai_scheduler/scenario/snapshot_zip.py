"""KAI's scheduler snapshot (`snapshot.zip`, served by the `snapshot` plugin at `/get-snapshot`; §4, §9.2).

The zip holds one file, `snapshot.json` = `{config, schedulerParams, rawObjects}`:

- `config`: the scheduler configuration as loaded, in its config.yaml shape (`actions`, `tiers`, …);
- `schedulerParams`: the flags that change decisions, by the Go JSON names of KAI's `SchedulerParams`
  (durations as Go encodes a `time.Duration`: integer nanoseconds), and this scheduler's own flags beside them;
- `rawObjects`: per kind (the `RAW_OBJECTS` keys), the objects the scheduler's cache held, as Kubernetes JSON.

`encode` writes one; `load` reads one into a `Scenario` that `kai schedule` and `kai explain` run like any
manifest. Every problem of a file is one ScenarioError line naming the file and the field.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from kai_scheduler.api import PARSERS
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.kinds import RESOURCES
from kai_scheduler.scenario import manifest
from kai_scheduler.scenario.entry import Where
from kai_scheduler.scenario.model import JSON, Scenario
from kai_scheduler.scenario.source import Lines, ScenarioError

MEMBER = "snapshot.json"
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first bytes (an empty zip starts with its end record)

# rawObjects key (KAI's Go JSON name) → the resource it holds.
RAW_OBJECTS: dict[str, str] = {
    "pods": "pods",
    "nodes": "nodes",
    "queues": "queues",
    "podGroups": "podgroups",
    "bindRequests": "bindrequests",
    "priorityClasses": "priorityclasses",
    "topologies": "topologies",
    "resourceClaims": "resourceclaims",
    "resourceSlices": "resourceslices",
    "deviceClasses": "deviceclasses",
    "resourceClaimTemplates": "resourceclaimtemplates",  # not in KAI's snapshot: this scheduler reads them
    "namespaces": "namespaces",  # not in KAI's: written when --queue-access-control reads them
}
# Keys of KAI's snapshot for kinds this scheduler does not read: accepted in a KAI snapshot and left out.
KAI_UNREAD = frozenset({"configMaps", "persistentVolumeClaims", "csiStorageCapacities", "storageClasses", "csiDrivers"})
DRA_KINDS = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})
TOP_KEYS = ("config", "schedulerParams", "rawObjects")

# `Flags` field → its key in schedulerParams (KAI's Go name where KAI has the flag). Durations: nanoseconds.
PARAMS: dict[str, str] = {
    "scheduler_name": "schedulerName",
    "schedule_period": "schedulePeriod",
    "nodepool_label_key": "partitionParams.nodePoolLabelKey",
    "partition_label_value": "partitionParams.nodePoolLabelValue",
    "queue_label_key": "queueLabelKey",
    "restrict_node_scheduling": "restrictSchedulingNodes",
    "max_consolidation_preemptees": "maxNumberConsolidationPreemptees",
    "detailed_fit_errors": "detailedFitErrors",
    "update_pod_eviction_condition": "updatePodEvictionCondition",
    "use_scheduling_signatures": "useSchedulingSignatures",
    "full_hierarchy_fairness": "fullHierarchyFairness",
    "allow_consolidating_reclaim": "allowConsolidatingReclaim",
    "reclaim_protects_deserved": "reclaimProtectsDeserved",
    "pipelined_claims": "pipelinedClaims",
    "preemptor_placed_first": "preemptorPlacedFirst",
    "default_staleness_grace_period": "globalDefaultStalenessGracePeriod",
    "stuck_in_releasing_threshold": "stuckInReleasingThreshold",
    "queue_access_control": "queueAccessControl",
}
# KAI's params that do not change this scheduler's decisions (accepted, not used).
KAI_UNUSED_PARAMS = frozenset({"isInferencePreemptible", "scheduleCSIStorage", "numOfStatusRecordingWorkers"})
NANOS = 1_000_000_000


def encode(config: Mapping[str, Any], params: Mapping[str, Any], raw_objects: Mapping[str, list[JSON]]) -> bytes:
    """The zip of one snapshot (deflated; `snapshot.json` compact, keys in the order given)."""
    unknown = set(raw_objects) - set(RAW_OBJECTS)
    if unknown:
        raise ValueError(f"rawObjects: unknown key {sorted(unknown)[0]!r}")
    body = json.dumps(
        {"config": config, "schedulerParams": params, "rawObjects": raw_objects}, separators=(",", ":")
    ).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MEMBER, body)
    return out.getvalue()


def params_json(flags: object) -> dict[str, Any]:
    """schedulerParams of a `framework.config.Flags` (every field, durations in nanoseconds)."""
    out: dict[str, Any] = {}
    for field in fields(flags):  # type: ignore[arg-type]
        value = getattr(flags, field.name)
        key = PARAMS[field.name]
        if isinstance(value, float):
            value = round(value * NANOS)
        head, _, tail = key.partition(".")
        if tail:
            out.setdefault(head, {})[tail] = value
        else:
            out[key] = value
    return out


def is_snapshot(head: bytes) -> bool:
    """Whether a file's first bytes are a zip's (the only binary input `kai schedule` reads)."""
    return head[:4] in ZIP_MAGIC


def load(data: bytes, source: str) -> Scenario:
    """The snapshot's objects as a manifest Scenario, with its config and its params as `config.flags`."""
    doc = _document(data, source)
    config = doc.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ScenarioError(source, f"{MEMBER} config: expected an object, got {_short(config)}")
    if "flags" in config:
        raise ScenarioError(source, f"{MEMBER} config.flags: the flags are schedulerParams in a snapshot")
    flags = _flags(doc.get("schedulerParams"), source)
    documents, dra = _objects(doc.get("rawObjects"), source)
    # Errors name the file (JSON has no line table here); the cluster as it was, references unchecked.
    scenario = manifest.build(Where(source, Lines()), documents, check_references=False)
    return replace(scenario, config={**config, "flags": flags}, objects=[*scenario.objects, *dra])


def _document(data: bytes, source: str) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            if MEMBER not in names:
                held = ", ".join(names[:5]) or "nothing"
                raise ScenarioError(source, f"not a scheduler snapshot: no {MEMBER} in the zip (it holds {held})")
            body = archive.read(MEMBER)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError) as err:
        raise ScenarioError(source, f"not a readable zip (truncated or corrupt?): {err}") from None
    try:
        doc = json.loads(body)
    except UnicodeDecodeError as err:
        raise ScenarioError(source, f"{MEMBER}: not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ScenarioError(source, f"{MEMBER}:{err.lineno}: not JSON: {err.msg} (column {err.colno})") from None
    if not isinstance(doc, dict):
        raise ScenarioError(source, f"{MEMBER}: expected an object with {', '.join(TOP_KEYS)}, got {_short(doc)}")
    unknown = sorted(set(doc) - set(TOP_KEYS))
    if unknown:
        raise ScenarioError(source, f"{MEMBER}: unknown field {unknown[0]!r}; known: {', '.join(TOP_KEYS)}")
    if "rawObjects" not in doc:
        raise ScenarioError(source, f"{MEMBER}: rawObjects: missing (the captured objects)")
    return doc


def _flags(raw: Any, source: str) -> dict[str, Any]:
    """schedulerParams as config flags (underscore names; durations as seconds); missing ones take defaults."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScenarioError(source, f"{MEMBER} schedulerParams: expected an object, got {_short(raw)}")
    by_key = {key: name for name, key in PARAMS.items()}
    out: dict[str, Any] = {}
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "partitionParams" and isinstance(value, dict):
            flat.update({f"partitionParams.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    for key, value in flat.items():
        if key in KAI_UNUSED_PARAMS:
            continue
        name = by_key.get(key)
        if name is None:
            known = ", ".join(sorted(by_key))
            raise ScenarioError(source, f"{MEMBER} schedulerParams.{key}: unknown parameter; known: {known}")
        if name.endswith(("_period", "_threshold")):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ScenarioError(
                    source, f"{MEMBER} schedulerParams.{key}: expected a duration in nanoseconds, got {_short(value)}"
                )
            value = value / NANOS
        out[name] = value
    return out


def _objects(raw: Any, source: str) -> tuple[list[JSON], list[JSON]]:
    """(the manifest objects, the DRA objects), each with its kind and apiVersion set from its key."""
    if not isinstance(raw, dict):
        raise ScenarioError(source, f"{MEMBER} rawObjects: expected an object of lists, got {_short(raw)}")
    documents: list[JSON] = []
    dra: list[JSON] = []
    for key, items in raw.items():
        if key in KAI_UNREAD:
            continue
        resource = RAW_OBJECTS.get(key)
        if resource is None:
            known = ", ".join([*RAW_OBJECTS, *sorted(KAI_UNREAD)])
            raise ScenarioError(source, f"{MEMBER} rawObjects.{key}: unknown kind; known: {known}")
        if items is None:  # Go writes a nil slice as null
            continue
        if not isinstance(items, list):
            raise ScenarioError(source, f"{MEMBER} rawObjects.{key}: expected a list, got {_short(items)}")
        kind = RESOURCES[resource].kind
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ScenarioError(source, f"{MEMBER} rawObjects.{key}[{i}]: expected an object, got {_short(item)}")
            version = item.get("apiVersion") or RESOURCES[resource].api_version
            obj = {**item, "kind": item.get("kind") or kind, "apiVersion": version}
            if obj["kind"] != kind:
                raise ScenarioError(source, f"{MEMBER} rawObjects.{key}[{i}].kind: {obj['kind']!r} under {key}")
            if kind in DRA_KINDS:
                dra.append(_dra(obj, kind, source))
            elif kind != "Namespace":
                documents.append(obj)
            else:
                dra.append(_parsed(obj, kind, source))
    return documents, dra


def _dra(obj: JSON, kind: str, source: str) -> JSON:
    meta = obj.get("metadata")
    if kind in ("ResourceClaim", "ResourceClaimTemplate") and isinstance(meta, dict) and not meta.get("namespace"):
        obj = {**obj, "metadata": {**meta, "namespace": "default"}}
    return _parsed(obj, kind, source)


def _parsed(obj: JSON, kind: str, source: str) -> JSON:
    try:
        PARSERS[kind](obj)
    except ObjectError as err:
        raise ObjectError(err.kind, err.name, err.field, err.message, source=source) from None
    return obj


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
