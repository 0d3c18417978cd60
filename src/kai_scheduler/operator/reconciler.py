"""The operator's reconcile: the Config `kai-config` and every SchedulingShard into Deployments, Services, scheduler
ConfigMaps and the components' ServiceAccounts in the Config's `spec.namespace`, else the operator's (KAI
`pkg/operator`, BEHAVIOR.md §1.5). A ServiceAccount already there and not the operator's (the install's) is left as
it is.

One pass (`reconcile`):
1. Read the Config and the shards; check each as the admission webhook does. A bad one (the webhook was off)
   gets Reconciled=False / Degraded=True with the reason, and its objects are left as they are: the last good
   rendering stays (a bad Config holds back every object, since all of them are rendered from it; the Config
   last read good in this process is used for the shards meanwhile).
2. Render what should exist (`operator.render`): each object carries a hash of its rendering in an annotation;
   set the pod webhooks' selectors from the Config (`operator.webhooks`).
3. Create what is missing; replace only an object whose hash differs (so a change of one shard rewrites that
   shard's objects and nothing else; its pod template carries the hash of its config.yaml, so only its Deployment
   rolls); delete the operator's objects (label `app.kubernetes.io/managed-by: kai-operator`) of shards that no
   longer exist, and those left in another namespace (the operator's own, or the one rendered into before) when
   the Config's namespace changed.
4. Write each CR's status conditions (Reconciled, Degraded; observedGeneration) when they changed.

A failing write is logged and reported on the CR it belongs to; the pass goes on with the rest.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Final

from kai_scheduler.admission.operator import ignored_message, parse_shard
from kai_scheduler.api import kaiconfig
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.api.fields import format_time
from kai_scheduler.api.schedulingshard import SchedulingShard
from kai_scheduler.install import values as install_values
from kai_scheduler.operator import render, webhooks
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

# Created in this order, deleted in reverse.
RESOURCES: Final = ("serviceaccounts", "configmaps", "services", "deployments")
RECONCILED: Final = "Reconciled"
DEGRADED: Final = "Degraded"
INVALID: Final = "InvalidSpec"
APPLY_FAILED: Final = "ApplyFailed"
DUPLICATE: Final = "DuplicatePartition"
CONFIG_INVALID: Final = "ConfigInvalid"


# A shard's memo: (uid, resourceVersion, hash of the values and usage DB address) it was made for, the shard, its
# objects, its problem.
_Rendered = tuple[tuple[str, str, str], SchedulingShard | None, dict[render.Key, JSON] | None, str]


@dataclass(slots=True)
class Outcome:
    """What one pass wrote: "resource/name" of each object created, replaced and deleted."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Verdict:
    """How one CR fared in this pass: a problem (reason, message) or none."""

    reason: str = ""
    message: str = ""
    note: str = ""  # said with Reconciled=True: what was accepted and not rendered

    def fail(self, reason: str, message: str) -> None:
        if not self.reason:
            self.reason, self.message = reason, message


class Reconciler:
    """One pass per `reconcile()`; keeps across passes only the last good Config and each shard's rendering."""

    def __init__(self, store: ClusterStore, namespace: str, clock: Clock, *, image: str | None = None) -> None:
        self.store = store
        self.namespace = namespace
        self.clock = clock
        self.base = render.base_values(namespace, image)
        self._good_config: kaiconfig.Config | None = None  # the last Config that parsed, in this process
        self._rendered_shards: dict[str, _Rendered] = {}  # by name: the last pass's, reused while unchanged
        self._reported_config = ""  # _spec_version of the Config last warned of (once per spec)
        self._rendered_into = namespace  # the namespace of the last pass that rendered

    def reconcile(self) -> Outcome:
        outcome = Outcome()
        config_obj = self._get_config()
        shards = sorted(self.store.list("schedulingshards")[0], key=lambda o: str(o["metadata"]["name"]))
        config_verdict = _Verdict()
        config = self._read_config(config_obj, config_verdict)
        values = render.with_config(self.base, config) if config is not None or config_obj is None else None
        owner = _owner(config_obj) if config_obj is not None else None
        namespace = str(values["namespace"]["name"]) if values is not None else self._rendered_into
        prometheus = config.prometheus if config is not None else kaiconfig.Prometheus()

        verdicts = {str(o["metadata"]["name"]): _Verdict() for o in shards}
        usage_db_url = prometheus.usage_db_url(namespace)
        desired, held = self._render_shards(shards, values, usage_db_url, verdicts, config_verdict)
        if values is not None:
            desired.update(render.shared_objects(values, owner, prometheus))

        existing, elsewhere = self._managed(namespace)
        desired = self._without_foreign_accounts(desired, existing, namespace)
        failures = self._apply(desired, existing, namespace, outcome)
        if values is not None:
            scoped, failure = webhooks.scope(self.store, values)
            outcome.updated += scoped
            if failure:
                config_verdict.fail(APPLY_FAILED, failure)
        self._delete([*((k[0], o) for k, o in existing.items()), *elsewhere], desired, held, values, outcome)
        if values is not None:
            self._rendered_into = namespace
        for key, message in failures.items():
            shard_name = desired[key]["metadata"]["labels"].get(render.LABEL_SHARD)
            target = verdicts.get(shard_name) if shard_name else config_verdict
            if target is not None:
                target.fail(APPLY_FAILED, message)
        for obj in shards:
            self._status(obj, verdicts[str(obj["metadata"]["name"])])
        if config_obj is not None:
            self._status(config_obj, config_verdict)
        if outcome.created or outcome.updated or outcome.deleted:
            log.info(
                "operator reconciled",
                extra={
                    "created_objects": outcome.created,
                    "updated_objects": outcome.updated,
                    "deleted_objects": outcome.deleted,
                },
            )
        return outcome

    def _render_shards(
        self,
        shards: list[JSON],
        values: install_values.Values | None,
        usage_db_url: str,
        verdicts: dict[str, _Verdict],
        config_verdict: _Verdict,
    ) -> tuple[dict[render.Key, JSON], set[str]]:
        """The objects of every good shard, and the names of the shards held back (their objects stay as they are).

        A shard parsed and rendered in the last pass is reused while its uid and resourceVersion (and the values
        rendered from) are the same, so an unchanged shard costs nothing after its first pass."""
        desired: dict[render.Key, JSON] = {}
        held: set[str] = set()
        partitions: dict[str, str] = {}
        values_key = f"{render.digest(values)}/{usage_db_url}" if values is not None else ""
        rendered: dict[str, _Rendered] = {}
        for obj in shards:
            meta = obj["metadata"]
            name = str(meta["name"])
            verdict = verdicts[name]
            key = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")), values_key)
            last = self._rendered_shards.get(name)
            if last is not None and last[0] == key:
                _, shard, objects, problem = last
            else:
                shard, objects, problem = self._render_shard(obj, values, usage_db_url)
            rendered[name] = (key, shard, objects, problem)
            if problem:
                verdict.fail(INVALID, problem)
            elif shard is not None and shard.spec.partition_label_value in partitions:
                other = partitions[shard.spec.partition_label_value]
                verdict.fail(DUPLICATE, f"partitionLabelValue {shard.spec.partition_label_value!r} is shard {other}'s")
            elif values is None:
                verdict.fail(CONFIG_INVALID, f"the Config {kaiconfig.NAME} is invalid: {config_verdict.message}")
            if verdict.reason or objects is None or shard is None:
                held.add(name)
                continue
            verdict.note = ignored_message(shard)
            partitions[shard.spec.partition_label_value] = name
            desired.update(objects)
        self._rendered_shards = rendered
        return desired, held

    @staticmethod
    def _render_shard(
        obj: JSON, values: install_values.Values | None, usage_db_url: str
    ) -> tuple[SchedulingShard | None, dict[render.Key, JSON] | None, str]:
        """The shard, its objects (None without values) and what is wrong with it ("" if nothing)."""
        try:
            shard = parse_shard(obj)
        except ObjectError as err:
            log.warning("invalid SchedulingShard, keeping its last good rendering", extra={"reason": str(err)})
            return None, None, str(err)
        if values is None:
            return shard, None, ""
        try:
            return shard, render.shard_objects(values, shard, _owner(obj), usage_db_url=usage_db_url), ""
        except UserError as err:
            return shard, None, str(err)

    # --- reading ---

    def _get_config(self) -> JSON | None:
        try:
            return self.store.get("configs", kaiconfig.NAME)
        except NotFound:
            return None

    def _read_config(self, obj: JSON | None, verdict: _Verdict) -> kaiconfig.Config | None:
        if obj is None:
            self._good_config = None
            return None
        try:
            config = kaiconfig.Config.from_dict(obj)
        except ObjectError as err:
            verdict.fail(INVALID, str(err))
            if self._first_told(obj):
                log.warning("invalid Config, keeping the last good rendering", extra={"reason": str(err)})
            return self._good_config
        warnings = config.warnings()
        if warnings:
            verdict.note = "; ".join(warnings)
            if self._first_told(obj):
                for line in warnings:
                    log.warning(line)
        self._good_config = config
        return config

    def _first_told(self, obj: JSON) -> bool:
        """Whether a warning about this spec of the Config is the first (one log line per spec, not per pass)."""
        version = _spec_version(obj)
        if version == self._reported_config:
            return False
        self._reported_config = version
        return True

    def _managed(self, namespace: str) -> tuple[dict[render.Key, JSON], list[tuple[str, JSON]]]:
        """The operator's objects in `namespace` by key, and those in the other namespaces it rendered into (a
        namespace it may not read there is passed over: its objects stay)."""
        selector = f"{render.LABEL_MANAGED_BY}={render.MANAGER}"
        here = {}
        for resource in RESOURCES:
            for obj in self.store.list(resource, namespace, selector)[0]:
                here[(resource, str(obj["metadata"]["name"]))] = obj
        elsewhere: list[tuple[str, JSON]] = []
        for other in sorted({self.namespace, self._rendered_into} - {namespace}):
            try:
                for resource in RESOURCES:
                    elsewhere += [(resource, obj) for obj in self.store.list(resource, other, selector)[0]]
            except StoreError as err:
                log.warning("operator could not list its objects", extra={"namespace": other, "reason": str(err)})
        return here, elsewhere

    def _without_foreign_accounts(
        self, desired: dict[render.Key, JSON], existing: dict[render.Key, JSON], namespace: str
    ) -> dict[render.Key, JSON]:
        """`desired` without the ServiceAccounts already in `namespace` and not the operator's: those (the install's,
        which its RBAC bindings name) are used as they are, never taken over, so never deleted by the operator."""
        missing = [k for k in desired if k[0] == "serviceaccounts" and k not in existing]
        if not missing:
            return desired
        try:
            there = {str(o["metadata"]["name"]) for o in self.store.list("serviceaccounts", namespace)[0]}
        except StoreError as err:
            log.warning("operator could not list ServiceAccounts", extra={"namespace": namespace, "reason": str(err)})
            there = {k[1] for k in missing}
        return {k: v for k, v in desired.items() if not (k in missing and k[1] in there)}

    # --- writing ---

    def _apply(
        self, desired: dict[render.Key, JSON], existing: dict[render.Key, JSON], namespace: str, outcome: Outcome
    ) -> dict[render.Key, str]:
        """Create or replace what differs; the failures by key."""
        failures: dict[render.Key, str] = {}
        for key in sorted(desired, key=lambda k: (RESOURCES.index(k[0]), k[1])):
            body = desired[key]
            stored = existing.get(key)
            want = body["metadata"]["annotations"][render.ANNOTATION_RENDERING_HASH]
            if stored is not None and _hash(stored) == want:
                continue
            name = f"{key[0]}/{key[1]}"
            try:
                if stored is None:
                    try:
                        self.store.create(body)
                        outcome.created.append(name)
                        continue
                    except AlreadyExists:  # there, but not labelled as ours (a static install): take it over
                        stored = self.store.get(key[0], key[1], namespace)
                self.store.update(_replacing(body, stored))
                outcome.updated.append(name)
            except StoreError as err:
                log.warning("operator could not write an object", extra={"object": name, "reason": str(err)})
                failures[key] = f"{name}: {err}"
        return failures

    def _delete(
        self,
        existing: list[tuple[str, JSON]],
        desired: dict[render.Key, JSON],
        held: set[str],
        values: install_values.Values | None,
        outcome: Outcome,
    ) -> None:
        """Delete the operator's objects that are no longer rendered (those of deleted shards, mostly, and those
        of another namespace). A held shard keeps its objects; with the Config unreadable nothing is deleted."""
        if values is None:
            return
        namespace = values["namespace"]["name"]
        for resource, obj in sorted(existing, key=_deletion_order):
            meta = obj["metadata"]
            key, where = (resource, str(meta["name"])), str(meta.get("namespace", ""))
            if (key in desired and where == namespace) or meta.get("labels", {}).get(render.LABEL_SHARD) in held:
                continue
            name = f"{key[0]}/{key[1]}" if where == namespace else f"{key[0]}/{key[1]} in {where}"
            try:
                self.store.delete(key[0], key[1], where)
                outcome.deleted.append(name)
            except NotFound:
                pass
            except StoreError as err:
                log.warning("operator could not delete an object", extra={"object": name, "reason": str(err)})

    def _status(self, obj: JSON, verdict: _Verdict) -> None:
        """Set Reconciled and Degraded (and observedGeneration) when they differ from what the CR says."""
        meta = obj["metadata"]
        generation = meta.get("generation", 0)
        ok = not verdict.reason
        wanted = [
            (
                RECONCILED,
                "True" if ok else "False",
                RECONCILED if ok else verdict.reason,
                verdict.message or verdict.note,
            ),
            (DEGRADED, "False" if ok else "True", "AsExpected" if ok else verdict.reason, verdict.message),
        ]
        status = obj.get("status") or {}
        old = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
        now = format_time(self.clock.now())
        conditions = []
        for kind, value, reason, message in wanted:
            before = old.get(kind, {})
            same = before.get("status") == value
            conditions.append(
                {
                    "type": kind,
                    "status": value,
                    "reason": reason,
                    "message": message,
                    "observedGeneration": generation,
                    "lastTransitionTime": before.get("lastTransitionTime", now) if same else now,
                }
            )
        new_status = {**status, "conditions": conditions, "observedGeneration": generation}
        if new_status == status:
            return
        resource = "configs" if obj["kind"] == kaiconfig.KIND else "schedulingshards"
        try:
            self.store.patch(resource, meta["name"], "", {"status": new_status}, "status")
        except NotFound:
            pass
        except StoreError as err:
            log.warning("operator could not write a status", extra={"object": meta["name"], "reason": str(err)})


def _deletion_order(item: tuple[str, JSON]) -> tuple[int, str, str]:
    """Deployments before Services before ConfigMaps (the reverse of creation), then namespace and name."""
    resource, meta = item[0], item[1]["metadata"]
    return (-RESOURCES.index(resource), str(meta.get("namespace", "")), str(meta["name"]))


def _spec_version(obj: JSON) -> str:
    """Which spec of the object this is: its uid and generation (a status write leaves both as they are)."""
    meta = obj["metadata"]
    return f"{meta.get('uid', '')}/{meta.get('generation', '')}"


def _owner(obj: JSON) -> render.Owner:
    meta = obj["metadata"]
    return render.Owner(str(obj["kind"]), str(meta["name"]), str(meta.get("uid", "")))


def _hash(obj: JSON) -> str:
    return str((obj["metadata"].get("annotations") or {}).get(render.ANNOTATION_RENDERING_HASH, ""))


def _replacing(body: JSON, stored: JSON) -> JSON:
    """`body` as a replacement of `stored`: its resourceVersion, and what the server allocated (a Service's IPs)."""
    out: dict[str, Any] = {
        **body,
        "metadata": {**body["metadata"], "resourceVersion": stored["metadata"]["resourceVersion"]},
    }
    if body["kind"] == "Service":
        spec = dict(body["spec"])
        for allocated in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if allocated in (stored.get("spec") or {}):
                spec[allocated] = stored["spec"][allocated]
        out["spec"] = spec
    return out
