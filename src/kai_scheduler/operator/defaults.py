"""The Config `kai-config` and the SchedulingShard `default`, applied by the operator from the install.

The operator install carries both, rendered from the values, in the ConfigMap `kai-config-manifest`
(`install.kai_config`); the operator plays the part of KAI's post-install Job that applies them. A custom resource
cannot be in the `kubectl apply` pass that creates its CRD, and the webhook that checks these two refuses them until
the admission component the operator renders serves, so it retries each pass until they are in.

An object is applied when the install's rendering of it differs from the one this process last put in place (so at
start, and after a `helm upgrade` or a new `kai manifests` changed the ConfigMap): created when missing, else
patched three ways, as `kubectl apply` does: the fields whose rendering changed since the last apply (recorded in the
annotation `kai.scheduler/install-applied`) are set, those it no longer renders removed, and every other field kept,
so a field a user changed in the cluster stays until the install's rendering of that field changes. Without the
ConfigMap (`kai operator` run on its own) both are created with an empty spec, KAI's defaults, when missing at start.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import orjson
import yaml

from kai_scheduler.api import kaiconfig, schedulingshard
from kai_scheduler.install import kai_config
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

ANNOTATION_APPLIED: Final = "kai.scheduler/install-applied"  # the spec last applied from the install, as JSON
RESOURCES: Final = {kaiconfig.KIND: "configs", schedulingshard.KIND: "schedulingshards"}


def empty() -> list[JSON]:
    """The Config `kai-config` and the SchedulingShard `default`, both with KAI's defaults (an empty spec)."""
    return [
        {"apiVersion": kaiconfig.API_VERSION, "kind": kaiconfig.KIND, "metadata": {"name": kaiconfig.NAME}, "spec": {}},
        {
            "apiVersion": schedulingshard.API_VERSION,
            "kind": schedulingshard.KIND,
            "metadata": {"name": kai_config.DEFAULT_SHARD},
            "spec": {},
        },
    ]


def three_way(last: Any, desired: Any) -> Any:
    """The merge patch (RFC 7386) from the last applied spec to `desired`: what changed, nulls for what went."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        before = last.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            inner = three_way(before, value)
            if inner:
                patch[key] = inner
        elif before != value or key not in last:
            patch[key] = value
    for key in last:
        if key not in desired:
            patch[key] = None
    return patch


class Defaults:
    """`ensure()` before each reconcile (one read of the ConfigMap a pass; the objects only when it changed)."""

    def __init__(self, store: ClusterStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self._in_place: dict[str, str] = {}  # "kind/name" → the install's spec (JSON) this process put in place
        self._fallback_done = False

    def ensure(self) -> None:
        try:
            wanted = self._from_install()
        except StoreError as err:
            log.warning("defaults not created yet, retrying", extra={"reason": str(err)})
            return
        if wanted is None:
            self._create_missing()
            return
        for obj in wanted:
            try:
                self._apply(obj)
            except StoreError as err:
                log.warning("defaults not created yet, retrying", extra={"object": _key(obj), "reason": str(err)})

    def _from_install(self) -> list[JSON] | None:
        """The install's objects (None without its ConfigMap); a document that is not an object is skipped."""
        try:
            found = self.store.get("configmaps", kai_config.CONFIG_MAP, self.namespace)
        except NotFound:
            return None
        out = []
        for key in (kai_config.CONFIG_KEY, kai_config.SHARD_KEY):
            try:
                obj = yaml.safe_load((found.get("data") or {}).get(key) or "")
            except yaml.YAMLError as err:
                log.warning("the install's ConfigMap does not parse", extra={"key": key, "reason": str(err)})
                continue
            if isinstance(obj, dict) and obj.get("kind") in RESOURCES:
                out.append(obj)
        return out

    def _apply(self, obj: JSON) -> None:
        key, spec = _key(obj), _spec_text(obj.get("spec") or {})
        if self._in_place.get(key) == spec:
            return
        resource, name = RESOURCES[obj["kind"]], obj["metadata"]["name"]
        body = {**obj, "metadata": {**obj["metadata"], "annotations": {ANNOTATION_APPLIED: spec}}}
        try:
            stored = self.store.get(resource, name)
        except NotFound:
            try:
                self.store.create(body)
                log.info("created the install's", extra={"kind": obj["kind"], "object": name})
            except AlreadyExists:
                return  # made meanwhile: looked at again next pass
            self._in_place[key] = spec
            return
        annotations = stored["metadata"].get("annotations") or {}
        if annotations.get(ANNOTATION_APPLIED) != spec:
            last = orjson.loads(annotations.get(ANNOTATION_APPLIED) or "{}")
            patch = {"metadata": {"annotations": {ANNOTATION_APPLIED: spec}}}
            changed = three_way(last, obj.get("spec") or {})
            if changed:
                patch["spec"] = changed
            self.store.patch(resource, name, "", patch)
            log.info("patched the install's", extra={"kind": obj["kind"], "object": name, "fields": sorted(changed)})
        self._in_place[key] = spec

    def _create_missing(self) -> None:
        """Without the install's ConfigMap: the empty defaults, created once when missing (never again after)."""
        if self._fallback_done:
            return
        try:
            for obj in empty():
                resource, name = RESOURCES[obj["kind"]], obj["metadata"]["name"]
                try:
                    self.store.get(resource, name)
                    continue
                except NotFound:
                    pass
                try:
                    self.store.create(obj)
                    log.info("created the default", extra={"kind": obj["kind"], "object": name})
                except AlreadyExists:
                    pass
        except StoreError as err:
            log.warning("defaults not created yet, retrying", extra={"reason": str(err)})
            return
        self._fallback_done = True


def _key(obj: JSON) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _spec_text(spec: Any) -> str:
    return orjson.dumps(spec, option=orjson.OPT_SORT_KEYS).decode()
