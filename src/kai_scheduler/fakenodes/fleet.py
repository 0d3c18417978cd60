"""Create the fake nodes, or adopt the ones a previous run left (an idempotent restart), and delete them.

A node of the same name without the fake-node label is a real node: it is neither touched nor played, and
`ensure` reports it. An adopted node gets the wanted labels, taints and status (its other labels stay).
Some API servers drop `status` on create: the status is then written through the status subresource.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kai_scheduler.fakenodes.nodes import LABEL_FAKE_NODE
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FleetResult:
    created: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)     # real nodes in the way: not played
    uids: dict[str, str] = field(default_factory=dict)   # played node → uid

    @property
    def played(self) -> list[str]:
        return [*self.created, *self.adopted]


def ensure(store: ClusterStore, nodes: list[JSON]) -> FleetResult:
    out = FleetResult()
    for node in nodes:
        name = node["metadata"]["name"]
        try:
            written = _create(store, node)
            out.created.append(name)
        except AlreadyExists:
            adopted = _adopt(store, node)
            if adopted is None:
                out.foreign.append(name)
                continue
            written = adopted
            out.adopted.append(name)
        out.uids[name] = str(written["metadata"].get("uid") or "")
    return out


def _create(store: ClusterStore, node: JSON) -> JSON:
    created = store.create(node)
    if not (created.get("status") or {}).get("conditions"):
        created = store.patch("nodes", node["metadata"]["name"], "", {"status": node["status"]}, "status")
    log.info("fake node created", extra={"node": node["metadata"]["name"]})
    return created


def _adopt(store: ClusterStore, node: JSON) -> JSON | None:
    """The node as adopted, or None when it is not a fake node."""
    name = node["metadata"]["name"]
    try:
        existing = store.get("nodes", name)
    except NotFound:     # deleted meanwhile: create it again
        return _create(store, node)
    if (existing["metadata"].get("labels") or {}).get(LABEL_FAKE_NODE) != "true":
        log.warning("a node that is not a fake node has this name; leaving it alone",
                    extra={"node": name, "label": f"{LABEL_FAKE_NODE}=true"})
        return None
    store.patch("nodes", name, "", {"metadata": {"labels": node["metadata"]["labels"]},
                                    "spec": {"taints": node["spec"].get("taints")}})
    adopted = store.patch("nodes", name, "", {"status": node["status"]}, "status")
    log.info("fake node adopted", extra={"node": name})
    return adopted


def delete(store: ClusterStore, names: list[str], lease_namespace: str) -> int:
    """Delete the nodes and their leases; the number of nodes deleted. Pods on them are left to the pod GC."""
    deleted = 0
    for name in names:
        for resource, namespace in (("leases", lease_namespace), ("nodes", "")):
            try:
                store.delete(resource, name, namespace)
            except NotFound:
                continue
            if resource == "nodes":
                deleted += 1
    return deleted
