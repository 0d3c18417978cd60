"""The real API server's refusals as the user sees them: a 422 names the object and its invalid fields; a 403 from
RBAC is one log line naming the object, and the component keeps running and doing what it may."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kai_scheduler.install.rbac import CLUSTER_RULES
from kai_scheduler.store.interface import Invalid
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import realkube
from tests.e2e import serviceaccounts
from tests.kube.conftest import Components

NAMESPACE = "kai-refusals"


def test_an_invalid_object_names_itself_and_its_fields(kube: realkube.Cluster) -> None:
    bad = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "refusal-bad"},
        "spec": {"parentQueue": 5, "resources": {"gpu": {"quota": "lots"}}},
    }
    with KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0)) as store:
        _crds(kube)
        with pytest.raises(Invalid) as caught:
            store.create(bad)
    err = caught.value
    assert err.code == 422 and str(err).startswith("create Queue refusal-bad: ")
    assert {field for field, _ in err.causes} == {"spec.parentQueue", "spec.resources.gpu.quota"}
    assert "spec.parentQueue" in str(err) and "spec.resources.gpu.quota" in str(err) and "\n" not in str(err)


def test_a_write_rbac_refuses_is_one_line_and_the_component_goes_on(
    kube: realkube.Cluster, components: Components, tmp_path: Path
) -> None:
    """The controllers run as an account without `patch podgroups/status`: the PodGroup's status write is one
    warning line naming it, while the Queue status (allowed) is written as usual."""
    _crds(kube)
    rules = [r for r in CLUSTER_RULES["controllers"] if r["resources"] != ["podgroups/status"]]
    serviceaccounts.bind_account(kube.kubeconfig, "kai-test-no-podgroup-status", "kai-scheduler", rules)
    token = serviceaccounts.token_kubeconfig(
        kube.kubeconfig, "kai-test-no-podgroup-status", "kai-scheduler", tmp_path / "kubeconfig"
    )
    realkube.kubectl(kube.kubeconfig, "create", "namespace", NAMESPACE)
    realkube.kubectl(kube.kubeconfig, "create", "serviceaccount", "default", "-n", NAMESPACE)
    with KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0)) as store:
        store.create(_queue("refusal-parent"))
        store.create(_queue("refusal-child", parent="refusal-parent"))
        store.create(
            {
                "apiVersion": "scheduling.run.ai/v2alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "pg", "namespace": NAMESPACE},
                "spec": {"minMember": 1, "queue": "refusal-child"},
            }
        )
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": NAMESPACE, "annotations": {"pod-group-name": "pg"}},
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                },
            }
        )
        components.start("controllers", token, "controllers", "--create-default-queues=false")

        def refused() -> list[str]:
            return [
                line
                for line in components.log("controllers").splitlines()
                if f"patch PodGroup {NAMESPACE}/pg status" in line
            ]

        components.wait("the refused PodGroup status write", lambda: bool(refused()), timeout=30)
        components.wait(
            "the Queue status, which is allowed",
            lambda: (store.get("queues", "refusal-parent").get("status") or {}).get("childQueues") == ["refusal-child"],
            timeout=30,
        )
        time.sleep(2.0)  # more reconciles: the same refusal is not said again
    lines = refused()
    assert len(lines) == 1, lines
    assert lines[0].partition(" ")[2].startswith("WARNING ") and "Forbidden" in lines[0] and "forbidden" in lines[0]
    assert components.alive("controllers")


def _crds(kube: realkube.Cluster) -> None:
    from kai_scheduler.install.chart import crd_files

    stream = "".join(f"---\n{text}" for text in crd_files().values())
    realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "-f", "-", stdin=stream, check=True)
    realkube.kubectl(
        kube.kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "-f", "-", stdin=stream, check=True
    )


def _queue(name: str, parent: str = "") -> dict[str, object]:
    open_ = {"quota": -1, "overQuotaWeight": 1, "limit": -1}
    spec: dict[str, object] = {"resources": {"gpu": dict(open_), "cpu": dict(open_), "memory": dict(open_)}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
