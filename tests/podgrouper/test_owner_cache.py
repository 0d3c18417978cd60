"""Owners come from watched copies: the pods of one Job read it once, not once per reconcile."""

from __future__ import annotations

from typing import Any

import yaml

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.podgrouper.owners import OwnerCache
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, StoreError
from kai_scheduler.store.memory import MemoryStore
from tests.podgrouper.helpers import NOW, Cluster, controller_pod

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: default
  annotations: {kai.scheduler/batch-min-member: "3"}
spec: {parallelism: 3, template: {spec: {schedulerName: kai-scheduler, containers: [{name: c, image: x}]}}}
"""


def _count_reads(c: Cluster) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    for method in ("get", "list"):
        real = getattr(c.store, method)

        def counted(resource: str, *a: Any, _m: str = method, _real: Any = real, **k: Any) -> Any:
            calls.append((_m, resource))
            return _real(resource, *a, **k)

        setattr(c.store, method, counted)
    return calls


def test_the_pods_of_one_job_arriving_apart_read_it_from_the_watch() -> None:
    c = Cluster(JOB)
    c.group()
    calls = _count_reads(c)
    job = c.owner("jobs", "train")
    calls.clear()
    for name in ("train-a", "train-b", "train-c"):
        c.add(controller_pod(name, job))
        c.group()
    assert [call for call in calls if call[1] == "jobs"] == [("list", "jobs")]  # listed once, then watched
    assert {c.podgroup_of(n)["metadata"]["name"] for n in ("train-a", "train-b", "train-c")} == {
        f"pg-train-{job['metadata']['uid']}"
    }


def test_an_owner_newer_than_the_watch_is_read_from_the_store() -> None:
    c = Cluster(JOB)
    cache = OwnerCache(c.store)
    assert cache.get("jobs", "default", "train") is not None  # the kind is listed and watched now
    c.apply(JOB.replace("name: train", "name: later"))
    later = cache.get("jobs", "default", "later")  # not refreshed yet: read by name
    assert later is not None and later["metadata"]["name"] == "later"
    assert cache.get("jobs", "default", "missing") is None


def test_an_owner_replaced_under_its_name_is_read_again() -> None:
    c = Cluster(JOB)
    cache = OwnerCache(c.store)
    old = cache.get("jobs", "default", "train")
    assert old is not None
    c.store.delete("jobs", "train", "default")
    new = c.apply(JOB)[0]
    found = cache.get("jobs", "default", "train", new["metadata"]["uid"])  # the watch has not said so yet
    assert found is not None and found["metadata"]["uid"] == new["metadata"]["uid"] != old["metadata"]["uid"]


class Forbidden(StoreError):
    reason = "Forbidden"


def test_a_kind_that_cannot_be_listed_is_read_by_name() -> None:
    c = Cluster(JOB)
    real_list = c.store.list

    def refusing(resource: str, *a: Any, **k: Any) -> tuple[list[JSON], str]:
        if resource == "jobs":
            raise Forbidden("list Job: forbidden")
        return real_list(resource, *a, **k)

    c.store.list = refusing  # type: ignore[method-assign,assignment]
    cache = OwnerCache(c.store)
    found = cache.get("jobs", "default", "train")
    assert found is not None and found["metadata"]["name"] == yaml.safe_load(JOB)["metadata"]["name"]
    cache.refresh()


def test_owners_are_the_informers_objects_and_a_change_missed_in_a_relist_is_seen() -> None:
    """The cache hands out the shared informer's objects (no copy of its own); an owner whose spec changed while
    its watch was Gone is a changed owner after the relist, as one changed on the watch is."""
    store = MemoryStore(ManualClock(NOW), history_size=2)
    informers = Informers(store)
    job = store.create(yaml.safe_load(JOB))
    store.create({**yaml.safe_load(JOB), "metadata": {"name": "other", "namespace": "default"}})
    owners = OwnerCache(store, informers)
    assert owners.get("jobs", "default", "train") is informers.informer("jobs").get("default/train")
    owners.refresh()
    job["spec"]["parallelism"] = 4
    store.update(job)
    for value in ("a", "b", "c"):  # status writes, more than the history keeps: the watch is Gone
        other = store.get("jobs", "other", "default")
        other["status"] = {"active": value}
        store.update(other)
    changed = owners.refresh()
    assert informers.informer("jobs").relists == 2
    assert [(o["metadata"]["name"], o["spec"]["parallelism"]) for o in changed] == [("train", 4)]
