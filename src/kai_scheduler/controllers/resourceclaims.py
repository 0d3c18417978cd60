"""The resourceclaim controller, as the embedded cluster and the simulator play it (Kubernetes'
kube-controller-manager runs it in a cluster; KAI relies on it).

- A pod's claim from a template gets its ResourceClaim, `<pod>-<claim>-<the first 5 characters of the pod's
  uid>`, made from the template, owned by the pod and annotated with the pod claim's name; the pod's
  `status.resourceClaimStatuses` names it.
- A claim's `reservedFor` loses the pods that are gone or finished; a claim reserved for nobody is deallocated;
  a claim made for a pod that is gone is deleted.

Pods of any scheduler are served, as in a cluster. A missing template is one warning line naming the pod.
"""

from __future__ import annotations

import contextlib
import logging

from kai_scheduler.api import dra
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

_DONE = ("Succeeded", "Failed")


class ResourceClaimController:
    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self._warned: set[str] = set()

    def reconcile(self) -> None:
        templates, _ = self.store.list("resourceclaimtemplates")
        claims, _ = self.store.list("resourceclaims")
        if not templates and not claims:
            return
        pods, _ = self.store.list("pods")
        by_template = {_key(t): t for t in templates}
        live = {str(p["metadata"].get("uid", "")): p for p in pods if p.get("status", {}).get("phase") not in _DONE}
        existing = {_key(c) for c in claims}
        for pod in pods:
            if pod.get("status", {}).get("phase") in _DONE or pod["metadata"].get("deletionTimestamp"):
                continue
            self._make_claims(pod, by_template, existing)
        for claim in claims:
            self._tidy(claim, live)

    def _make_claims(self, pod: JSON, templates: dict[str, JSON], existing: set[str]) -> None:
        meta = pod["metadata"]
        ns, name = meta.get("namespace", "default"), meta["name"]
        statuses = {s.get("name"): s for s in pod.get("status", {}).get("resourceClaimStatuses") or []}
        added = []
        for entry in pod.get("spec", {}).get("resourceClaims") or []:
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry.get("name") in statuses:
                continue
            template = templates.get(f"{ns}/{template_name}")
            if template is None:
                marker = f"{ns}/{name}/{template_name}"
                if marker not in self._warned:
                    self._warned.add(marker)
                    log.warning(f"pod {ns}/{name}: ResourceClaimTemplate {template_name!r} not found")
                continue
            # Kubernetes' controller adds a random suffix; a piece of the pod's uid keeps names apart as well
            # (a pod recreated under its old name is another pod) and the same in every run.
            claim_name = f"{name}-{entry['name']}-{str(meta.get('uid', ''))[:5]}".rstrip("-")
            if f"{ns}/{claim_name}" not in existing:
                with contextlib.suppress(AlreadyExists):
                    self.store.create(_claim(template, claim_name, entry["name"], meta))
                existing.add(f"{ns}/{claim_name}")
            added.append({"name": entry["name"], "resourceClaimName": claim_name})
        if added:
            merged = [*statuses.values(), *added]
            try:
                self.store.patch("pods", name, ns, {"status": {"resourceClaimStatuses": merged}}, "status")
            except StoreError as err:
                log.warning(f"pod {ns}/{name}: claim statuses not written: {err}")

    def _tidy(self, claim: JSON, live: dict[str, JSON]) -> None:
        meta = claim["metadata"]
        ns, name = meta.get("namespace", "default"), meta["name"]
        owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"), None)
        made_for_pod = owner is not None and dra.ANNOTATION_POD_CLAIM_NAME in (meta.get("annotations") or {})
        if made_for_pod and owner is not None and owner.get("uid") not in live:
            with contextlib.suppress(NotFound):
                self.store.delete("resourceclaims", name, ns)
            return
        status = claim.get("status") or {}
        users = status.get("reservedFor") or []
        live_users = [u for u in users if u.get("resource") != "pods" or u.get("uid") in live]
        if len(live_users) == len(users) and (live_users or "allocation" not in status):
            return
        new_status = dict(status)
        if live_users:
            new_status["reservedFor"] = live_users
        else:
            new_status.pop("reservedFor", None)
            new_status.pop("allocation", None)
        try:
            self.store.update_status({**claim, "status": new_status})
        except StoreError as err:
            log.warning(f"ResourceClaim {ns}/{name}: not released: {err}")


def _claim(template: JSON, name: str, pod_claim: str, pod_meta: JSON) -> JSON:
    spec = template.get("spec") or {}
    claim_meta = spec.get("metadata") or {}
    annotations = {**(claim_meta.get("annotations") or {}), dra.ANNOTATION_POD_CLAIM_NAME: pod_claim}
    metadata: JSON = {
        "name": name,
        "namespace": pod_meta.get("namespace", "default"),
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_meta["name"],
                "uid": pod_meta.get("uid", ""),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if claim_meta.get("labels"):
        metadata["labels"] = dict(claim_meta["labels"])
    return {
        "apiVersion": dra.API_VERSION,
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": spec.get("spec") or {},
    }


def _key(obj: JSON) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"
