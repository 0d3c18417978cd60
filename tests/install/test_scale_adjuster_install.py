"""The node-scale-adjuster in the install set: absent by default; with `nodeScaleAdjuster.enabled` its
Deployment (args the component's parser takes), namespace and least-privilege RBAC; values are checked."""

from __future__ import annotations

import pytest

from kai_scheduler import cli, install
from kai_scheduler.install.values import ValuesError, apply_set
from kai_scheduler.install.workloads import SHARED
from tests.install.conftest import JSON, by_name, of_kind

NAME = "kai-node-scale-adjuster"


def enabled_set(*sets: str) -> list[JSON]:
    values = install.defaults()
    apply_set(values, "nodeScaleAdjuster.enabled=true")
    for s in sets:
        apply_set(values, s)
    return install.manifests(values, skip_crds=True)


def test_absent_by_default(each_set: tuple[str, list[JSON]]) -> None:
    objects = each_set[1]
    assert not [o for o in objects if NAME in o["metadata"]["name"] or o["metadata"]["name"] == "kai-scale-adjust"]


def test_enabled_it_has_a_deployment_whose_args_the_component_takes() -> None:
    objects = enabled_set("nodeScaleAdjuster.coolDownSeconds=5", "nodeScaleAdjuster.gpuMemoryToFractionRatio=0.25")
    deployment = by_name(objects, "Deployment", NAME)
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--cool-down-seconds=5" in args and "--gpu-memory-to-fraction-ratio=0.25" in args
    assert "--scale-adjust-namespace=kai-scale-adjust" in args
    parsed = cli.parser().parse_args(args)
    assert parsed.command == "node-scale-adjuster"
    assert by_name(objects, "Namespace", "kai-scale-adjust")
    assert by_name(objects, "Service", f"{NAME}-metrics")


def test_enabled_its_rbac_reads_pods_everywhere_and_writes_them_only_in_its_namespace() -> None:
    objects = enabled_set()
    cluster_role = by_name(objects, "ClusterRole", NAME)
    assert cluster_role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    roles = [r for r in of_kind(objects, "Role") if r["metadata"]["name"].startswith(NAME)]
    by_namespace = {r["metadata"]["namespace"]: r["rules"] for r in roles}
    assert by_namespace["kai-scale-adjust"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "patch"]}
    ]
    assert by_namespace["kai-scheduler"][0]["resources"] == ["leases"]
    binding = next(b for b in of_kind(objects, "RoleBinding") if b["metadata"]["namespace"] == "kai-scale-adjust")
    assert binding["subjects"][0]["name"] == NAME


def test_a_bad_ratio_is_refused_naming_the_value() -> None:
    with pytest.raises(ValuesError, match=r"nodeScaleAdjuster\.gpuMemoryToFractionRatio"):
        enabled_set("nodeScaleAdjuster.gpuMemoryToFractionRatio=2")


def test_the_operator_install_keeps_it_a_static_object_and_the_operator_never_renders_it() -> None:
    objects = enabled_set()  # the default: the operator install
    assert by_name(objects, "Deployment", NAME) and by_name(objects, "Deployment", "kai-operator")
    assert not [o for o in of_kind(objects, "Deployment") if o["metadata"]["name"] == "kai-binder"]
    assert "node-scale-adjuster" not in SHARED
    static = enabled_set("operator.enabled=false")
    assert by_name(static, "Deployment", NAME) and by_name(static, "Deployment", "kai-binder")
    assert not [o for o in static if o["metadata"]["name"] == "kai-operator"]
