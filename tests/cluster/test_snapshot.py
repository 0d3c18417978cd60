"""The snapshot (§3.1): pod statuses, BindRequests holding resources, the queue tree with its problems, jobs and
their queues, and pods of other schedulers. Nothing here raises on a bad object: it becomes a Problem.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.queue import Queue
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.resources import CPU, GPU, PODS
from kai_scheduler.cluster.snapshot import Problem
from kai_scheduler.cluster.snapshot.queues import QueueTree
from tests import builders as b

JSON = dict[str, Any]
S = PodStatus


def _snap(*objects: JSON) -> Any:
    return b.snapshot([b.queue("q"), b.node("n1"), b.node("n2"), *objects])


STATUSES = [
    pytest.param({"node": "n1"}, (), S.RUNNING, "n1", id="Running on its node"),
    pytest.param(
        {"node": "n1", "deleted_at": b.NOW},
        (),
        S.RELEASING,
        "n1",
        id="a running pod with a deletion timestamp is Releasing",
    ),
    pytest.param(
        {"node": "n1", "deleted_at": b.NOW - 600},
        (),
        S.STUCK_IN_RELEASING,
        "n1",
        id="releasing past the 2m threshold is StuckInReleasing",
    ),
    pytest.param({"node": "n1", "phase": "Pending"}, (), S.BOUND, "n1", id="Pending with a nodeName is Bound"),
    pytest.param(
        {"deleted_at": b.NOW},
        (),
        S.RELEASING,
        "",
        id="an unbound pod being deleted is Releasing, never Pending (KAI: deletion first)",
    ),
    pytest.param(
        {"deleted_at": b.NOW},
        (b.bind_request("p", "n2"),),
        S.RELEASING,
        "n2",
        id="a pod being deleted with a BindRequest is Releasing on the BindRequest's node",
    ),
    pytest.param(
        {},
        (b.bind_request("p", "n2"),),
        S.BINDING,
        "n2",
        id="Pending with a live BindRequest is Binding on the BindRequest's node",
    ),
    pytest.param(
        {},
        (b.bind_request("p", "n2", phase="Failed", failed_attempts=1, backoff_limit=3),),
        S.BINDING,
        "n2",
        id="a failed BindRequest still within its backoff limit is live",
    ),
    pytest.param(
        {},
        (b.bind_request("p", "n2", phase="Failed"),),
        S.PENDING,
        "",
        id="a failed BindRequest without backoff limit is ignored",
    ),
    pytest.param({}, (b.bind_request("p", "gone"),), S.PENDING, "", id="a BindRequest for a missing node is ignored"),
    pytest.param({"gated": True}, (), S.GATED, "", id="scheduling gates make it Gated"),
    pytest.param({}, (), S.PENDING, "", id="otherwise Pending"),
    pytest.param({"node": "n1", "phase": "Succeeded"}, (), S.SUCCEEDED, "n1", id="Succeeded"),
    pytest.param({"node": "n1", "phase": "Failed"}, (), S.FAILED, "n1", id="Failed"),
    pytest.param({"node": "n1", "phase": "Unknown"}, (), S.UNKNOWN, "n1", id="Unknown"),
]


@pytest.mark.parametrize("pod, extra, status, node", STATUSES)
def test_pod_status(pod: JSON, extra: tuple[JSON, ...], status: PodStatus, node: str) -> None:
    snap = _snap(b.pod("p", gpus=1, **pod), *extra)
    task = b.task(snap, "p")
    assert (task.status, task.node) == (status, node)
    charged = {n.name: int(n.pod_count()) for n in snap.nodes}
    holds = status & (S.RUNNING | S.RELEASING | S.STUCK_IN_RELEASING | S.BOUND | S.BINDING)
    assert charged == {"n1": int(bool(holds) and node == "n1"), "n2": int(bool(holds) and node == "n2")}


def test_a_binding_pod_holds_its_resources_on_the_bind_request_node() -> None:
    snap = _snap(b.pod("p", gpus=3, cpu="4"), b.bind_request("p", "n2"))
    task = b.task(snap, "p")
    n2 = snap.node_by_name["n2"]
    assert n2.idle()[GPU] == 5 and n2.idle()[CPU] == 60000
    assert np.array_equal(n2.idle(), n2.allocatable() - task.request)
    assert snap.bind_requests["ns/p"].selected_node == "n2"


@pytest.mark.parametrize(
    "bind_request",
    [
        pytest.param(b.bind_request("p", "n2", phase="Failed"), id="failed without backoff limit"),
        pytest.param(
            b.bind_request("p", "n2", phase="Failed", failed_attempts=3, backoff_limit=3),
            id="failed at its backoff limit",
        ),
        pytest.param(b.bind_request("p", "gone"), id="for a node that does not exist"),
    ],
)
def test_stale_bind_requests_hold_nothing_and_are_listed_for_deletion(bind_request: JSON) -> None:
    snap = _snap(b.pod("p", gpus=3), bind_request)
    assert b.task(snap, "p").status == S.PENDING
    assert [br.meta.name for br in snap.stale_bind_requests] == ["p"]
    assert snap.bind_requests == {}
    assert np.array_equal(snap.arrays.idle, snap.arrays.allocatable)


QUEUES = [
    b.queue("org"),
    b.queue("team", parent="org"),
    b.queue("lost", parent="ghost"),
    b.queue("lost-child", parent="lost"),
    b.queue("c1", parent="c2"),
    b.queue("c2", parent="c1"),
    b.queue("under-cycle", parent="c1"),
]


def test_queues_with_a_missing_parent_or_in_a_cycle_are_dropped_and_the_rest_kept() -> None:
    snap = b.snapshot([b.node("n1"), *QUEUES])
    assert sorted(snap.queues) == ["org", "team"]
    assert snap.queues["org"].children == ["team"] and snap.queues["team"].is_leaf
    reasons = {p.key: p.reason for p in snap.problems if p.kind == "Queue"}
    assert reasons == {
        "lost": "ParentQueueDoesNotExist",
        "lost-child": "ParentQueueDoesNotExist",
        "c1": "QueueCycle",
        "c2": "QueueCycle",
        "under-cycle": "QueueCycle",
    }


def test_problem_messages_name_the_queues() -> None:
    snap = b.snapshot([b.node("n1"), *QUEUES])
    messages = {p.key: p.message for p in snap.problems}
    assert messages["lost"] == "parent queue 'ghost' of queue 'lost' does not exist"
    assert messages["c1"] == "queue 'c1' is in a parent cycle (spec.parentQueue): c1 → c2 → c1"


def test_the_queue_tree_does_not_depend_on_input_order() -> None:
    first = b.snapshot([b.node("n1"), *QUEUES])
    second = b.snapshot([b.node("n1"), *reversed(QUEUES)])
    assert {n: q.children for n, q in first.queues.items()} == {n: q.children for n, q in second.queues.items()}
    assert first.problems == second.problems


def test_the_queue_tree_is_carried_while_the_queue_objects_are_the_same() -> None:
    queues = [Queue.from_dict(q) for q in QUEUES]
    first = QueueTree.of(queues, None)
    assert QueueTree.of(list(queues), first) is first
    assert {p.key for p in first.problems} == {"lost", "lost-child", "c1", "c2", "under-cycle"}
    replaced = [Queue.from_dict(b.queue("org", gpu_quota=4)), *queues[1:]]
    renewed = QueueTree.of(replaced, first)
    assert renewed is not first and renewed.tree["org"].deserved[2] == 4  # (cpu, memory, gpu)
    assert QueueTree.of(queues[:-1], first) is not first


def test_the_queue_tree_is_carried_over_new_versions_of_the_same_queues() -> None:
    def version(q: dict[str, Any], rv: str, **changes: Any) -> Queue:
        obj = {**q, "metadata": {**q["metadata"], "resourceVersion": rv}, "status": {"allocated": {"gpu": rv}}}
        obj["spec"] = {**obj["spec"], **changes}
        return Queue.from_dict(obj)

    first = QueueTree.of([version(q, "1") for q in QUEUES], None)
    statuses = [version(q, "2") for q in QUEUES]  # a status written to each: new objects, nothing the tree reads
    carried = QueueTree.of(statuses, first)
    assert carried.tree is first.tree and carried.queues == tuple(statuses)
    assert QueueTree.of(statuses, carried) is carried
    changed = [version(QUEUES[0], "3", priority=7), *statuses[1:]]
    assert QueueTree.of(changed, carried).tree["org"].priority == 7
    labelled = Queue.from_dict({**QUEUES[0], "metadata": {**QUEUES[0]["metadata"], "labels": {"a": "b"}}})
    assert QueueTree.of([labelled, *statuses[1:]], carried).tree is not first.tree


@pytest.mark.parametrize(
    "queue, message",
    [
        pytest.param("nowhere", "queue 'nowhere' does not exist", id="a queue that does not exist"),
        pytest.param("org", "queue 'org' is not a leaf queue", id="a parent queue"),
        pytest.param(
            "lost",
            "queue 'lost' is left out of the queue tree: parent queue 'ghost' of queue 'lost' does not exist",
            id="a queue dropped for its missing parent",
        ),
        pytest.param(
            "c1",
            "queue 'c1' is left out of the queue tree: "
            "queue 'c1' is in a parent cycle (spec.parentQueue): c1 → c2 → c1",
            id="a queue dropped for a parent cycle",
        ),
    ],
)
def test_a_job_without_a_usable_queue_gets_a_queue_does_not_exist_problem(queue: str, message: str) -> None:
    snap = b.snapshot(
        [
            b.node("n1"),
            *QUEUES,
            b.podgroup("j", queue=queue),
            b.pod("j-0", group="j"),
            b.podgroup("ok", queue="team"),
            b.pod("ok-0", group="ok"),
        ]
    )
    assert snap.job_problems["pg-j"] == [Problem("PodGroup", "ns/j", constants.REASON_QUEUE_DOES_NOT_EXIST, message)]
    assert "pg-ok" not in snap.job_problems
    assert "pg-j" in snap.jobs, "the job is still known (for its status), only not schedulable"


def test_other_schedulers_pods_consume_node_resources_and_count_in_other_usage() -> None:
    snap = _snap(
        b.pod("theirs", cpu="4", memory="8Gi", gpus=1, node="n1", scheduler="default-scheduler"),
        b.pod("theirs-pending", cpu="4", scheduler="default-scheduler"),
        b.pod("mine", cpu="2", gpus=1, node="n1"),
    )
    n1 = snap.node_by_name["n1"]
    assert n1.idle()[CPU] == 64000 - 4000 - 2000 and n1.idle()[GPU] == 6
    assert snap.other_usage[CPU] == 4000 and snap.other_usage[GPU] == 1 and snap.other_usage[PODS] == 1
    assert sorted(t.name for t in snap.tasks.values()) == ["mine"], "only our pods become tasks"
    total = snap.total_capacity()
    assert total[CPU] == 2 * 64000 - 4000 and total[GPU] == 16 - 1


def test_our_pod_on_a_node_outside_the_snapshot_is_a_problem() -> None:
    snap = _snap(b.pod("p", node="gone"), b.pod("theirs", node="gone", scheduler="default-scheduler"))
    assert [(p.kind, p.key, p.reason) for p in snap.problems] == [("Pod", "ns/p", "NodeDoesNotExist")]
    # A deleted node leaves its pods behind until the pod garbage collector removes them: not only another pool.
    assert snap.problems[0].message == "pod is on node 'gone', which does not exist or is not in this node pool"


def test_nodes_of_another_node_pool_are_left_out() -> None:
    snap = b.snapshot([b.node("n1"), b.node("n2", labels={constants.DEFAULT_NODE_POOL_LABEL_KEY: "other"})])
    assert [n.name for n in snap.nodes] == ["n1"]


def test_nodes_are_in_name_order_and_ranked_by_name() -> None:
    snap = b.snapshot([b.node("n3"), b.node("n1"), b.node("n2")])
    assert [n.name for n in snap.nodes] == ["n1", "n2", "n3"]
    assert snap.arrays.name_rank.tolist() == [0, 1, 2]


def test_unready_and_cordoned_nodes_are_not_schedulable() -> None:
    snap = b.snapshot([b.node("a"), b.node("b", ready=False), b.node("c", unschedulable=True)])
    assert snap.arrays.schedulable.tolist() == [True, False, False]
    assert snap.total_capacity()[GPU] == 8


@pytest.mark.parametrize(
    "priority_class, classes, priority, preemptible",
    [
        pytest.param("train", [("train", 50, False)], 50, True, id="train is preemptible"),
        pytest.param("inference", [("inference", 125, False)], 125, False, id="inference is not preemptible"),
        pytest.param("missing", [("train", 50, False)], 50, True, id="an unknown class gives the default 50"),
        pytest.param("", [("train", 50, False)], 50, True, id="no class gives the default 50"),
        pytest.param(
            "", [("cluster-default", 150, True)], 150, False, id="no class gives the globalDefault class's value"
        ),
        pytest.param(
            "missing",
            [("cluster-default", 150, True)],
            150,
            False,
            id="an unknown class gives the globalDefault class's value",
        ),
    ],
)
def test_job_priority_and_preemptibility(
    priority_class: str, classes: list[tuple[str, int, bool]], priority: int, preemptible: bool
) -> None:
    pcs = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": n},
            "value": v,
            "globalDefault": g,
        }
        for n, v, g in classes
    ]
    snap = _snap(*pcs, b.podgroup("j", priority_class=priority_class), b.pod("j-0", group="j"))
    job = snap.jobs["pg-j"]
    assert (job.priority, job.preemptible) == (priority, preemptible)


@pytest.mark.parametrize(
    "preemptibility, priority_class, preemptible",
    [
        pytest.param("preemptible", "inference", True, id="explicitly preemptible beats a high priority"),
        pytest.param("non-preemptible", "train", False, id="explicitly non-preemptible beats a low priority"),
    ],
)
def test_explicit_preemptibility(preemptibility: str, priority_class: str, preemptible: bool) -> None:
    pcs = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc.name},
            "value": pc.value,
        }
        for pc in priorityclass.SHIPPED
    ]
    snap = _snap(
        *pcs, b.podgroup("j", priority_class=priority_class, preemptibility=preemptibility), b.pod("j-0", group="j")
    )
    assert snap.jobs["pg-j"].preemptible is preemptible


def test_pods_join_their_podgroup_by_annotation() -> None:
    snap = _snap(b.podgroup("j"), b.pod("j-0", group="j"), b.pod("j-1", group="j"), b.pod("other-0", group="other"))
    assert [t.name for t in snap.jobs["pg-j"].tasks] == ["j-0", "j-1"]
    assert all(t.job_uid == "pg-j" for t in snap.jobs["pg-j"].tasks)


def test_podgroup_timestamps_are_read_from_annotations() -> None:
    notes = {
        constants.ANNOTATION_LAST_START_TIMESTAMP: "2026-01-01T00:00:00Z",
        constants.ANNOTATION_STALE_TIMESTAMP: "not a time",
    }
    job = _snap(b.podgroup("j", annotations=notes), b.pod("j-0", group="j")).jobs["pg-j"]
    assert job.last_start == b.NOW and job.stale_since is None and job.last_eviction is None


def test_a_backed_off_podgroup_with_an_unschedulable_condition_is_skipped() -> None:
    pg = b.podgroup("j", schedulingBackoff=1)
    pg["status"] = {
        "schedulingConditions": [
            {
                "type": "UnschedulableOnNodePool",
                "nodePool": "",
                "reasons": [{"reason": "Unschedulable", "message": "no"}],
            }
        ]
    }
    snap = _snap(pg, b.pod("j-0", group="j"))
    assert "pg-j" not in snap.jobs


# --- queue access control ---------------------------------------------------------------------------------


def _access_objects(*, allowed: list[str], labels: dict[str, str] | None = None) -> list[JSON]:
    team = b.queue("team")
    team["spec"]["allowedNamespaces"] = allowed
    team["spec"]["allowedNamespaceSelector"] = {"matchLabels": {"gpu-team": "yes"}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": b.NAMESPACE, "labels": labels or {}}}
    return [b.node("n1"), team, namespace, b.podgroup("j", queue="team"), b.pod("j-0", group="j")]


def _params(access: bool) -> snapshots.SnapshotParams:
    return snapshots.SnapshotParams(now=b.NOW, queue_access_control=access)


REFUSED = Problem(
    "PodGroup",
    "ns/j",
    constants.REASON_NAMESPACE_NOT_ALLOWED,
    "queue 'team' does not admit namespace 'ns' (spec.allowedNamespaces: other; spec.allowedNamespaceSelector)",
)


@pytest.mark.parametrize("memo", [False, True], ids=["fresh", "kept"])
def test_a_job_whose_queue_does_not_admit_its_namespace_is_unschedulable_only_with_access_control(memo: bool) -> None:
    objects = b.objects(_access_objects(allowed=["other"]))
    off = snapshots.build(objects, _params(False), snapshots.Memo() if memo else None)
    assert off.job_problems == {}
    on = snapshots.build(objects, _params(True), snapshots.Memo() if memo else None)
    assert on.job_problems == {"pg-j": [REFUSED]}
    admitted = b.objects(_access_objects(allowed=["other"], labels={"gpu-team": "yes"}))
    assert snapshots.build(admitted, _params(True), snapshots.Memo() if memo else None).job_problems == {}


def test_a_kept_model_follows_namespace_labels_and_queue_access_changes() -> None:
    """The pods and PodGroup stay the same objects (a kept model keeps their records); only the Namespace or the
    Queue changes, as when a user labels a namespace or edits a queue."""
    memo = snapshots.Memo()
    objects = b.objects(_access_objects(allowed=["other"]))
    assert snapshots.build(objects, _params(True), memo).job_problems
    objects.namespaces = b.objects(_access_objects(allowed=["other"], labels={"gpu-team": "yes"})).namespaces
    assert snapshots.build(objects, _params(True), memo).job_problems == {}
    objects.namespaces = b.objects(_access_objects(allowed=["other"])).namespaces
    assert snapshots.build(objects, _params(True), memo).job_problems
    objects.queues = b.objects(_access_objects(allowed=["ns"])).queues
    assert snapshots.build(objects, _params(True), memo).job_problems == {}


@pytest.mark.parametrize(
    "subgroups, message",
    [
        pytest.param(
            {"a-0": "a", "b-0": "b"},
            "pods name subgroups that the PodGroup does not declare: b",
            id="a subgroup the PodGroup does not declare",
        ),
        pytest.param(
            {"a-0": "a", "x-0": "", "x-1": ""},
            f"pods without a {constants.LABEL_SUBGROUP_NAME} label in a PodGroup with subgroups: x-0, x-1",
            id="no subgroup label in a PodGroup with subgroups (was 'does not declare: ')",
        ),
        pytest.param(
            {"b-0": "b", "x-0": ""},
            "pods name subgroups that the PodGroup does not declare: b; "
            f"pods without a {constants.LABEL_SUBGROUP_NAME} label in a PodGroup with subgroups: x-0",
            id="both",
        ),
    ],
)
def test_pods_in_no_subgroup_are_a_problem_naming_them(subgroups: dict[str, str], message: str) -> None:
    snap = _snap(
        b.podgroup("j", min_member=None, sub_groups=[{"name": "a", "minMember": 1}]),
        *(b.pod(name, group="j", subgroup=subgroup) for name, subgroup in subgroups.items()),
    )
    assert [(p.key, p.reason, p.message) for p in snap.problems] == [("ns/j", "SubGroupDoesNotExist", message)]


@pytest.mark.parametrize("memo", [False, True], ids=["fresh", "kept"])
def test_pods_of_equal_requests_share_one_read_only_request_vector(memo: bool) -> None:
    """Requests equal to the bit give equal vectors: one build makes one of each (a GPU-sharing pod's has no GPU);
    an amount of -0 is not one of 0, which compares equal."""
    objects = b.objects(
        [
            b.queue("q"),
            b.node("n1"),
            b.pod("a", gpus=1, node="n1"),
            b.pod("b", gpus=1),
            b.pod("c", gpus=2),
            b.pod("d", cpu="2"),
            b.pod("e", cpu="2", fraction=0.5),
            b.pod("f", cpu="2", fraction=0.5, node="n1", gpu_groups=["g1"]),
            b.pod("zero", extended={"example.com/dev": "0"}),
            b.pod("zero-again", extended={"example.com/dev": "0"}),
        ]
    )
    negative = objects.pods[-1]
    assert negative.name == "zero-again"
    objects.pods[-1] = dataclasses.replace(negative, requests={**negative.requests, "example.com/dev": -0.0})
    snap = snapshots.build(objects, snapshots.SnapshotParams(now=b.NOW), snapshots.Memo() if memo else None)
    request = {name: b.task(snap, name).request for name in ("a", "b", "c", "d", "e", "f", "zero", "zero-again")}
    assert request["a"] is request["b"] and request["e"] is request["f"]
    assert len({id(v) for v in request.values()}) == 6
    assert not any(v.flags.writeable for v in request.values())
    assert request["a"][GPU] == 1 and request["c"][GPU] == 2 and request["e"][GPU] == 0
    assert request["d"][CPU] == request["e"][CPU] == 2000
    assert request["zero"].tobytes() != request["zero-again"].tobytes()


@pytest.mark.parametrize("memo", [False, True], ids=["fresh", "kept"])
def test_tasks_of_one_request_and_as_many_gpus_share_one_queue_vector(memo: bool) -> None:
    """The queue sums' rows: tasks of one request vector and as many GPUs accepted share a read-only vector;
    GPU-sharing tasks of one request share it only at the same portion."""
    objects = b.objects(
        [
            b.queue("q"),
            b.node("n1"),
            b.podgroup("j"),
            *(b.pod(name, group="j", gpus=1, node="n1" if name == "a" else "") for name in ("a", "b")),
            b.pod("c", group="j", gpus=2),
            *(b.pod(name, group="j", fraction=0.5) for name in ("half", "half-again")),
            b.pod("quarter", group="j", fraction=0.25),
        ]
    )
    snap = snapshots.build(objects, snapshots.SnapshotParams(now=b.NOW), snapshots.Memo() if memo else None)
    row = {t.name: t.queue_request() for t in snap.tasks.values()}
    assert row["a"] is row["b"] and row["half"] is row["half-again"]
    assert len({id(v) for v in row.values()}) == 4
    assert not any(v.flags.writeable for v in row.values())
    assert [row[n][GPU] for n in ("a", "c", "half", "quarter")] == [1, 2, 0.5, 0.25]
