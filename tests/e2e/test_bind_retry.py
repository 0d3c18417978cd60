"""A binding the API server refuses for a while: the binder fails it, the scheduler gives the node to others and
places the pod again, and once the server takes the binding the pod is bound once, nowhere over capacity.

The refusal is a ValidatingAdmissionPolicy on `pods/binding` (admission inside the API server, no webhook) that
denies binding the pod `bindfail-0` (and the test's probes) while it exists. The late-watch race itself (the
Failed status reaching the binder after its retry is due) cannot be produced on a real server, whose watch the
test cannot hold back; it is shown with a held watch in `tests/binder/test_late_watch.py`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from kai_scheduler.store.interface import Invalid, StoreError
from tests.e2e.checks import bound_once, never_over_committed
from tests.e2e.harness import NAMESPACE, Cluster, pod, real_server

POLICY = "kai-e2e-bind-fault"
FAILING = "bindfail-0"
PROBE = "bindfail-probe"  # pods of no scheduler, bound by the test to see the policy in force
FILLERS = 31  # with the failing pod, one GPU each: all 32 GPUs of the 4 fake nodes, wherever the failed one was


def _policy(name: str) -> dict[str, Any]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/binding"]}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [rule]},
            "validations": [
                {
                    "expression": f"object.metadata.name != '{FAILING}' && !object.metadata.name.startsWith('{PROBE}')",
                    "message": "binding refused by the e2e fault",
                }
            ],
        },
    }


def _policy_binding(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }


@contextlib.contextmanager
def refused_binding(cluster: Cluster) -> Iterator[Any]:
    """The policy in force while the block runs (a probe's binding refused); yields a function that takes it away
    early. Removed in a `finally`."""
    from kubernetes import client, config

    admin = config.new_client_from_config(config_file=cluster.processes.kubeconfig)
    api = client.AdmissionregistrationV1Api(admin)

    def remove() -> None:
        for delete in (api.delete_validating_admission_policy_binding, api.delete_validating_admission_policy):
            with contextlib.suppress(client.ApiException):
                delete(POLICY)

    remove()  # what an interrupted earlier run may have left
    api.create_validating_admission_policy(_policy(POLICY))
    api.create_validating_admission_policy_binding(_policy_binding(POLICY))
    try:
        probes = iter(range(1000))
        cluster.wait("the admission policy in force", lambda: _probe_refused(cluster, f"{PROBE}-{next(probes)}"))
        yield remove
    finally:
        remove()


def _probe_refused(cluster: Cluster, name: str) -> bool:
    probe = pod(name, gpus=0)
    probe["spec"]["schedulerName"] = "no-scheduler"
    cluster.create(probe)
    try:
        cluster.store.bind(NAMESPACE, name, "no-node")
    except Invalid:
        return True
    return False


def _requests(cluster: Cluster) -> list[dict[str, Any]]:
    items, _ = cluster.store.list("bindrequests", NAMESPACE)
    return items


def _failed_requests(cluster: Cluster, seen: set[str]) -> set[str]:
    """`seen` with the uid of each BindRequest of the failing pod now Failed (each one the scheduler wrote and the
    binder was refused on; the scheduler deletes it and places the pod again)."""
    seen |= {
        r["metadata"]["uid"]
        for r in _requests(cluster)
        if r["spec"]["podName"] == FAILING and r.get("status", {}).get("phase") == "Failed"
    }
    return seen


@pytest.mark.skipif(not real_server(), reason="admission policies are served by a real kube-apiserver only")
def test_a_refused_binding_is_retried_and_the_pod_bound_once_on_a_node_within_capacity(clean: Cluster) -> None:
    failed: set[str] = set()
    with refused_binding(clean) as allow:
        clean.create(pod(FAILING, gpus=1, labels={"app": "bindfail"}))
        clean.wait(f"a refused binding of {FAILING}", lambda: bool(_failed_requests(clean, failed)))
        for i in range(FILLERS):
            clean.create(pod(f"bindfail-fill-{i}", gpus=1, labels={"app": "bindfail"}))
        clean.wait(
            f"the {FILLERS} other pods bound, and {FAILING} placed again and refused again",
            lambda: len(_failed_requests(clean, failed)) >= 2 and len(clean.bound("app=bindfail")) == FILLERS,
        )
        never_over_committed(clean)
        assert not _bound(clean)
        allow()
    clean.wait(f"{FAILING} bound once the server takes it", lambda: len(clean.bound("app=bindfail")) == FILLERS + 1)
    never_over_committed(clean)
    bound_once(clean, "bindfail-", FILLERS + 1)
    phases = {r.get("status", {}).get("phase", "") for r in _requests(clean)}
    assert phases == {"Succeeded"}, f"every BindRequest left ends Succeeded (the failed ones deleted): {phases}"
    assert not failed & {r["metadata"]["uid"] for r in _requests(clean)}, "a refused BindRequest was bound later"
    refusals = clean.processes.refusals()
    assert all(POLICY in line for line in refusals), "\n".join(r for r in refusals if POLICY not in r)


def _bound(cluster: Cluster) -> bool:
    try:
        return bool(cluster.store.get("pods", FAILING, NAMESPACE)["spec"].get("nodeName"))
    except StoreError:
        return False
