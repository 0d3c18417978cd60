"""predicates: each check keeps the right nodes and names its reason as kube-scheduler does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kai_scheduler.api.fields import JSON
from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.framework import points
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.statement import Eviction
from kai_scheduler.plugins.predicates import plugin as predicates
from kai_scheduler.plugins.predicates.plugin import Predicates
from tests.plugins import builders as b
from tests.plugins.builders import expr, node, pod, pod_term, term, toleration

GPU_REASON = "insufficient nvidia.com/gpu"
HALF_REASON = "insufficient GPU share (needs 0.5 of one GPU)"  # a fractional pod names what it lacks
MEMORY_REASON = "insufficient GPU memory (needs 20000 MiB of one GPU)"
TAINT_GPU = "node(s) had untolerated taint {gpu: true}"


def feasible(nodes: Sequence[Node], pods: Sequence[Pod], pending: str = "p") -> tuple[list[str], dict[str, int]]:
    """Nodes where pod `pending` may go, and how many nodes each reason removed."""
    ssn = b.session(b.snapshot(nodes=nodes, pods=pods), Predicates())
    mask, report = ssn.feasible_nodes(b.task(ssn, pending))
    return b.names(ssn, mask), dict(report.removed)


# --- resources ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "nodes, pods, want, removed",
    [
        pytest.param([node("n1", gpus=8)], [pod("p", gpus=2)], ["n1"], {}, id="fits on idle GPUs"),
        pytest.param(
            [node("n1", gpus=4)],
            [pod("r", gpus=4, node="n1", deleted_at=0), pod("p", gpus=2)],
            ["n1"],
            {},
            id="fits counting releasing GPUs (pipelined)",
        ),
        pytest.param(
            [node("n1", gpus=4), node("n2", gpus=8)],
            [pod("r", gpus=4, node="n1"), pod("p", gpus=2)],
            ["n2"],
            {GPU_REASON: 1},
            id="used GPUs do not fit and the reason names the GPU",
        ),
        pytest.param([node("n1", cpu="4")], [pod("p", cpu="8")], [], {"insufficient cpu": 1}, id="reason names cpu"),
        pytest.param(
            [node("n1", cpu="4", gpus=1)],
            [pod("p", cpu="8", gpus=2)],
            [],
            {"insufficient cpu": 1},
            id="the first missing resource in axis order is named",
        ),
        pytest.param(
            [node("n1", memory="1Gi")],
            [pod("p", memory="2Gi")],
            [],
            {"insufficient memory": 1},
            id="reason names memory",
        ),
        pytest.param(
            [node("n1", extended={"example.com/nic": "1"})],
            [pod("p", extended={"example.com/nic": "2"})],
            [],
            {"insufficient example.com/nic": 1},
            id="extended resource named",
        ),
        pytest.param(
            [node("n1", pods=1), node("n2")],
            [pod("r", node="n1"), pod("p")],
            ["n2"],
            {"too many pods": 1},
            id="max pods is its own reason",
        ),
        pytest.param(
            [node("n1", pods=1)],
            [pod("r", node="n1", deleted_at=0), pod("p")],
            ["n1"],
            {},
            id="a releasing pod's slot can be pipelined",
        ),
        pytest.param([node("n1", gpus=0)], [pod("p", cpu="1")], ["n1"], {}, id="zero requests are not checked"),
    ],
)
def test_resources_fit(nodes: list[Node], pods: list[Pod], want: list[str], removed: dict[str, int]) -> None:
    assert feasible(nodes, pods) == (want, removed)


def shared_node(name: str) -> Node:
    return node(name, gpus=1, gpu_memory=40000)


GROUP = {"runai-gpu-group": "g1"}


@pytest.mark.parametrize(
    "nodes, pods, want, removed",
    [
        pytest.param([shared_node("n1")], [pod("p", fraction=0.5)], ["n1"], {}, id="fraction fits on a whole free GPU"),
        pytest.param(
            [shared_node("n1")],
            [pod("r", gpus=1, node="n1"), pod("p", fraction=0.5)],
            [],
            {HALF_REASON: 1},
            id="fraction does not fit when every GPU is used whole",
        ),
        pytest.param(
            [shared_node("n1")],
            [pod("r", fraction=0.5, node="n1", labels=GROUP), pod("p", fraction=0.5)],
            ["n1"],
            {},
            id="fraction fits in a shared GPU group with room",
        ),
        pytest.param(
            [shared_node("n1")],
            [pod("r", fraction=0.75, node="n1", labels=GROUP), pod("p", fraction=0.5)],
            [],
            {HALF_REASON: 1},
            id="fraction does not fit in a full group",
        ),
        pytest.param(
            [node("n1", gpus=1), shared_node("n2")],
            [pod("p", gpu_memory=10000)],
            ["n2"],
            {predicates.REASON_NO_GPU_MEMORY: 1},
            id="gpu-memory needs the GPU memory label",
        ),
        pytest.param(
            [node("n1", gpus=1, gpu_memory=40000)],
            [pod("r", gpu_memory=30000, node="n1", labels=GROUP), pod("p", gpu_memory=20000)],
            [],
            {MEMORY_REASON: 1},
            id="gpu-memory does not fit beyond the GPU's memory",
        ),
    ],
)
def test_shared_gpu_fit(nodes: list[Node], pods: list[Pod], want: list[str], removed: dict[str, int]) -> None:
    assert feasible(nodes, pods) == (want, removed)


def test_placements_made_in_the_session_use_capacity() -> None:
    ssn = b.session(b.snapshot(nodes=[node("n1", gpus=8)], pods=[pod("a", gpus=6), pod("p", gpus=4)]), Predicates())
    assert b.names(ssn, ssn.feasible_nodes(b.task(ssn, "p"))[0]) == ["n1"]
    ssn.statement().allocate(b.task(ssn, "a"), "n1")
    assert ssn.feasible_nodes(b.task(ssn, "p"))[1].removed == [(GPU_REASON, 1)]


@pytest.mark.parametrize(
    "request_pod, message",
    [
        pytest.param(
            pod("p", gpus=16), "the task requests 16 GPUs; the largest node has 8 GPUs", id="more GPUs than any node"
        ),
        pytest.param(
            pod("p", cpu="100"), "the task requests 100 CPU; the largest node has 64 CPU", id="more CPU than any node"
        ),
        pytest.param(pod("p", gpus=8), None, id="as large as the largest node passes"),
    ],
)
def test_max_node_pool_resources(request_pod: Pod, message: str | None) -> None:
    snap = b.snapshot(nodes=[node("n1", gpus=8), node("n2", gpus=4)], pods=[request_pod])
    ssn = b.session(snap, Predicates())
    task = b.task(ssn, "p")
    reject = ssn.pre_predicate(task, ssn.job(task.job_uid))
    assert (reject.message if reject else None) == message
    if reject:
        assert reject.plugin == "predicates"
    # No eviction makes a node larger: the victim actions are told to skip such a job.
    invariant = ssn.victim_invariant_pre_predicate(task, ssn.job(task.job_uid))
    assert (invariant.message if invariant else None) == message


# --- node state, taints, selectors, affinity --------------------------------------------------------------


@pytest.mark.parametrize(
    "nodes, tolerations, want, removed",
    [
        pytest.param(
            [node("n1", unschedulable=True), node("n2")],
            [],
            ["n2"],
            {predicates.REASON_UNSCHEDULABLE_NODE: 1},
            id="cordoned node is unschedulable",
        ),
        pytest.param(
            [node("n1", ready=False), node("n2")], [], ["n2"], {predicates.REASON_NOT_READY: 1}, id="not ready node"
        ),
        pytest.param(
            [node("n1", unschedulable=True)],
            [toleration("node.kubernetes.io/unschedulable", operator="Exists")],
            ["n1"],
            {},
            id="the unschedulable taint can be tolerated",
        ),
    ],
)
def test_node_state(nodes: list[Node], tolerations: list[JSON], want: list[str], removed: dict[str, int]) -> None:
    assert feasible(nodes, [pod("p", tolerations=tolerations)]) == (want, removed)


@pytest.mark.parametrize(
    "taint, tolerations, passes",
    [
        pytest.param("gpu=true:NoSchedule", [], False, id="untolerated NoSchedule blocks"),
        pytest.param("gpu=true:NoExecute", [], False, id="untolerated NoExecute blocks"),
        pytest.param("gpu=true:PreferNoSchedule", [], True, id="PreferNoSchedule is ignored"),
        pytest.param("gpu=true:NoSchedule", [toleration("gpu", value="true")], True, id="Equal with value tolerates"),
        pytest.param(
            "gpu=true:NoSchedule", [toleration("gpu", value="false")], False, id="Equal with another value does not"
        ),
        pytest.param(
            "gpu=true:NoSchedule", [toleration("gpu", operator="Exists")], True, id="Exists tolerates any value"
        ),
        pytest.param(
            "gpu=true:NoSchedule", [toleration(operator="Exists")], True, id="Exists without key tolerates everything"
        ),
        pytest.param(
            "gpu=true:NoSchedule",
            [toleration("gpu", value="true", effect="NoSchedule")],
            True,
            id="matching effect tolerates",
        ),
        pytest.param(
            "gpu=true:NoSchedule",
            [toleration("gpu", value="true", effect="NoExecute")],
            False,
            id="other effect does not tolerate",
        ),
    ],
)
def test_taints(taint: str, tolerations: list[JSON], passes: bool) -> None:
    got = feasible([node("n1", labels={"gpu": "true"}, taints=[taint])], [pod("p", tolerations=tolerations)])
    assert got == ((["n1"], {}) if passes else ([], {TAINT_GPU: 1}))


def test_each_taint_is_its_own_reason() -> None:
    nodes = [node("n1", taints=["gpu=true:NoSchedule"]), node("n2", taints=["team=b:NoExecute"]), node("n3")]
    team = "node(s) had untolerated taint {team: b}"
    assert feasible(nodes, [pod("p")]) == (["n3"], {TAINT_GPU: 1, team: 1})


ZONES = [node("a1", labels={"zone": "a", "size": "10"}), node("b1", labels={"zone": "b", "size": "20"}), node("x1")]


@pytest.mark.parametrize(
    "selector, affinity, want",
    [
        pytest.param({"zone": "a"}, [], ["a1"], id="nodeSelector matches the label"),
        pytest.param({"zone": "c"}, [], [], id="nodeSelector without a match"),
        pytest.param({}, [term(expr("zone", "In", "a", "b"))], ["a1", "b1"], id="In"),
        pytest.param({}, [term(expr("zone", "NotIn", "a"))], ["b1", "x1"], id="NotIn passes a missing label"),
        pytest.param({}, [term(expr("zone", "Exists"))], ["a1", "b1"], id="Exists"),
        pytest.param({}, [term(expr("zone", "DoesNotExist"))], ["x1"], id="DoesNotExist"),
        pytest.param({}, [term(expr("size", "Gt", "15"))], ["b1"], id="Gt compares integers"),
        pytest.param({}, [term(expr("size", "Lt", "15"))], ["a1"], id="Lt compares integers"),
        pytest.param({}, [term(expr("zone", "Gt", "1"))], [], id="Gt on a non-integer label fails"),
        pytest.param(
            {}, [term(expr("zone", "In", "a")), term(expr("zone", "In", "b"))], ["a1", "b1"], id="terms are ORed"
        ),
        pytest.param(
            {},
            [term(expr("zone", "In", "a", "b"), expr("size", "Gt", "15"))],
            ["b1"],
            id="requirements of a term are ANDed",
        ),
        pytest.param({}, [term(fields=[expr("metadata.name", "In", "x1")])], ["x1"], id="matchFields metadata.name"),
        pytest.param({"zone": "a"}, [term(expr("zone", "In", "b"))], [], id="selector AND affinity"),
        pytest.param({}, [term()], [], id="an empty term matches no node"),
    ],
)
def test_node_selector_and_affinity(selector: dict[str, str], affinity: list[JSON], want: list[str]) -> None:
    names, removed = feasible(ZONES, [pod("p", node_selector=selector, node_affinity=affinity)])
    assert names == want
    assert removed == ({predicates.REASON_NODE_AFFINITY: 3 - len(want)} if len(want) < 3 else {})


def test_constraint_masks_are_evaluated_once_per_key() -> None:
    pods = [
        pod(f"p{i}", node_selector={"zone": "a"}, tolerations=[toleration("gpu", operator="Exists")]) for i in range(5)
    ]
    pods.append(pod("other", node_selector={"zone": "b"}))
    plugin = Predicates()
    ssn = b.session(b.snapshot(nodes=ZONES, pods=pods), plugin)
    for _ in range(3):
        for name in [*(f"p{i}" for i in range(5)), "other"]:
            ssn.feasible_nodes(b.task(ssn, name))
    assert plugin.constraint_evaluations == 2


# --- inter-pod affinity -------------------------------------------------------------------------------------

RACKS = [
    node("n1", labels={"rack": "r1"}),
    node("n2", labels={"rack": "r1"}),
    node("n3", labels={"rack": "r2"}),
    node("n4"),
]
DB = {"app": "db"}


@pytest.mark.parametrize(
    "pods, want, removed",
    [
        pytest.param(
            [pod("db", node="n1", labels=DB), pod("p", pod_affinity=[pod_term("rack", app="db")])],
            ["n1", "n2"],
            {predicates.REASON_POD_AFFINITY: 2},
            id="co-locate in the matching pod's rack",
        ),
        pytest.param(
            [pod("p", labels=DB, pod_affinity=[pod_term("rack", app="db")])],
            ["n1", "n2", "n3"],
            {predicates.REASON_POD_AFFINITY: 1},
            id="first pod of a self-affine group goes to any rack",
        ),
        pytest.param(
            [pod("p", pod_affinity=[pod_term("rack", app="db")])],
            [],
            {predicates.REASON_POD_AFFINITY: 4},
            id="no matching pod and not self-affine",
        ),
        pytest.param(
            [pod("db", node="n3", labels=DB, namespace="other"), pod("p", pod_affinity=[pod_term("rack", app="db")])],
            [],
            {predicates.REASON_POD_AFFINITY: 4},
            id="pods of other namespaces do not count",
        ),
        pytest.param(
            [
                pod("db", node="n3", labels=DB, namespace="other"),
                pod("p", pod_affinity=[pod_term("rack", namespaces=["other"], app="db")]),
            ],
            ["n3"],
            {predicates.REASON_POD_AFFINITY: 3},
            id="term namespaces widen the search",
        ),
        pytest.param(
            [
                pod("db", node="n3", labels=DB),
                pod("p", pod_affinity=[pod_term("rack", expressions=[expr("app", "In", "db", "cache")])]),
            ],
            ["n3"],
            {predicates.REASON_POD_AFFINITY: 3},
            id="matchExpressions selector",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels={"app": "web"}),
                pod("p", labels={"app": "web"}, pod_anti_affinity=[pod_term(b.HOSTNAME, app="web")]),
            ],
            ["n2", "n3", "n4"],
            {predicates.REASON_POD_ANTI_AFFINITY: 1},
            id="anti-affinity spreads by hostname",
        ),
        pytest.param(
            [pod("web", node="n1", labels={"app": "web"}), pod("p", pod_anti_affinity=[pod_term("rack", app="web")])],
            ["n3", "n4"],
            {predicates.REASON_POD_ANTI_AFFINITY: 2},
            id="anti-affinity keeps out of the rack; no key passes",
        ),
        pytest.param(
            [pod("guard", node="n1", pod_anti_affinity=[pod_term("rack", app="web")]), pod("p", labels={"app": "web"})],
            ["n3", "n4"],
            {predicates.REASON_EXISTING_ANTI_AFFINITY: 2},
            id="existing pods' anti-affinity is symmetric",
        ),
    ],
)
def test_inter_pod_affinity(pods: list[Pod], want: list[str], removed: dict[str, int]) -> None:
    assert feasible(RACKS, pods) == (want, removed)


OTHER_DB = [b.namespace("other", team="db")]  # pods of `other` are chosen by namespaceSelector team=db
IN_DB = {"matchLabels": {"team": "db"}}
IN_WEB = {"matchLabels": {"team": "web"}}


@pytest.mark.parametrize(
    "namespaces, pods, want, removed",
    [
        pytest.param(
            OTHER_DB,
            [
                pod("db", node="n3", labels=DB, namespace="other"),
                pod("p", pod_affinity=[pod_term("rack", namespace_selector=IN_DB, app="db")]),
            ],
            ["n3"],
            {predicates.REASON_POD_AFFINITY: 3},
            id="a namespaceSelector reaches the pods of the namespaces it matches",
        ),
        pytest.param(
            OTHER_DB,
            [
                pod("db", node="n3", labels=DB, namespace="other"),
                pod("p", pod_affinity=[pod_term("rack", namespace_selector=IN_WEB, app="db")]),
            ],
            [],
            {predicates.REASON_POD_AFFINITY: 4},
            id="a namespaceSelector that matches no namespace reaches no pod",
        ),
        pytest.param(
            [],
            [
                pod("db", node="n3", labels=DB, namespace="other"),
                pod("p", pod_affinity=[pod_term("rack", namespace_selector={}, app="db")]),
            ],
            ["n3"],
            {predicates.REASON_POD_AFFINITY: 3},
            id="the empty namespaceSelector reaches every namespace",
        ),
        pytest.param(
            OTHER_DB,
            [
                pod("db", node="n1", labels=DB),
                pod("p", pod_affinity=[pod_term("rack", namespace_selector=IN_DB, app="db")]),
            ],
            [],
            {predicates.REASON_POD_AFFINITY: 4},
            id="a namespaceSelector does not add the pod's own namespace",
        ),
        pytest.param(
            OTHER_DB,
            [
                pod("db", node="n1", labels=DB, namespace="listed"),
                pod("db", node="n3", labels=DB, namespace="other"),
                pod("p", pod_affinity=[pod_term("rack", namespaces=["listed"], namespace_selector=IN_DB, app="db")]),
            ],
            ["n1", "n2", "n3"],
            {predicates.REASON_POD_AFFINITY: 1},
            id="namespaces and namespaceSelector: their union",
        ),
        pytest.param(
            [b.namespace(b.NAMESPACE, team="db")],
            [pod("p", labels=DB, pod_affinity=[pod_term("rack", namespace_selector=IN_DB, app="db")])],
            ["n1", "n2", "n3"],
            {predicates.REASON_POD_AFFINITY: 1},
            id="the first of a self-affine group whose own namespace the selector matches",
        ),
        pytest.param(
            OTHER_DB,
            [pod("p", labels=DB, pod_affinity=[pod_term("rack", namespace_selector=IN_DB, app="db")])],
            [],
            {predicates.REASON_POD_AFFINITY: 4},
            id="not self-affine when the selector leaves out the pod's own namespace",
        ),
        pytest.param(
            OTHER_DB,
            [
                pod("web", node="n1", labels={"app": "web"}, namespace="other"),
                pod("p", pod_anti_affinity=[pod_term(b.HOSTNAME, namespace_selector=IN_DB, app="web")]),
            ],
            ["n2", "n3", "n4"],
            {predicates.REASON_POD_ANTI_AFFINITY: 1},
            id="anti-affinity keeps away from the pods of the namespaces the selector matches",
        ),
        pytest.param(
            [b.namespace(b.NAMESPACE, team="web")],
            [
                pod(
                    "guard",
                    node="n1",
                    namespace="other",
                    pod_anti_affinity=[pod_term("rack", namespace_selector=IN_WEB, app="web")],
                ),
                pod("p", labels={"app": "web"}),
            ],
            ["n3", "n4"],
            {predicates.REASON_EXISTING_ANTI_AFFINITY: 2},
            id="an existing pod's selector is matched against the labels of the incoming pod's namespace",
        ),
        pytest.param(
            [b.namespace(b.NAMESPACE, team="db")],
            [
                pod(
                    "guard",
                    node="n1",
                    namespace="other",
                    pod_anti_affinity=[pod_term("rack", namespace_selector=IN_WEB, app="web")],
                ),
                pod("p", labels={"app": "web"}),
            ],
            ["n1", "n2", "n3", "n4"],
            {},
            id="an existing pod's selector that does not match the incoming pod's namespace",
        ),
        pytest.param(
            [],
            [
                pod(
                    "guard",
                    node="n1",
                    namespace="other",
                    pod_anti_affinity=[pod_term("rack", namespace_selector={}, app="web")],
                ),
                pod("p", labels={"app": "web"}),
            ],
            ["n3", "n4"],
            {predicates.REASON_EXISTING_ANTI_AFFINITY: 2},
            id="an existing pod's empty selector covers every namespace",
        ),
    ],
)
def test_inter_pod_affinity_namespace_selector(
    namespaces: list[Namespace], pods: list[Pod], want: list[str], removed: dict[str, int]
) -> None:
    ssn = b.session(b.snapshot(nodes=RACKS, pods=pods, namespaces=namespaces), Predicates())
    mask, report = ssn.feasible_nodes(b.task(ssn, "p"))
    assert (b.names(ssn, mask), dict(report.removed)) == (want, removed)


def test_pod_affinity_follows_placements_made_in_the_session() -> None:
    pods = [pod("db", labels=DB), pod("p", pod_affinity=[pod_term("rack", app="db")])]
    ssn = b.session(b.snapshot(nodes=RACKS, pods=pods), Predicates())
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "db"), "n3")
    assert b.names(ssn, ssn.feasible_nodes(b.task(ssn, "p"))[0]) == ["n3"]
    stmt.discard()
    assert b.names(ssn, ssn.feasible_nodes(b.task(ssn, "p"))[0]) == []


def test_anti_affinity_counts_releasing_pods_until_gone() -> None:
    pods = [pod("web", node="n1", labels={"app": "web"}), pod("p", pod_anti_affinity=[pod_term(b.HOSTNAME, app="web")])]
    ssn = b.session(b.snapshot(nodes=RACKS, pods=pods), Predicates())
    ssn.statement().evict(b.task(ssn, "web"), Eviction("test", "", "make room"))
    assert b.names(ssn, ssn.feasible_nodes(b.task(ssn, "p"))[0]) == ["n2", "n3", "n4"]


# --- configuration and shape -------------------------------------------------------------------------------


def test_arguments_are_rejected() -> None:
    with pytest.raises(ConfigError, match="plugin predicates: takes no arguments"):
        Predicates.from_args({"x": "1"})


def test_every_check_answers_for_all_nodes() -> None:
    ssn = b.session(b.snapshot(nodes=RACKS, pods=[pod("p", gpus=1)]), Predicates())
    task = b.task(ssn, "p")
    for _, check in ssn.hooks(points.PREDICATE):
        result = check(task, ssn.all_nodes())
        assert result is None or (result.mask.shape == (4,) and result.mask.dtype == np.bool_)


def test_a_group_opened_in_the_session_takes_the_next_fraction() -> None:
    pods = [pod("first", fraction=0.5), pod("p", fraction=0.5)]
    ssn = b.session(b.snapshot(nodes=[shared_node("n1")], pods=pods), Predicates())
    ssn.statement().allocate(b.task(ssn, "first"), "n1", ("g1",))
    assert b.names(ssn, ssn.feasible_nodes(b.task(ssn, "p"))[0]) == ["n1"]
