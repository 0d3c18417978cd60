"""Create the fake nodes, or adopt the ones a previous run left (an idempotent restart), and delete them.

A node of the same name without the fake-node label is a real node: it is neither touched nor played, and
`ensure` reports it. An adopted node gets the wanted labels, taints and status (its other labels stay).
Some API servers drop `status` on create: the status is then written through the status subresource.

An API server puts `node.kubernetes.io/not-ready:NoSchedule` on every new Node (the TaintNodesByCondition
admission plugin), and only a node-lifecycle controller takes it off once the node reports Ready. On a control
plane without one the nodes would never be schedulable, so a Ready fake node drops the condition taints itself
(`clear_condition_taints`), as that controller would; with a controller running, both agree.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kai_scheduler.fakenodes.nodes import LABEL_FAKE_NODE
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, Conflict, NotFound

log = logging.getLogger(__name__)

# The taints a node-lifecycle controller manages from the Ready condition (NoSchedule and NoExecute forms).
CONDITION_TAINT_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
_UNTAINT_ATTEMPTS = 5


@dataclass(slots=True)
class FleetResult:
    created: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)  # real nodes in the way: not played
    uids: dict[str, str] = field(default_factory=dict)  # played node → uid

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
    return clear_condition_taints(store, created)


def _adopt(store: ClusterStore, node: JSON) -> JSON | None:
    """The node as adopted, or None when it is not a fake node."""
    name = node["metadata"]["name"]
    try:
        existing = store.get("nodes", name)
    except NotFound:  # deleted meanwhile: create it again
        return _create(store, node)
    if (existing["metadata"].get("labels") or {}).get(LABEL_FAKE_NODE) != "true":
        log.warning(
            "a node that is not a fake node has this name; leaving it alone",
            extra={"node": name, "label": f"{LABEL_FAKE_NODE}=true"},
        )
        return None
    store.patch(
        "nodes",
        name,
        "",
        {"metadata": {"labels": node["metadata"]["labels"]}, "spec": {"taints": node["spec"].get("taints")}},
    )
    adopted = store.patch("nodes", name, "", {"status": node["status"]}, "status")
    log.info("fake node adopted", extra={"node": name})
    return clear_condition_taints(store, adopted)


def clear_condition_taints(store: ClusterStore, node: JSON) -> JSON:
    """The node without the not-ready/unreachable taints, written only when it has them.

    The patch carries the resourceVersion it was computed from, so a taint a controller adds meanwhile is
    never overwritten blindly: on a conflict the node is read again and the taints recomputed."""
    name = node["metadata"]["name"]
    for _ in range(_UNTAINT_ATTEMPTS):
        taints = (node.get("spec") or {}).get("taints") or []
        other_taints = [t for t in taints if t.get("key") not in CONDITION_TAINT_KEYS]
        if len(other_taints) == len(taints):
            return node
        patch = {
            "metadata": {"resourceVersion": node["metadata"].get("resourceVersion")},
            "spec": {"taints": other_taints or None},
        }
        try:
            node = store.patch("nodes", name, "", patch)
        except Conflict:
            node = store.get("nodes", name)
            continue
        log.info(
            "condition taints removed from a ready fake node",
            extra={
                "node": name,
                "taints": sorted({str(t.get("key")) for t in taints} - {str(t.get("key")) for t in other_taints}),
            },
        )
        return node
    raise Conflict(f"node {name}: taints kept changing over {_UNTAINT_ATTEMPTS} attempts to clear not-ready")


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
