"""The `ClusterStore` contract (tests taking `store`), then what only `MemoryStore` promises (`memory`)."""

from __future__ import annotations

import contextlib
import datetime
import threading
import time
import uuid
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.api.selectors import LabelSelector, Requirement
from kai_scheduler.store import label_index, object_rules
from kai_scheduler.store.interface import (
    JSON,
    AlreadyExists,
    ClusterStore,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Selector,
    StoreError,
    replaced,
)
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.merge_patch import merge_patch, strategic_merge_patch
from tests.store.conftest import START

# --- builders ---


def node(name: str, *, labels: dict[str, str] | None = None) -> JSON:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


def pod(
    name: str,
    *,
    namespace: str = "team-a",
    node_name: str = "",
    labels: dict[str, str] | None = None,
    grace: int | None = None,
    phase: str = "Running",
) -> JSON:
    spec: JSON = {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": phase},
    }


def podgroup(name: str, *, namespace: str = "team-a", min_member: int = 1) -> JSON:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": "team-a", "minMember": min_member},
    }


def configmap(name: str, *, namespace: str = "team-a", data: dict[str, str] | None = None) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {},
    }


def bind_request(for_pod: JSON) -> JSON:
    meta = for_pod["metadata"]
    owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "ownerReferences": [owner]},
        "spec": {"podName": meta["name"], "selectedNode": "node-1"},
    }


def rv(obj: JSON) -> int:
    return int(obj["metadata"]["resourceVersion"])


def bound_pod(store: ClusterStore, name: str = "p", **kwargs: Any) -> JSON:
    """A node-1 plus a pod bound to it: what graceful deletion needs."""
    with contextlib.suppress(AlreadyExists):
        store.create(node("node-1"))
    return store.create(pod(name, node_name="node-1", **kwargs))


# --- create, get, list ---


def test_create_stamps_uid_version_and_creation_time_from_the_clock(store: ClusterStore) -> None:
    created = store.create(pod("p"))
    meta = created["metadata"]
    assert meta["uid"]
    assert rv(created) > 0
    assert parse_time(meta["creationTimestamp"]) == START
    assert store.get("pods", "p", "team-a") == created


def test_create_keeps_a_given_creation_timestamp(store: ClusterStore) -> None:
    obj = pod("p")
    obj["metadata"]["creationTimestamp"] = "2025-06-01T12:00:00Z"
    assert store.create(obj)["metadata"]["creationTimestamp"] == "2025-06-01T12:00:00Z"


@pytest.mark.parametrize(
    "obj, resource, want_namespace",
    [
        pytest.param(
            {"kind": "Pod", "metadata": {"name": "p"}},
            "pods",
            "default",
            id="namespaced kind without namespace lands in default",
        ),
        pytest.param(
            {"kind": "Node", "metadata": {"name": "n", "namespace": "x"}},
            "nodes",
            None,
            id="cluster-scoped kind drops a namespace",
        ),
        pytest.param(
            {"kind": "Queue", "metadata": {"name": "q"}}, "queues", None, id="cluster-scoped CRD has no namespace"
        ),
    ],
)
def test_create_normalises_namespace(store: ClusterStore, obj: JSON, resource: str, want_namespace: str | None) -> None:
    created = store.create(obj)
    assert created["metadata"].get("namespace") == want_namespace
    assert created["apiVersion"]  # filled in from the kind
    assert store.get(resource, obj["metadata"]["name"], want_namespace or "") == created


def test_create_twice_is_already_exists_but_another_namespace_is_fine(store: ClusterStore) -> None:
    store.create(pod("p"))
    with pytest.raises(AlreadyExists):
        store.create(pod("p"))
    store.create(pod("p", namespace="team-b"))


@pytest.mark.parametrize(
    "resource, name, namespace",
    [
        pytest.param("pods", "nope", "team-a", id="missing name"),
        pytest.param("pods", "p", "team-b", id="right name in another namespace"),
        pytest.param("nodes", "p", "", id="another resource"),
    ],
)
def test_get_missing_is_not_found(store: ClusterStore, resource: str, name: str, namespace: str) -> None:
    store.create(pod("p"))
    with pytest.raises(NotFound):
        store.get(resource, name, namespace)


@pytest.mark.parametrize(
    "namespace, selector, want",
    [
        pytest.param(None, None, ["team-a/a1", "team-a/a2", "team-b/b1"], id="all, by namespace then name"),
        pytest.param("", None, ["team-a/a1", "team-a/a2", "team-b/b1"], id="empty namespace means all"),
        pytest.param("team-b", None, ["team-b/b1"], id="one namespace"),
        pytest.param(None, "role=worker", ["team-a/a2", "team-b/b1"], id="string equality"),
        pytest.param(None, "role!=worker", ["team-a/a1"], id="string inequality includes unlabelled"),
        pytest.param(None, "role in (leader,worker),gpu", ["team-a/a2"], id="string set and existence"),
        pytest.param(None, "!gpu", ["team-a/a1", "team-b/b1"], id="string absence"),
        pytest.param(None, "", ["team-a/a1", "team-a/a2", "team-b/b1"], id="empty string matches all"),
        pytest.param(
            None,
            LabelSelector(match_labels=(("role", "worker"),)),
            ["team-a/a2", "team-b/b1"],
            id="LabelSelector matchLabels",
        ),
        pytest.param(
            "team-a",
            LabelSelector(requirements=(Requirement("gpu", "Exists"),)),
            ["team-a/a2"],
            id="LabelSelector expression within a namespace",
        ),
    ],
)
def test_list_filters_by_namespace_and_selector(
    store: ClusterStore, namespace: str | None, selector: Selector, want: list[str]
) -> None:
    store.create(pod("b1", namespace="team-b", labels={"role": "worker"}))
    store.create(pod("a2", labels={"role": "worker", "gpu": "true"}))
    store.create(pod("a1"))
    items, _ = store.list("pods", namespace, selector)
    assert [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in items] == want


@pytest.mark.parametrize(
    "selector", ["role=worker", "gpu", "role in (leader,worker)", "role=worker,!gpu", "role notin (worker)", "!gpu", ""]
)
def test_list_by_selector_follows_label_changes_and_deletions(memory: MemoryStore, selector: str) -> None:
    memory.create(pod("a", labels={"role": "worker", "gpu": "true"}))
    memory.create(pod("b", labels={"role": "worker"}))
    memory.create(pod("c", labels={"role": "leader"}))
    memory.create(pod("d"))
    memory.patch("pods", "a", "team-a", {"metadata": {"labels": {"gpu": None}}})  # label removed
    memory.patch("pods", "d", "team-a", {"metadata": {"labels": {"gpu": "true", "role": "worker"}}})
    memory.update({**memory.get("pods", "c", "team-a"), "metadata": {"name": "c", "namespace": "team-a"}})
    memory.delete("pods", "b", "team-a", grace_period_seconds=0)
    everything, _ = memory.list("pods")
    parsed = label_index.parse_selector(selector)
    want = [
        o["metadata"]["name"] for o in everything if parsed is None or parsed.matches(o["metadata"].get("labels") or {})
    ]
    assert [o["metadata"]["name"] for o in memory.list("pods", None, selector)[0]] == want


def test_list_returns_the_latest_resource_version(store: ClusterStore) -> None:
    store.create(pod("p"))
    last = store.create(podgroup("pg"))
    _, version = store.list("pods")
    assert int(version) == rv(last)


def test_resource_versions_increase_with_every_write(store: ClusterStore) -> None:
    seen = [rv(store.create(podgroup("pg")))]
    seen.append(rv(store.patch("podgroups", "pg", "team-a", {"spec": {"minMember": 2}})))
    seen.append(rv(store.update_status({**store.get("podgroups", "pg", "team-a"), "status": {"x": 1}})))
    seen.append(rv(store.update(podgroup("pg", min_member=3))))
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_a_write_that_changes_nothing_keeps_the_version(store: ClusterStore) -> None:
    created = store.create(podgroup("pg"))
    assert store.update(created) == created
    assert store.patch("podgroups", "pg", "team-a", {"spec": {"minMember": 1}}) == created


# --- update, update_status, patch ---


def test_update_with_a_stale_version_is_a_conflict(store: ClusterStore) -> None:
    stale = store.create(podgroup("pg"))
    store.patch("podgroups", "pg", "team-a", {"spec": {"minMember": 2}})
    stale["spec"]["minMember"] = 5
    with pytest.raises(Conflict):
        store.update(stale)
    del stale["metadata"]["resourceVersion"]
    assert store.update(stale)["spec"]["minMember"] == 5  # no version: unconditional


def test_update_of_a_missing_object_is_not_found(store: ClusterStore) -> None:
    with pytest.raises(NotFound):
        store.update(podgroup("ghost"))


def test_update_keeps_status_of_kinds_with_a_status_subresource(store: ClusterStore) -> None:
    store.create(podgroup("pg"))
    store.update_status({**podgroup("pg"), "status": {"phase": "Running"}})
    changed = {**podgroup("pg", min_member=4), "status": {"phase": "Overwritten"}}
    got = store.update(changed)
    assert got["spec"]["minMember"] == 4
    assert got["status"] == {"phase": "Running"}


def test_update_replaces_kinds_without_status_whole(store: ClusterStore) -> None:
    created = store.create(configmap("c", data={"a": "1"}))
    got = store.update(configmap("c", data={"b": "2"}))
    assert got["data"] == {"b": "2"}
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


def test_update_status_changes_only_status(store: ClusterStore) -> None:
    created = store.create(podgroup("pg"))
    sent = {**podgroup("pg", min_member=9), "status": {"phase": "Running"}}
    sent["metadata"]["labels"] = {"sneaky": "yes"}
    got = store.update_status(sent)
    assert got["status"] == {"phase": "Running"}
    assert got["spec"] == created["spec"]
    assert "labels" not in got["metadata"]


def test_update_status_with_a_stale_version_is_a_conflict(store: ClusterStore) -> None:
    stale = store.create(podgroup("pg"))
    store.update_status({**podgroup("pg"), "status": {"phase": "A"}})
    with pytest.raises(Conflict):
        store.update_status({**stale, "status": {"phase": "B"}})


@pytest.mark.parametrize(
    "patch, want_spec",
    [
        pytest.param({"spec": {"minMember": 3}}, {"queue": "team-a", "minMember": 3}, id="sets a key"),
        pytest.param({"spec": {"minMember": None}}, {"queue": "team-a"}, id="null deletes a key"),
        pytest.param(
            {"spec": {"subGroups": [{"name": "x"}]}},
            {"queue": "team-a", "minMember": 1, "subGroups": [{"name": "x"}]},
            id="adds a list",
        ),
        pytest.param(
            {"spec": {"topologyConstraint": {"topology": "t", "requiredTopologyLevel": None}}},
            {"queue": "team-a", "minMember": 1, "topologyConstraint": {"topology": "t"}},
            id="nested object merges and drops nulls",
        ),
    ],
)
def test_merge_patch_of_the_object(store: ClusterStore, patch: JSON, want_spec: JSON) -> None:
    store.create(podgroup("pg"))
    assert store.patch("podgroups", "pg", "team-a", patch)["spec"] == want_spec


def test_merge_patch_replaces_lists_whole(store: ClusterStore) -> None:
    obj = podgroup("pg")
    obj["spec"]["subGroups"] = [{"name": "a"}, {"name": "b"}]
    store.create(obj)
    got = store.patch("podgroups", "pg", "team-a", {"spec": {"subGroups": [{"name": "c"}]}})
    assert got["spec"]["subGroups"] == [{"name": "c"}]


def test_strategic_patch_merges_conditions_by_type(store: ClusterStore) -> None:
    """What the scheduler writes on a pod: its condition replaces the one of the same type, the others stay
    (a merge patch would replace the whole list and drop the kubelet's conditions)."""
    obj = pod("p")
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    store.create(obj)
    disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    store.patch("pods", "p", "team-a", {"status": {"conditions": [disrupted]}}, "status", strategic=True)
    got = store.patch(
        "pods",
        "p",
        "team-a",
        {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        "status",
        strategic=True,
    )
    assert got["status"]["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "PodScheduled", "status": "True"},
        disrupted,
    ]
    merged = store.patch("pods", "p", "team-a", {"status": {"conditions": [disrupted]}}, "status")
    assert merged["status"]["conditions"] == [disrupted]


def test_status_patch_touches_only_status_and_object_patch_ignores_status(store: ClusterStore) -> None:
    store.create(podgroup("pg"))
    store.patch("podgroups", "pg", "team-a", {"status": {"a": 1, "b": 2}}, subresource="status")
    got = store.patch(
        "podgroups", "pg", "team-a", {"status": {"b": None}, "spec": {"minMember": 7}}, subresource="status"
    )
    assert got["status"] == {"a": 1}
    assert got["spec"]["minMember"] == 1
    got = store.patch("podgroups", "pg", "team-a", {"status": {"a": 99}, "metadata": {"labels": {"x": "y"}}})
    assert got["status"] == {"a": 1}
    assert got["metadata"]["labels"] == {"x": "y"}


def test_patch_cannot_change_the_name(store: ClusterStore) -> None:
    store.create(podgroup("pg"))
    got = store.patch("podgroups", "pg", "team-a", {"metadata": {"name": "other"}})
    assert got["metadata"]["name"] == "pg"


@pytest.mark.parametrize(
    ("resource", "name", "subresource"),
    [("podgroups", "pg", ""), ("pods", "p", ""), ("pods", "p", "status")],
)
def test_a_patch_naming_another_uid_is_refused_as_the_object_replaced(
    store: ClusterStore, resource: str, name: str, subresource: str
) -> None:
    """The API server validates a patched `metadata.uid` as immutable (kube-apiserver v1.32 answers 422 with the
    field as its cause, for a custom resource, a pod, and a pod's status): a writer that names the uid it read
    writes to that object only, never to a newer one of the same name."""
    created = store.create(podgroup(name) if resource == "podgroups" else pod(name))
    with pytest.raises(Invalid) as refused:
        store.patch(resource, name, "team-a", {"metadata": {"uid": "older", "labels": {"x": "y"}}}, subresource)
    assert replaced(refused.value)
    assert [field for field, _ in refused.value.causes] == ["metadata.uid"]
    assert store.get(resource, name, "team-a")["metadata"].get("labels") == created["metadata"].get("labels")
    uid = created["metadata"]["uid"]
    got = store.patch(resource, name, "team-a", {"metadata": {"uid": uid, "labels": {"x": "y"}}})
    assert got["metadata"]["labels"] == {"x": "y"}


def test_a_custom_resources_status_patch_ignores_the_uid(store: ClusterStore) -> None:
    """As the API server does (tried on v1.32): a CRD's status subresource keeps the stored metadata whole."""
    created = store.create(podgroup("pg"))
    got = store.patch(
        "podgroups", "pg", "team-a", {"metadata": {"uid": "older"}, "status": {"phase": "Running"}}, "status"
    )
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["status"] == {"phase": "Running"}


def test_an_eviction_naming_another_uid_is_refused(store: ClusterStore) -> None:
    created = bound_pod(store)
    with pytest.raises(Conflict) as refused:
        store.evict("team-a", "p", "older")
    assert replaced(refused.value)
    assert store.get("pods", "p", "team-a")["metadata"].get("deletionTimestamp") is None
    store.evict("team-a", "p", created["metadata"]["uid"])
    assert store.get("pods", "p", "team-a")["metadata"].get("deletionTimestamp") is not None


def test_patch_with_a_stale_version_is_a_conflict(store: ClusterStore) -> None:
    stale = store.create(podgroup("pg"))
    store.patch("podgroups", "pg", "team-a", {"spec": {"minMember": 2}})
    with pytest.raises(Conflict):
        store.patch("podgroups", "pg", "team-a", {"metadata": {"resourceVersion": str(rv(stale))}})


def test_patch_of_a_missing_object_is_not_found(store: ClusterStore) -> None:
    with pytest.raises(NotFound):
        store.patch("podgroups", "ghost", "team-a", {"spec": {}})


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda s: s.get("widgets", "w"), id="get"),
        pytest.param(lambda s: s.list("widgets"), id="list"),
        pytest.param(lambda s: s.watch("widgets", ""), id="watch"),
        pytest.param(lambda s: s.create({"kind": "Widget", "metadata": {"name": "w"}}), id="create by kind"),
        pytest.param(lambda s: s.patch("widgets", "w", "", {}), id="patch"),
        pytest.param(lambda s: s.delete("widgets", "w"), id="delete"),
    ],
)
def test_unknown_resource_is_invalid(store: ClusterStore, call: Any) -> None:
    with pytest.raises(Invalid, match="unknown"):
        call(store)


def test_store_errors_carry_kubernetes_reasons(store: ClusterStore) -> None:
    with pytest.raises(StoreError) as caught:
        store.get("pods", "ghost", "team-a")
    assert caught.value.reason == "NotFound"


# --- delete, bind, evict ---


def test_graceful_pod_delete_marks_then_grace_zero_removes(store: ClusterStore, clock: ManualClock) -> None:
    bound_pod(store)
    _, since = store.list("pods")
    clock.advance(10)
    store.delete("pods", "p", "team-a", grace_period_seconds=20)
    terminating = store.get("pods", "p", "team-a")
    assert parse_time(terminating["metadata"]["deletionTimestamp"]) == START + 10 + 20  # now + grace
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 20
    store.delete("pods", "p", "team-a", grace_period_seconds=0)
    with pytest.raises(NotFound):
        store.get("pods", "p", "team-a")
    assert [e.type for e in store.watch("pods", since)] == ["MODIFIED", "DELETED"]


def test_repeated_graceful_delete_keeps_the_first_deadline(store: ClusterStore, clock: ManualClock) -> None:
    bound_pod(store)
    store.delete("pods", "p", "team-a", grace_period_seconds=20)
    first = store.get("pods", "p", "team-a")
    clock.advance(5)
    store.delete("pods", "p", "team-a", grace_period_seconds=20)
    assert store.get("pods", "p", "team-a") == first


@pytest.mark.parametrize(
    "make, grace",
    [
        pytest.param(lambda s: bound_pod(s), 0, id="grace zero removes at once"),
        pytest.param(lambda s: s.create(pod("p")), 30, id="unbound pod goes at once"),
        pytest.param(lambda s: bound_pod(s, phase="Succeeded"), 30, id="finished pod goes at once"),
        pytest.param(lambda s: s.create(podgroup("p")), 30, id="other kinds ignore grace"),
    ],
)
def test_delete_removes_immediately(store: ClusterStore, make: Any, grace: int) -> None:
    resource = "podgroups" if make(store)["kind"] == "PodGroup" else "pods"
    store.delete(resource, "p", "team-a", grace_period_seconds=grace)
    with pytest.raises(NotFound):
        store.get(resource, "p", "team-a")


@pytest.mark.parametrize(
    "pod_grace, want",
    [
        pytest.param(None, 30, id="pod without terminationGracePeriodSeconds gets 30s"),
        pytest.param(5, 5, id="pod's terminationGracePeriodSeconds wins"),
    ],
)
@pytest.mark.parametrize("how", ["delete", "evict"])
def test_default_grace_comes_from_the_pod(store: ClusterStore, pod_grace: int | None, want: int, how: str) -> None:
    bound_pod(store, grace=pod_grace)
    if how == "evict":
        store.evict("team-a", "p")
    else:
        store.delete("pods", "p", "team-a")
    meta = store.get("pods", "p", "team-a")["metadata"]
    assert meta["deletionGracePeriodSeconds"] == want
    assert parse_time(meta["deletionTimestamp"]) == START + want


def test_delete_missing_is_not_found(store: ClusterStore) -> None:
    with pytest.raises(NotFound):
        store.delete("pods", "ghost", "team-a")
    with pytest.raises(NotFound):
        store.evict("team-a", "ghost")


def test_bind_sets_node_name_and_a_second_bind_conflicts(store: ClusterStore) -> None:
    store.create(node("node-1"))
    store.create(node("node-2"))
    store.create(pod("p"))
    store.bind("team-a", "p", "node-1")
    got = store.get("pods", "p", "team-a")
    assert got["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= got["status"]["conditions"][0].items()
    with pytest.raises(Conflict):
        store.bind("team-a", "p", "node-2")
    with pytest.raises(Conflict):
        store.bind("team-a", "p", "node-1")


def test_a_bind_with_another_pods_uid_conflicts_and_leaves_the_pod(store: ClusterStore) -> None:
    """The Binding's uid is a precondition (KAI's binder sends its pod's): a pod deleted and made again under
    its name is not bound by a request of the first."""
    store.create(node("node-1"))
    uid = store.create(pod("p"))["metadata"]["uid"]
    with pytest.raises(
        Conflict, match=f"Precondition failed: UID in precondition: earlier-uid, UID in object meta: {uid}"
    ):
        store.bind("team-a", "p", "node-1", "earlier-uid")
    assert "nodeName" not in store.get("pods", "p", "team-a")["spec"]
    store.bind("team-a", "p", "node-1", uid)
    assert store.get("pods", "p", "team-a")["spec"]["nodeName"] == "node-1"


@pytest.mark.parametrize(
    "pod_name, node_name, error",
    [
        pytest.param("ghost", "node-1", NotFound, id="missing pod is NotFound"),
        pytest.param("p", "ghost-node", Invalid, id="missing node is Invalid"),
    ],
)
def test_bind_rejects(store: ClusterStore, pod_name: str, node_name: str, error: type[StoreError]) -> None:
    store.create(node("node-1"))
    store.create(pod("p"))
    with pytest.raises(error):
        store.bind("team-a", pod_name, node_name)
    assert "nodeName" not in store.get("pods", "p", "team-a")["spec"]


# --- watch ---


def test_watch_yields_the_resource_events_after_a_version_in_order(store: ClusterStore) -> None:
    store.create(pod("before"))
    _, since = store.list("pods")
    store.create(pod("p"))
    store.create(podgroup("pg"))  # another resource: not in the pod watch
    store.patch("pods", "p", "team-a", {"metadata": {"labels": {"x": "1"}}})
    store.delete("pods", "p", "team-a")
    events = list(store.watch("pods", since))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "p"),
        ("MODIFIED", "p"),
        ("DELETED", "p"),
    ]
    versions = [rv(e.object) for e in events]
    assert versions == sorted(versions) and versions[0] > int(since)
    assert events[1].object["metadata"]["labels"] == {"x": "1"}
    resumed = list(store.watch("pods", events[0].object["metadata"]["resourceVersion"]))
    assert [e.type for e in resumed] == ["MODIFIED", "DELETED"]


def test_a_watch_with_a_selector_sends_what_comes_in_as_added_and_what_leaves_as_deleted(store: ClusterStore) -> None:
    store.create(pod("in", labels={"app": "batch"}))
    _, since = store.list("pods")
    store.create(pod("out"))
    store.patch("pods", "in", "team-a", {"metadata": {"labels": {"x": "1"}}})  # still in
    store.patch("pods", "out", "team-a", {"metadata": {"labels": {"app": "batch"}}})  # comes in
    store.patch("pods", "in", "team-a", {"metadata": {"labels": {"app": "web"}}})  # leaves
    store.patch("pods", "in", "team-a", {"metadata": {"labels": {"y": "1"}}})  # still out
    store.delete("pods", "out", "team-a")
    events = list(store.watch("pods", since, selector="app=batch"))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "in"),
        ("ADDED", "out"),
        ("DELETED", "in"),
        ("DELETED", "out"),
    ]
    assert events[2].object["metadata"]["labels"]["app"] == "web"  # what it became, as the server sends it


def test_watch_from_now_skips_the_past(store: ClusterStore) -> None:
    store.create(pod("old"))
    assert list(store.watch("pods", "")) == []


def test_watch_waits_for_a_concurrent_writer(store: ClusterStore) -> None:
    _, since = store.list("pods")

    def write_later() -> None:
        time.sleep(0.05)
        store.create(pod("late"))

    writer = threading.Thread(target=write_later)
    started = time.monotonic()
    writer.start()
    events = list(store.watch("pods", since, timeout=5.0))
    writer.join()
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "late")]
    assert time.monotonic() - started < 4.0


def test_watch_times_out_empty(store: ClusterStore) -> None:
    _, since = store.list("pods")
    started = time.monotonic()
    assert list(store.watch("pods", since, timeout=0.1)) == []
    assert 0.09 <= time.monotonic() - started < 2.0


# --- isolation ---


def test_callers_cannot_mutate_stored_state(store: ClusterStore) -> None:
    sent = pod("p", labels={"a": "1"})
    _, since = store.list("pods")
    store.create(sent)["metadata"]["labels"]["a"] = "returned"
    sent["metadata"]["labels"]["a"] = "sent"
    store.get("pods", "p", "team-a")["metadata"]["labels"]["a"] = "got"
    store.list("pods")[0][0]["metadata"]["labels"]["a"] = "listed"
    next(iter(store.watch("pods", since))).object["metadata"]["labels"]["a"] = "watched"
    patch = {"metadata": {"labels": {"b": "2"}}}
    store.patch("pods", "p", "team-a", patch)
    patch["metadata"]["labels"]["b"] = "patched"
    assert store.get("pods", "p", "team-a")["metadata"]["labels"] == {"a": "1", "b": "2"}


# --- MemoryStore only ---


@pytest.fixture
def memory(clock: ManualClock) -> MemoryStore:
    return MemoryStore(clock)


def test_finish_deletion_removes_a_terminating_pod_and_its_bind_request(memory: MemoryStore) -> None:
    created = bound_pod(memory)
    memory.create(bind_request(created))
    memory.create(bind_request(memory.create(pod("other"))))
    memory.delete("pods", "p", "team-a")
    _, since = memory.list("pods")
    memory.finish_deletion("team-a", "p")
    with pytest.raises(NotFound):
        memory.get("pods", "p", "team-a")
    assert [e.type for e in memory.watch("pods", since)] == ["DELETED"]
    assert [(e.type, e.object["metadata"]["name"]) for e in memory.watch("bindrequests", since)] == [("DELETED", "p")]
    assert [o["metadata"]["name"] for o in memory.list("bindrequests")[0]] == ["other"]


def test_a_removed_pod_takes_the_bind_requests_that_own_it_now(memory: MemoryStore) -> None:
    """Found by the store's owner index: a request whose owner reference was changed away, or that was deleted
    first, is not taken; one in another namespace naming the same uid is not either; two owned ones go in key
    order."""
    owner = memory.create(pod("p"))
    other = memory.create(pod("q"))
    memory.create(bind_request(owner))
    memory.create({**bind_request(owner), "metadata": {**bind_request(owner)["metadata"], "name": "p-2"}})
    moved = memory.create({**bind_request(owner), "metadata": {**bind_request(owner)["metadata"], "name": "p-3"}})
    moved["metadata"]["ownerReferences"] = bind_request(other)["metadata"]["ownerReferences"]
    memory.update(moved)
    elsewhere = bind_request(owner)
    elsewhere["metadata"]["namespace"] = "team-b"
    memory.create(elsewhere)
    memory.create({**bind_request(owner), "metadata": {**bind_request(owner)["metadata"], "name": "p-4"}})
    memory.delete("bindrequests", "p-4", "team-a")
    _, since = memory.list("bindrequests")
    memory.delete("pods", "p", "team-a")  # unbound: removed at once
    gone = [(e.type, e.object["metadata"]["name"]) for e in memory.watch("bindrequests", since)]
    assert gone == [("DELETED", "p"), ("DELETED", "p-2")]
    left = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in memory.list("bindrequests")[0]]
    assert left == [("team-a", "p-3"), ("team-b", "p")]
    memory.delete("pods", "q", "team-a")
    assert [o["metadata"]["name"] for o in memory.list("bindrequests")[0]] == ["p"]


def test_finish_deletion_of_a_running_pod_is_invalid(memory: MemoryStore) -> None:
    bound_pod(memory)
    with pytest.raises(Invalid, match="not terminating"):
        memory.finish_deletion("team-a", "p")


def test_watch_from_a_version_older_than_the_history_is_gone(clock: ManualClock) -> None:
    small = MemoryStore(clock, history_size=3)
    first = small.create(pod("p0"))
    for i in range(1, 5):
        small.create(pod(f"p{i}"))
    with pytest.raises(Gone):
        small.watch("pods", first["metadata"]["resourceVersion"])
    _, latest = small.list("pods")
    kept_from = str(int(latest) - 3)
    assert [e.object["metadata"]["name"] for e in small.watch("pods", kept_from)] == ["p2", "p3", "p4"]


def test_the_history_is_kept_per_resource_so_a_quiet_watch_stays_valid(clock: ManualClock) -> None:
    small = MemoryStore(clock, history_size=3)
    small.create(node("n1"))
    _, since = small.list("nodes")
    for i in range(10):
        small.create(pod(f"p{i}"))
    assert list(small.watch("nodes", since)) == []  # ten pod events dropped no node event
    small.create(node("n2"))
    assert [e.object["metadata"]["name"] for e in small.watch("nodes", since)] == ["n2"]
    with pytest.raises(Gone):
        small.watch("pods", since)


def test_watch_from_zero_starts_at_the_beginning(memory: MemoryStore) -> None:
    _, empty = memory.list("pods")
    assert empty == "0"
    memory.create(pod("p"))
    assert [e.type for e in memory.watch("pods", empty)] == ["ADDED"]


@pytest.mark.parametrize("version", ["99", "abc", "-1"], ids=["future", "not a number", "negative"])
def test_watch_from_a_version_never_issued_is_invalid(memory: MemoryStore, version: str) -> None:
    memory.create(pod("p"))
    with pytest.raises(Invalid):
        memory.watch("pods", version)


def _feed(store: MemoryStore) -> list[JSON]:
    store.create(node("node-1"))
    store.add_many([pod("a"), pod("b"), podgroup("pg")])
    store.create({"kind": "Event", "metadata": {"generateName": "pg-", "namespace": "team-a"}})
    store.bind("team-a", "a", "node-1")
    store.delete("pods", "b", "team-a")
    return [o for r in ("nodes", "pods", "podgroups", "events") for o in store.list(r)[0]]


def test_two_stores_fed_the_same_writes_agree_on_uids_and_names(clock: ManualClock) -> None:
    one, two = _feed(MemoryStore(clock)), _feed(MemoryStore(clock))
    assert one == two
    assert len({o["metadata"]["uid"] for o in one}) == len(one)
    generated = one[-1]["metadata"]["name"]
    assert generated.startswith("pg-") and len(generated) == len("pg-") + 5


def test_add_many_is_all_or_nothing(memory: MemoryStore) -> None:
    memory.create(pod("b"))
    with pytest.raises(AlreadyExists):
        memory.add_many([pod("a"), pod("b")])
    with pytest.raises(AlreadyExists):
        memory.add_many([pod("c"), pod("c")])
    assert [o["metadata"]["name"] for o in memory.list("pods")[0]] == ["b"]
    assert memory.add_many([pod("a"), podgroup("a")]) == 2


def test_create_stamps_a_null_creation_timestamp(memory: MemoryStore) -> None:
    obj = pod("p")
    obj["metadata"]["creationTimestamp"] = None  # as in `kubectl create --dry-run -o yaml` output
    assert parse_time(memory.create(obj)["metadata"]["creationTimestamp"]) == START


@pytest.mark.parametrize("name", ["Pod/team-a/p/1", "", "ünïcode"])
def test_uids_are_uuid5(name: str) -> None:
    assert object_rules.uuid5(name) == str(uuid.uuid5(uuid.UUID(bytes=object_rules.UID_NAMESPACE), name))


def test_create_keeps_a_given_uid_and_normalises_yaml_datetimes(memory: MemoryStore) -> None:
    obj = pod("p")
    obj["metadata"]["uid"] = "from-snapshot"
    obj["metadata"]["creationTimestamp"] = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    created = memory.create(obj)
    assert created["metadata"]["uid"] == "from-snapshot"
    assert created["metadata"]["creationTimestamp"] == "2025-01-02T03:04:05Z"


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(
            lambda s: s.create({"kind": "Pod", "apiVersion": "v2", "metadata": {"name": "p"}}),
            id="wrong apiVersion for the kind",
        ),
        pytest.param(lambda s: s.create({"kind": "Pod", "metadata": {}}), id="no name nor generateName"),
        pytest.param(lambda s: s.create({"kind": "Pod", "metadata": {"name": "p"}, "x": {1, 2}}), id="not JSON"),
        pytest.param(lambda s: s.get("pods", "p"), id="namespaced get without namespace"),
        pytest.param(lambda s: s.update_status(configmap("c")), id="status of a kind without status"),
        pytest.param(lambda s: s.patch("pods", "p", "team-a", {}, subresource="scale"), id="bad subresource"),
        pytest.param(lambda s: s.delete("pods", "p", "team-a", grace_period_seconds=-1), id="negative grace"),
    ],
)
def test_invalid_requests(memory: MemoryStore, call: Any) -> None:
    memory.create(pod("p"))
    memory.create(configmap("c"))
    with pytest.raises(Invalid):
        call(memory)


# RFC 7386 appendix A, one row per example.
@pytest.mark.parametrize(
    "target, patch, want",
    [
        pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="replaces a value"),
        pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="adds a key"),
        pytest.param({"a": "b"}, {"a": None}, {}, id="null removes a key"),
        pytest.param({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="null removes only that key"),
        pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="scalar replaces a list"),
        pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="list replaces a scalar"),
        pytest.param({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}, id="objects merge"),
        pytest.param({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="lists are replaced, not merged"),
        pytest.param(["a", "b"], ["c", "d"], ["c", "d"], id="list patch replaces a list"),
        pytest.param({"a": "b"}, ["c"], ["c"], id="list patch replaces an object"),
        pytest.param({"a": "foo"}, None, None, id="null patch replaces everything"),
        pytest.param({"a": "foo"}, "bar", "bar", id="scalar patch replaces everything"),
        pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="existing nulls stay"),
        pytest.param([1, 2], {"a": "b", "c": None}, {"a": "b"}, id="object patch replaces a list"),
        pytest.param({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}, id="nulls vanish from new objects"),
    ],
)
def test_merge_patch_follows_rfc_7386(target: Any, patch: Any, want: Any) -> None:
    before = repr(target)
    assert merge_patch(target, patch) == want
    assert repr(target) == before  # the target is never mutated


CONDITIONS = {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Scheduled", "status": "True"}]}}


@pytest.mark.parametrize(
    "strategic, want",
    [
        pytest.param(False, [{"type": "Ready", "status": "True"}], id="merge patch: a keyed list is still replaced"),
        pytest.param(
            True,
            [{"type": "Ready", "status": "True"}, {"type": "Scheduled", "status": "True"}],
            id="strategic: merged on the list's key",
        ),
    ],
)
def test_one_merge_serves_both_patch_kinds(strategic: bool, want: JSON) -> None:
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    merged = strategic_merge_patch(CONDITIONS, patch) if strategic else merge_patch(CONDITIONS, patch)
    assert merged["status"]["conditions"] == want
    assert CONDITIONS["status"]["conditions"][0]["status"] == "False"  # the target is never mutated


@pytest.mark.parametrize("selector", ["role=worker", "role", "!role", "role notin (worker)"])
def test_an_object_whose_labels_are_not_a_mapping_matches_as_unlabelled(memory: MemoryStore, selector: str) -> None:
    """Found by tests/badobj: a pod of a file with `labels: abc` made every selector list raise AttributeError."""
    memory.create(pod("odd"))
    memory.patch("pods", "odd", "team-a", {"metadata": {"labels": "abc"}})
    memory.create(pod("w", labels={"role": "worker"}))
    unlabelled = label_index.parse_selector(selector)
    assert unlabelled is not None
    want = ["odd"] * unlabelled.matches({}) + ["w"] * unlabelled.matches({"role": "worker"})
    assert [o["metadata"]["name"] for o in memory.list("pods", None, selector)[0]] == want
