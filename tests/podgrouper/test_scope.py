"""KAI's selective monitoring in the pod grouper: only the pods within --pod-label-selector, in namespaces within
--namespace-label-selector, get a PodGroup."""

from __future__ import annotations

from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.podgrouper.context import Config
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, StoreError
from tests.podgrouper.helpers import Cluster, bare_pod

QUEUE = {constants.LABEL_QUEUE: "team-a"}


def namespace(name: str, **labels: str) -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def grouped(c: Cluster, name: str, ns: str = "default") -> bool:
    return constants.ANNOTATION_POD_GROUP_NAME in (c.pod(name, ns)["metadata"].get("annotations") or {})


def test_a_pod_outside_the_pod_selector_gets_no_podgroup() -> None:
    c = Cluster(config=Config(pod_label_selector={"app": "batch"}))
    c.add(bare_pod("in", labels={**QUEUE, "app": "batch"}), bare_pod("out", labels={**QUEUE, "app": "web"}))
    outcome = c.group()
    assert outcome.labelled == ["default/in"]
    assert grouped(c, "in") and not grouped(c, "out")
    assert len(c.podgroups()) == 1


def test_every_label_of_the_pod_selector_is_needed() -> None:
    c = Cluster(config=Config(pod_label_selector={"app": "batch", "tier": "gpu"}))
    c.add(bare_pod("both", labels={"app": "batch", "tier": "gpu"}), bare_pod("one", labels={"app": "batch"}))
    c.group()
    assert grouped(c, "both") and not grouped(c, "one")


def test_a_pod_labelled_into_the_pod_selector_is_grouped_on_that_change() -> None:
    c = Cluster(config=Config(pod_label_selector={"app": "batch"}))
    c.add(bare_pod("p", labels=QUEUE))
    c.group()
    assert not grouped(c, "p")
    c.store.patch("pods", "p", "default", {"metadata": {"labels": {"app": "batch"}}})
    assert c.group().labelled == ["default/p"]


def test_a_pod_outside_the_namespace_selector_gets_no_podgroup() -> None:
    c = Cluster(config=Config(namespace_label_selector={"team": "ml"}))
    c.add(namespace("ml", team="ml"), namespace("web", team="web"))
    c.add(bare_pod("a", "ml", labels=QUEUE), bare_pod("b", "web", labels=QUEUE), bare_pod("c", "nowhere"))
    c.group()
    assert grouped(c, "a", "ml")
    assert not grouped(c, "b", "web") and not grouped(c, "c", "nowhere")
    assert [pg["metadata"]["namespace"] for pg in c.podgroups()] == ["ml"]


def test_both_selectors_must_match() -> None:
    c = Cluster(config=Config(pod_label_selector={"app": "batch"}, namespace_label_selector={"team": "ml"}))
    c.add(namespace("ml", team="ml"), namespace("web", team="web"))
    c.add(
        bare_pod("batch-in-ml", "ml", labels={"app": "batch"}),
        bare_pod("web-in-ml", "ml", labels={"app": "web"}),
        bare_pod("batch-in-web", "web", labels={"app": "batch"}),
    )
    c.group()
    assert grouped(c, "batch-in-ml", "ml")
    assert not grouped(c, "web-in-ml", "ml") and not grouped(c, "batch-in-web", "web")


def test_a_namespace_created_after_the_first_look_is_read_for_its_first_pod() -> None:
    c = Cluster(config=Config(namespace_label_selector={"team": "ml"}))
    c.group()
    c.add(namespace("late", team="ml"), bare_pod("p", "late", labels=QUEUE))
    c.group()
    assert grouped(c, "p", "late")


def test_the_pods_of_a_namespace_labelled_into_the_selector_are_grouped_at_once() -> None:
    c = Cluster(config=Config(pod_label_selector={"app": "batch"}, namespace_label_selector={"team": "ml"}))
    c.add(namespace("ns"), bare_pod("p", "ns", labels={"app": "batch"}), bare_pod("q", "ns", labels={"app": "web"}))
    c.group()
    assert not grouped(c, "p", "ns")
    c.store.patch("namespaces", "ns", "", {"metadata": {"labels": {"team": "ml"}}})
    assert c.group().labelled == ["ns/p"]  # the pod itself did not change; q stays outside the pod selector
    assert not grouped(c, "q", "ns")


def test_without_selectors_namespaces_are_not_read() -> None:
    c = Cluster()
    calls: list[str] = []
    real = c.store.list
    c.store.list = lambda resource, *a, **k: calls.append(resource) or real(resource, *a, **k)  # type: ignore[method-assign]
    c.add(bare_pod("p", labels=QUEUE))
    c.group()
    assert grouped(c, "p") and "namespaces" not in calls


def test_the_pod_selector_is_served_by_the_process_pod_informer() -> None:
    """With --pod-label-selector the grouper reads the pod informer the other components of its process read: one
    LIST and WATCH of pods, not a second one of the selected pods."""
    c = Cluster()
    informers = Informers(c.store)
    others = Changes(informers.informer("pods"))  # the scheduler's, the binder's, the controllers' reader
    grouper = PodGrouper(c.store, Config(pod_label_selector={"app": "batch"}), informers=informers)
    c.add(bare_pod("in", labels={**QUEUE, "app": "batch"}), bare_pod("out", labels={**QUEUE, "app": "web"}))
    lists: list[tuple[str, object]] = []
    real = c.store.list
    c.store.list = lambda resource, *a, **k: lists.append((resource, a)) or real(resource, *a, **k)  # type: ignore[method-assign]
    others.poll()
    assert grouper.reconcile().labelled == ["default/in"]
    assert [(i.resource, i.selector) for i in informers.started() if i.resource == "pods"] == [("pods", None)]
    assert [resource for resource, _ in lists].count("pods") == 1


def test_a_pod_labelled_out_of_the_pod_selector_is_left_as_a_deleted_one_is() -> None:
    """Out of the selector, a pod whose grouping was refused is not tried again (it is as gone to the grouper);
    labelled back in, it is grouped."""
    c = Cluster(config=Config(pod_label_selector={"app": "batch"}))
    c.add(bare_pod("p", labels={**QUEUE, "app": "batch"}))
    real = c.store.patch

    def refuse(kind: str, *args: Any, **kwargs: Any) -> Any:
        if kind == "pods" and "annotations" in (args[2].get("metadata") or {}):
            raise StoreError("refused")
        return real(kind, *args, **kwargs)

    c.store.patch = refuse  # type: ignore[method-assign]
    assert c.group().labelled == [] and c.grouper.refused.backing_off("default/p")
    real("pods", "p", "default", {"metadata": {"labels": {"app": "web"}}})
    c.group()
    assert c.grouper.refused.keys() == set()
    c.store.patch = real  # type: ignore[method-assign]
    c.store.patch("pods", "p", "default", {"metadata": {"labels": {"app": "batch"}}})
    assert c.group().labelled == ["default/p"]


def test_a_namespace_labelled_into_the_selector_costs_no_list_of_its_pods() -> None:
    """Its pods come from the pod informer's cache (by its namespace index), not from a LIST."""
    c = Cluster(config=Config(namespace_label_selector={"team": "ml"}))
    c.add(namespace("ns"), bare_pod("p", "ns", labels=QUEUE))
    c.group()
    lists: list[str] = []
    real = c.store.list
    c.store.list = lambda resource, *a, **k: lists.append(resource) or real(resource, *a, **k)  # type: ignore[method-assign]
    c.store.patch("namespaces", "ns", "", {"metadata": {"labels": {"team": "ml"}}})
    assert c.group().labelled == ["ns/p"]
    assert "pods" not in lists
