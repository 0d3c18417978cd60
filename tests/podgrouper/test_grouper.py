"""The podgrouper loop: incremental, idempotent, keeps what others wrote, survives an expired watch."""

from __future__ import annotations

import logging
import threading

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.store.interface import JSON, Cancelled, StoreError
from kai_scheduler.store.memory import MemoryStore
from tests.podgrouper.helpers import NOW, Cluster, bare_pod, controller_pod, spec

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: default
  uid: 9e8d7c6b-0001-4a5b-8c9d-0e1f2a3b4c5d
  labels: {kai.scheduler/queue: team-a}
  annotations: {kai.scheduler/batch-min-member: "2"}
spec: {parallelism: 2, template: {spec: {schedulerName: kai-scheduler, restartPolicy: Never,
                                         containers: [{name: c, image: x}]}}}
"""


def test_a_second_reconcile_with_nothing_new_writes_nothing() -> None:
    c = Cluster(JOB)
    job = c.owner("jobs", "train")
    c.add(controller_pod("train-a", job), controller_pod("train-b", job))
    first = c.group()
    assert len(first.created) == 1 and len(first.labelled) == 2
    _, version = c.store.list("pods")
    second = c.group()
    assert (second.created, second.updated, second.labelled) == ([], [], [])
    assert c.store.list("pods")[1] == version  # not one write


def test_grouping_a_bare_pod_costs_two_writes_and_no_reads() -> None:
    """Against an API server every request counts: PodGroups and priority classes are watched, so grouping a
    new pod is the PodGroup's create and the pod's patch, nothing read per pod."""
    c = Cluster()
    c.group()
    calls: list[str] = []
    for method in ("get", "list", "create", "update", "patch"):
        real = getattr(c.store, method)
        setattr(c.store, method, lambda *a, _m=method, _real=real, **k: calls.append(_m) or _real(*a, **k))
    for i in range(3):
        c.store.add_many([bare_pod(f"p{i}", labels={constants.LABEL_QUEUE: "team-a"})])
    outcome = c.group()
    assert len(outcome.created) == 3 and len(outcome.labelled) == 3
    assert sorted(calls) == ["create"] * 3 + ["patch"] * 3


def test_a_pod_naming_a_podgroup_the_watch_has_not_shown_yet_keeps_it() -> None:
    """An external PodGroup created just before its pod: the grouper reads the store before grouping the pod
    itself, rather than trusting a watched copy that may lag."""
    c = Cluster()
    c.group()
    c.add(
        {
            "apiVersion": constants.PODGROUP_API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": "external", "namespace": "default"},
            "spec": {"queue": "team-a", "minMember": 1},
        }
    )
    # as if the PodGroup's watch event had not arrived yet: the PodGroup informer is synced by this feed alone
    c.grouper._group_feed.poll = lambda timeout=0.0: []  # type: ignore[method-assign]
    c.add(bare_pod("p", annotations={constants.ANNOTATION_POD_GROUP_NAME: "external"}))
    outcome = c.group()
    assert outcome.created == [] and c.podgroup_of("p")["metadata"]["name"] == "external"


def test_a_podgroup_changed_by_another_writer_after_the_groupers_write_is_read_as_the_watch_brings_it() -> None:
    """The grouper reads its own write of a PodGroup until the watch brings a change of it, then the informer's
    copy: a field it owns that someone else changed meanwhile is set back when its next pod is grouped."""
    c = Cluster(JOB)
    job = c.owner("jobs", "train")
    c.add(controller_pod("train-a", job))
    assert len(c.group().created) == 1
    name = c.podgroup_of("train-a")["metadata"]["name"]
    c.store.patch("podgroups", name, "default", {"spec": {"minMember": 7}})
    c.add(controller_pod("train-b", job))
    assert c.group().updated == [f"default/{name}"]
    assert c.store.get("podgroups", name, "default")["spec"]["minMember"] == 2


def test_pods_that_come_later_join_the_same_podgroup() -> None:
    c = Cluster(JOB)
    job = c.owner("jobs", "train")
    c.add(controller_pod("train-a", job))
    c.group()
    c.add(controller_pod("train-b", job))
    outcome = c.group()
    assert outcome.created == [] and outcome.labelled == ["default/train-b"]
    assert c.podgroup_of("train-a")["metadata"]["name"] == c.podgroup_of("train-b")["metadata"]["name"]


def test_an_update_keeps_what_others_wrote() -> None:
    c = Cluster(JOB)
    job = c.owner("jobs", "train")
    c.add(controller_pod("train-a", job))
    c.group()
    name = c.podgroup_of("train-a")["metadata"]["name"]
    c.store.patch(
        "podgroups",
        name,
        "default",
        {
            "metadata": {
                "annotations": {constants.ANNOTATION_LAST_START_TIMESTAMP: "2026-01-01T00:00:00Z"},
                "labels": {constants.DEFAULT_NODE_POOL_LABEL_KEY: "a100"},
            },
            "spec": {"markUnschedulable": False},
        },
    )
    c.store.patch("podgroups", name, "default", {"status": {"phase": "Running"}}, "status")
    c.store.patch(
        "jobs",
        "train",
        "default",
        {
            "metadata": {
                "annotations": {constants.ANNOTATION_BATCH_MIN_MEMBER: "3"},
                "labels": {constants.LABEL_QUEUE: "team-b"},
            }
        },
    )
    c.store.patch("pods", "train-a", "default", {"status": {"phase": "Pending", "message": "poke"}}, "status")
    outcome = c.group()
    assert outcome.updated == [f"default/{name}"]
    pg = c.store.get("podgroups", name, "default")
    assert spec(pg) == {"queue": "team-b", "minMember": 3, "priorityClassName": "train", "markUnschedulable": False}
    assert pg["metadata"]["annotations"][constants.ANNOTATION_LAST_START_TIMESTAMP] == "2026-01-01T00:00:00Z"
    assert pg["metadata"]["labels"][constants.DEFAULT_NODE_POOL_LABEL_KEY] == "a100"
    assert pg["status"] == {"phase": "Running"}


def test_an_expired_watch_relists_and_misses_nothing() -> None:
    store = MemoryStore(ManualClock(NOW), history_size=3)
    grouper = PodGrouper(store)
    store.create(bare_pod("first"))
    grouper.reconcile()
    for i in range(10):
        store.create(bare_pod(f"p-{i}"))
    outcome = grouper.reconcile()
    assert sorted(outcome.labelled) == [f"default/p-{i}" for i in range(10)]
    assert len(store.list("podgroups")[0]) == 11


def test_an_owner_replaced_under_the_same_name_is_not_taken_for_the_old_one() -> None:
    c = Cluster(JOB)
    old = controller_pod("train-a", c.owner("jobs", "train"))
    old["metadata"]["ownerReferences"][0]["uid"] = "00000000-0000-4000-8000-00000000dead"
    c.add(old)
    c.group()
    pg = c.podgroup_of("train-a")
    assert pg["metadata"]["name"] == "pg-train-00000000-0000-4000-8000-00000000dead"
    assert spec(pg)["minMember"] == 1  # the Job there now is not this pod's owner: its annotation is not read


def test_the_same_writes_give_the_same_podgroups() -> None:
    def run() -> list[dict[str, object]]:
        c = Cluster(JOB)
        job = c.owner("jobs", "train")
        c.add(controller_pod("train-b", job), controller_pod("train-a", job), bare_pod("solo"))
        c.group()
        return c.podgroups()

    assert run() == run()


def test_an_error_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    c = Cluster("""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: broken, namespace: default, uid: 9e8d7c6b-0002-4a5b-8c9d-0e1f2a3b4c5d}
spec: {pytorchReplicaSpecs: {}}
""")
    c.add(controller_pod("broken-master-0", c.owner("pytorchjobs", "broken")))
    c.group()
    c.store.patch("pods", "broken-master-0", "default", {"metadata": {"labels": {"touched": "yes"}}})
    outcome = c.group()
    assert outcome.skipped and c.podgroups() == []
    assert sum("no replica specs" in getattr(r, "reason", "") for r in caplog.records) == 1


def test_the_podgroup_carries_its_owners_creation_time() -> None:
    c = Cluster(
        JOB.replace(
            "  uid: 9e8d7c6b-0001-4a5b-8c9d-0e1f2a3b4c5d",
            "  uid: 9e8d7c6b-0001-4a5b-8c9d-0e1f2a3b4c5d\n  creationTimestamp: '2025-12-31T23:00:00Z'",
        )
    )
    c.add(controller_pod("train-a", c.owner("jobs", "train")))
    c.group()
    assert c.podgroup_of("train-a")["metadata"]["creationTimestamp"] == "2025-12-31T23:00:00Z"


def _grouped_by(concurrency: int) -> tuple[object, list[tuple[str, str]]]:
    c = Cluster(JOB)
    c.grouper = PodGrouper(c.store, concurrency=concurrency)
    job = c.owner("jobs", "train")
    c.add(controller_pod("train-a", job), controller_pod("train-b", job))
    for i in range(12):
        c.add(bare_pod(f"p{i:02d}", labels={constants.LABEL_QUEUE: "team-a"}))
    outcome = c.group()
    pods, _ = c.store.list("pods")
    return outcome, sorted(
        (p["metadata"]["name"], p["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME]) for p in pods
    )


def test_writing_with_several_threads_groups_as_one_thread_does() -> None:
    """PodGroups written at once by several threads (a gang's pods by one of them, in order): the same
    PodGroups, annotations and outcome, in pod order."""
    one, grouped_one = _grouped_by(1)
    many, grouped_many = _grouped_by(4)
    assert many == one and grouped_many == grouped_one
    assert len(one.created) == 13 and len(one.labelled) == 14  # type: ignore[attr-defined]


class _OneThreadDict(dict[str, object]):
    """A dict that records which threads changed it."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    def _note(self) -> None:
        self.threads.add(threading.current_thread().name)

    def __setitem__(self, key: str, value: object) -> None:
        self._note()
        super().__setitem__(key, value)

    def setdefault(self, key: str, default: object = None) -> object:
        self._note()
        return super().setdefault(key, default)

    def pop(self, key: str, *default: object) -> object:
        self._note()
        return super().pop(key, *default)


def test_writer_threads_leave_the_grouper_state_to_the_reconciling_thread() -> None:
    """The pods' last patched versions and the messages said for each pod are changed by the thread that
    reconciles only, not by the writer threads, which would race on them (a message logged twice, a version
    lost)."""
    c = Cluster()
    c.grouper = PodGrouper(c.store, concurrency=4)
    c.group()  # the first reconcile lists (and starts the two records afresh)
    written, reported = _OneThreadDict(), _OneThreadDict()
    c.grouper._written, c.grouper._reported = written, reported  # type: ignore[assignment]
    real_patch = c.store.patch

    def patch(resource: str, name: str, namespace: str, body: JSON, *args: object, **kwargs: object) -> JSON:
        if name.endswith(("1", "3")):
            raise Forbidden(f"patch Pod {namespace}/{name}: forbidden")
        return real_patch(resource, name, namespace, body, *args, **kwargs)  # type: ignore[arg-type]

    c.store.patch = patch  # type: ignore[method-assign,assignment]
    for i in range(8):
        c.add(bare_pod(f"p{i}", labels={constants.LABEL_QUEUE: "team-a"}))
    outcome = c.group()
    assert len(outcome.labelled) == 6 and [k for k, _ in outcome.skipped] == ["default/p1", "default/p3"]
    assert sorted(written) == [f"default/p{i}" for i in (0, 2, 4, 5, 6, 7)]
    assert sorted(reported) == ["default/p1", "default/p3"]
    assert written.threads == reported.threads == {threading.current_thread().name}


class Forbidden(StoreError):
    reason = "Forbidden"


def test_pods_cut_by_a_stopping_process_are_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    """A SIGTERM cancels the store: each pod's write is cut, which is no refusal to warn of pod by pod (the
    process says it is stopping once); the pods are still tried again."""
    c = Cluster()
    c.group()

    def patch(resource: str, name: str, namespace: str, body: JSON, *args: object, **kwargs: object) -> JSON:
        raise Cancelled(f"patch Pod {namespace}/{name}: cancelled: the client is shutting down")

    c.store.patch = patch  # type: ignore[method-assign,assignment]
    for i in range(3):
        c.add(bare_pod(f"p{i}", labels={constants.LABEL_QUEUE: "team-a"}))
    with caplog.at_level(logging.WARNING):
        outcome = c.group()
    assert [k for k, _ in outcome.skipped] == [f"default/p{i}" for i in range(3)]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_pod_whose_podgroup_is_deleted_is_grouped_again() -> None:
    """The PodGroup of a pending pod deleted (by hand, or by the garbage collector): the pod is grouped again in
    the next reconcile, though it did not change, instead of waiting without a PodGroup (and so without any
    word from the scheduler) until it does."""
    c = Cluster()
    c.add(bare_pod("p", labels={constants.LABEL_QUEUE: "team-a"}))
    c.group()
    group = c.podgroup_of("p")["metadata"]["name"]
    c.store.delete("podgroups", group, "default")
    outcome = c.group()
    assert outcome.created == [f"default/{group}"]
    assert c.podgroup_of("p")["spec"]["queue"] == "team-a"
    again = c.group()
    assert (again.created, again.updated, again.labelled) == ([], [], [])


def test_a_pod_remade_from_a_saved_manifest_is_grouped_once_the_old_podgroup_goes() -> None:
    """`kubectl get pod -o yaml` applied again after the pod was deleted: the new pod names the old pod's
    PodGroup (kept: it exists), which the garbage collector then removes; the pod gets its own."""
    c = Cluster()
    c.add(bare_pod("p", labels={constants.LABEL_QUEUE: "team-a"}))
    c.group()
    saved = c.pod("p")
    old = c.podgroup_of("p")["metadata"]["name"]
    c.store.delete("pods", "p", "default")
    c.add(
        bare_pod(
            "p",
            labels={constants.LABEL_QUEUE: "team-a"},
            annotations={constants.ANNOTATION_POD_GROUP_NAME: old},
        )
    )
    c.group()
    assert c.podgroup_of("p")["metadata"]["name"] == old  # named by the pod, and there: the pod joins it
    c.store.delete("podgroups", old, "default")  # the garbage collector: its owner, the old pod, is gone
    c.group()
    new = c.podgroup_of("p")
    assert new["metadata"]["name"] != old and c.pod("p")["metadata"]["uid"] != saved["metadata"]["uid"]
    assert new["metadata"]["name"].endswith(c.pod("p")["metadata"]["uid"])


def test_pods_deleted_with_their_podgroup_are_not_read_again() -> None:
    """A job deleted with its pods: the PodGroup's deletion reads nothing for pods already gone."""
    c = Cluster()
    c.add(bare_pod("p", labels={constants.LABEL_QUEUE: "team-a"}))
    c.group()
    group = c.podgroup_of("p")["metadata"]["name"]
    c.store.delete("pods", "p", "default")
    c.group()
    c.store.delete("podgroups", group, "default")
    calls: list[str] = []
    real = c.store.get
    c.store.get = lambda *a, **k: calls.append("get") or real(*a, **k)  # type: ignore[method-assign]
    outcome = c.group()
    assert (outcome.created, calls) == ([], [])
