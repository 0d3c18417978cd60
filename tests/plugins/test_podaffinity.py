"""podaffinity: kube-scheduler's InterPodAffinity raw score per node, times KAI's k8s-plugin decade (10⁶)."""

from __future__ import annotations

import pytest

from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.pod import Pod
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.podaffinity import PodAffinity
from tests.plugins import builders as b
from tests.plugins.builders import HOSTNAME, node, pod, pod_term, weighted

K8S = 1_000_000.0
WEB = {"app": "web"}
NODES = [node("n1", labels={"rack": "r1"}), node("n2", labels={"rack": "r1"}), node("n3", labels={"rack": "r2"})]


def scores(pods: list[Pod], name: str = "p") -> list[float]:
    ssn = b.session(b.snapshot(nodes=NODES, pods=pods), PodAffinity())
    return [float(s) for s in ssn.node_scores(b.task(ssn, name), ssn.all_nodes())]


@pytest.mark.parametrize(
    "pods, want",
    [
        pytest.param([pod("web", node="n1", labels=WEB), pod("p")], [0, 0, 0], id="no preferred term anywhere"),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", **WEB))]),
            ],
            [10 * K8S, 10 * K8S, 0],
            id="affinity adds the weight to every node of the selected pod's domain",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB),
                pod("web2", node="n3", labels=WEB),
                pod("web3", node="n3", labels=WEB),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", **WEB))]),
            ],
            [10 * K8S, 10 * K8S, 20 * K8S],
            id="each selected pod counts: two in a domain add twice",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB),
                pod("p", preferred_pod_anti_affinity=[weighted(30, pod_term(HOSTNAME, **WEB))]),
            ],
            [-30 * K8S, 0, 0],
            id="anti-affinity subtracts the weight",
        ),
        pytest.param(
            [
                pod("guard", node="n3", preferred_pod_affinity=[weighted(7, pod_term("rack", **WEB))]),
                pod("p", labels=WEB),
            ],
            [0, 0, 7 * K8S],
            id="an existing pod's preferred affinity that selects the task counts",
        ),
        pytest.param(
            [
                pod("guard", node="n1", preferred_pod_anti_affinity=[weighted(7, pod_term("rack", **WEB))]),
                pod("p", labels=WEB),
            ],
            [-7 * K8S, -7 * K8S, 0],
            id="an existing pod's preferred anti-affinity that selects the task counts against",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB, preferred_pod_affinity=[weighted(10, pod_term(HOSTNAME, **WEB))]),
                pod("p", labels=WEB, preferred_pod_affinity=[weighted(10, pod_term(HOSTNAME, **WEB))]),
            ],
            [20 * K8S, 0, 0],
            id="both directions add up (KAI's 2 x 10 x K8sPlugins)",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB),
                pod(
                    "p",
                    preferred_pod_affinity=[weighted(10, pod_term("rack", **WEB))],
                    preferred_pod_anti_affinity=[weighted(4, pod_term(HOSTNAME, **WEB))],
                ),
            ],
            [6 * K8S, 10 * K8S, 0],
            id="terms on different topology keys sum per node",
        ),
        pytest.param(
            [
                pod("guard", node="n1", pod_affinity=[pod_term("rack", **WEB)]),
                pod("p", labels=WEB),
            ],
            [0, 0, 0],
            id="an existing pod's required affinity adds nothing (hardPodAffinityWeight 0 in KAI)",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB, namespace="other"),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", **WEB))]),
            ],
            [0, 0, 0],
            id="a term without namespaces selects pods of the task's namespace only",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB, namespace="other"),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", namespaces=["other"], **WEB))]),
            ],
            [10 * K8S, 10 * K8S, 0],
            id="a term's namespaces widen it",
        ),
        pytest.param(
            [
                pod("web", labels=WEB),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", **WEB))]),
            ],
            [0, 0, 0],
            id="a pending pod is on no node and counts nowhere",
        ),
        pytest.param(
            [
                pod("web", node="n1", labels=WEB),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("zone", **WEB))]),
            ],
            [0, 0, 0],
            id="a pod on a node without the topology label is in no domain",
        ),
    ],
)
def test_raw_score_times_the_k8s_decade(pods: list[Pod], want: list[float]) -> None:
    assert scores(pods) == want


TEAM_WEB = {"matchLabels": {"team": "web"}}


@pytest.mark.parametrize(
    "namespaces, pods, want",
    [
        pytest.param(
            [b.namespace("other", team="web")],
            [
                pod("web", node="n1", labels=WEB, namespace="other"),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", namespace_selector=TEAM_WEB, **WEB))]),
            ],
            [10 * K8S, 10 * K8S, 0],
            id="the task's term selects pods of the namespaces its namespaceSelector matches",
        ),
        pytest.param(
            [b.namespace("other", team="db")],
            [
                pod("web", node="n1", labels=WEB, namespace="other"),
                pod("p", preferred_pod_affinity=[weighted(10, pod_term("rack", namespace_selector=TEAM_WEB, **WEB))]),
            ],
            [0, 0, 0],
            id="a namespaceSelector that matches no namespace selects nothing",
        ),
        pytest.param(
            [],
            [
                pod("web", node="n1", labels=WEB, namespace="other"),
                pod("p", preferred_pod_anti_affinity=[weighted(5, pod_term(HOSTNAME, namespace_selector={}, **WEB))]),
            ],
            [-5 * K8S, 0, 0],
            id="the empty namespaceSelector selects every namespace",
        ),
        pytest.param(
            [b.namespace(b.NAMESPACE, team="web")],
            [
                pod(
                    "guard",
                    node="n3",
                    namespace="other",
                    preferred_pod_affinity=[weighted(7, pod_term("rack", namespace_selector=TEAM_WEB, **WEB))],
                ),
                pod("p", labels=WEB),
            ],
            [0, 0, 7 * K8S],
            id="an existing pod's selector is matched against the labels of the task's namespace",
        ),
        pytest.param(
            [],
            [
                pod(
                    "guard",
                    node="n3",
                    namespace="other",
                    preferred_pod_affinity=[weighted(7, pod_term("rack", namespace_selector=TEAM_WEB, **WEB))],
                ),
                pod("p", labels=WEB),
            ],
            [0, 0, 0],
            id="an existing pod's selector does not select a task in an unlabelled namespace",
        ),
    ],
)
def test_namespace_selector(namespaces: list[Namespace], pods: list[Pod], want: list[float]) -> None:
    ssn = b.session(b.snapshot(nodes=NODES, pods=pods, namespaces=namespaces), PodAffinity())
    assert [float(s) for s in ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())] == want


def test_a_pod_placed_in_the_session_counts() -> None:
    pods = [pod("web", labels=WEB), pod("p", preferred_pod_anti_affinity=[weighted(5, pod_term(HOSTNAME, **WEB))])]
    ssn = b.session(b.snapshot(nodes=NODES, pods=pods), PodAffinity())
    ssn.statement().allocate(b.task(ssn, "web"), "n2")
    assert list(ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())) == [0, -5 * K8S, 0]


def test_a_task_with_nothing_to_score_stays_unscored_for_the_session() -> None:
    """KAI remembers a PreScore Skip by pod: later placements in the same session do not score it."""
    pods = [pod("web", labels=WEB), pod("p", preferred_pod_affinity=[weighted(5, pod_term(HOSTNAME, **WEB))])]
    ssn = b.session(b.snapshot(nodes=NODES, pods=pods), PodAffinity())
    task = b.task(ssn, "p")
    assert list(ssn.node_scores(task, ssn.all_nodes())) == [0, 0, 0]
    ssn.statement().allocate(b.task(ssn, "web"), "n2")
    assert list(ssn.node_scores(task, ssn.all_nodes())) == [0, 0, 0]
    fresh = b.session(ssn.snapshot, PodAffinity())  # a new session scores it again
    assert list(fresh.node_scores(task, fresh.all_nodes())) == [0, 5 * K8S, 0]


def test_node_order_without_its_pre_order_computes_the_scores() -> None:
    pods = [pod("web", node="n3", labels=WEB), pod("p", preferred_pod_affinity=[weighted(2, pod_term("rack", **WEB))])]
    ssn = b.session(b.snapshot(nodes=NODES, pods=pods), plugin := PodAffinity())
    result = plugin.node_order(b.task(ssn, "p"), ssn.all_nodes())
    assert result is not None and list(result) == [0, 0, 2 * K8S]


def test_arguments_are_rejected() -> None:
    with pytest.raises(ConfigError, match="takes no arguments"):
        PodAffinity.from_args({"x": "1"})
