"""`kai explain` on a real kube-apiserver: a cluster without KAI's CRDs and a user without rights are one line
each (exit 2); with the CRDs, an account that may only read explains a job (nothing is written: it could not).

A cluster of its own (KAI's CRDs must be missing at first, and the shared one gets them from other tests)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kai_scheduler import cli
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import realkube
from tests.e2e import serviceaccounts
from tests.kube.test_refusals import _crds, _queue

READ = ["get", "list", "watch"]
READ_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"], "verbs": READ},
    {"apiGroups": ["scheduling.run.ai"], "resources": ["podgroups", "queues", "bindrequests"], "verbs": READ},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": READ},
    {"apiGroups": ["kai.scheduler"], "resources": ["topologies"], "verbs": READ},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates"],
        "verbs": READ,
    },
]


@pytest.fixture(scope="module")
def bare() -> Iterator[realkube.Cluster]:
    with realkube.cluster() as cluster:
        yield cluster


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_user_without_rights_is_one_line(
    bare: realkube.Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    serviceaccounts.bind_account(bare.kubeconfig, "kai-test-nothing", "kai-scheduler", [])
    token = serviceaccounts.token_kubeconfig(bare.kubeconfig, "kai-test-nothing", "kai-scheduler", tmp_path / "k")
    code, out, err = _explain(capsys, "job", "--kubeconfig", token)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "forbidden" in err and "needs to list nodes, pods, podgroups" in err


def test_without_the_crds_then_with_them_as_a_reader(
    bare: realkube.Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _explain(capsys, "job", "--kubeconfig", bare.kubeconfig)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "are KAI's CRDs installed?" in err

    _crds(bare)
    realkube.kubectl(bare.kubeconfig, "create", "namespace", "explain", check=True)
    realkube.kubectl(bare.kubeconfig, "create", "serviceaccount", "default", "-n", "explain", check=True)
    with KubeStore.connect(bare.kubeconfig, None, KubeOptions(qps=0)) as store:
        store.create(_queue("explain-q"))
        store.create(
            {
                "apiVersion": "scheduling.run.ai/v2alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "pg", "namespace": "explain"},
                "spec": {"minMember": 1, "queue": "explain-q"},
            }
        )
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "explain", "annotations": {"pod-group-name": "pg"}},
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                },
            }
        )
    serviceaccounts.bind_account(bare.kubeconfig, "kai-test-reader", "kai-scheduler", READ_RULES)
    reader = serviceaccounts.token_kubeconfig(bare.kubeconfig, "kai-test-reader", "kai-scheduler", tmp_path / "k")
    code, out, err = _explain(capsys, "p", "-n", "explain", "--kubeconfig", reader, "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["job"] == "explain/pg" and data["state"] == "pending"
    [pool] = data["nodePools"]
    assert pool["nodes"] == 0 and not pool["placeable"]
    code, _, err = _explain(capsys, "missing", "-n", "explain", "--kubeconfig", reader)
    assert code == 2 and "no PodGroup, pod or workload named 'missing'" in err
