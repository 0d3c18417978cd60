"""`kai manifests` (value operator.enabled, true by default as in KAI's install): the operator, its RBAC and
everything the components need besides their Deployments, Services and scheduler ConfigMap, which the operator
renders with the same builders; the static install (`kai manifests --static`) has no operator. The chart switches
between the two on the same value. `--operator` is kept as the default's explicit name."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from kai_scheduler import cli, install
from kai_scheduler.install import workloads
from kai_scheduler.install.source import Concrete
from kai_scheduler.operator import render
from tests.install.conftest import JSON, by_name, of_kind, static_values

RENDERED_BY_OPERATOR = {"Deployment", "Service", "ConfigMap"}


def printed(*args: str) -> list[JSON]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["manifests", *args]) == 0
    return [d for d in yaml.safe_load_all(out.getvalue()) if d]


def operator_set() -> list[JSON]:
    return printed()


def names(objects: list[JSON], kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in of_kind(objects, kind)}


def test_the_default_install_has_the_operator_in_place_of_the_components(static_set: list[JSON]) -> None:
    objects = operator_set()
    assert names(objects, "Deployment") == {"kai-operator"}
    assert names(objects, "Service") == {"kai-operator-metrics"}
    assert names(objects, "ConfigMap") == {"kai-config-manifest"}  # the Config and default shard, for the operator
    for kind in (
        "CustomResourceDefinition",
        "Namespace",
        "PriorityClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ):
        assert names(objects, kind) == names(static_set, kind)
    static_rbac = names(static_set, "ClusterRole")
    assert names(objects, "ClusterRole") == static_rbac | {"kai-operator"}
    assert names(objects, "ServiceAccount") == names(static_set, "ServiceAccount") | {"kai-operator"}
    assert {"configs.kai.scheduler", "schedulingshards.kai.scheduler"} <= names(objects, "CustomResourceDefinition")


def test_operator_names_the_default_and_static_the_other_install(
    default_set: list[JSON], static_set: list[JSON], tmp_path: Path
) -> None:
    assert printed("--operator") == printed() == default_set
    assert printed("--static") == static_set
    off = tmp_path / "static.yaml"
    off.write_text("operator:\n  enabled: false\n")
    assert printed("-f", str(off)) == static_set
    assert printed("-f", str(off), "--operator") == default_set  # the flag wins over the values file
    assert printed("--set", "operator.enabled=true", "--static") == static_set


def test_static_and_operator_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as err:
        cli.main(["manifests", "--static", "--operator"])
    assert err.value.code == 2
    assert "--operator: not allowed with argument --static" in capsys.readouterr().err


def test_the_static_install_has_no_operator(static_set: list[JSON]) -> None:
    assert "kai-operator" not in names(static_set, "Deployment") | names(static_set, "ClusterRole")
    assert "kai-operator" not in names(static_set, "ServiceAccount")
    assert "kai-scheduler" in names(static_set, "Deployment")


def test_the_operator_is_told_its_namespace_and_image() -> None:
    values = install.resolve(namespace="gpu", image="reg/kai:7")
    deployment = by_name(install.manifests(values), "Deployment", "kai-operator")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[1] == "operator"
    for flag in ("--namespace=gpu", "--image=reg/kai:7", "--create-defaults=true", "--reconcile-period=1s"):
        assert flag in args


def test_the_operator_may_write_what_it_renders_in_any_namespace_and_read_its_crs() -> None:
    """The Config's `spec.namespace` may name any namespace: what the operator renders there is granted
    cluster-wide, as KAI's ClusterRole grants it; only its leader-election Leases stay in its own namespace."""
    objects = operator_set()
    role = by_name(objects, "Role", "kai-operator")
    assert {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]} == {
        ("coordination.k8s.io", "leases")
    }
    cluster = by_name(objects, "ClusterRole", "kai-operator")
    granted = {
        (g, r): set(rule["verbs"]) for rule in cluster["rules"] for g in rule["apiGroups"] for r in rule["resources"]
    }
    writes = {"get", "list", "watch", "create", "update", "patch", "delete"}
    for rendered in (("apps", "deployments"), ("", "services"), ("", "configmaps"), ("", "serviceaccounts")):
        assert granted.get(rendered) == writes, rendered
    assert {r for _, r in granted} >= {"configs", "schedulingshards", "configs/status", "schedulingshards/status"}
    hooks = {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}  # the pod webhooks' selectors
    (hook_rule,) = [rule for rule in cluster["rules"] if hooks & set(rule["resources"])]
    assert (hook_rule["verbs"], hook_rule["resourceNames"]) == (["get", "update"], ["kai-admission"])


def test_the_operator_renders_the_static_installs_components_for_the_default_shard(static_set: list[JSON]) -> None:
    """One renderer: the shared components the operator writes are the static install's, label for label, plus the
    operator's labels, owner and rendering hash."""
    values = install.defaults()
    rendered = render.shared_objects(values, None)
    for component in workloads.SHARED:
        static = by_name(static_set, "Deployment", f"kai-{component}")
        ours = rendered[("deployments", f"kai-{component}")]
        assert ours["spec"] == static["spec"]
        labels = {k: v for k, v in ours["metadata"]["labels"].items() if k != render.LABEL_MANAGED_BY}
        assert labels == static["metadata"]["labels"]
    static_scheduler = workloads.deployment(Concrete(static_values()), "scheduler").body
    assert (
        static_scheduler["spec"]["template"]["spec"]["containers"][0]["args"][-1]
        == "--scheduler-conf=/etc/kai/config.yaml"
    )


def test_every_deployment_the_operator_install_runs_has_args_the_kai_parser_accepts() -> None:
    from kai_scheduler.admission.operator import parse_shard
    from tests.operator.builders import shard

    values = install.defaults()
    deployments = [by_name(operator_set(), "Deployment", "kai-operator")]
    deployments += [o for k, o in render.shared_objects(values, None).items() if k[0] == "deployments"]
    one = parse_shard(shard("a", partitionLabelValue="a", args={"max-consolidation-preemptees": 4}))
    deployments += [o for k, o in render.shard_objects(values, one, None).items() if k[0] == "deployments"]
    for deployment in deployments:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        try:
            parsed = cli.parser().parse_args(args)
        except SystemExit as err:
            raise AssertionError(f"`kai {' '.join(args)}` rejected (exit {err.code})") from None
        assert parsed.command == deployment["metadata"]["labels"]["app.kubernetes.io/component"]
