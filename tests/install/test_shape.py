"""The install sets are well-formed Kubernetes and match KAI's shipped defaults (BEHAVIOR.md §1.1, §2, §9.3).

Rules of every install run over both sets (`each_set`): the default, where `kai operator` renders the components
(tests/install/test_operator_install.py checks what it renders), and the static one (`kai manifests --static`),
whose component Deployments, Services and scheduler ConfigMap are checked here."""

from __future__ import annotations

import pytest

from kai_scheduler import cli
from kai_scheduler.api import PARSERS
from kai_scheduler.api.crd_manifests import load_crds
from kai_scheduler.install import values as install_values
from kai_scheduler.operator import render
from kai_scheduler.scheduler.scheduler import load_config
from tests.docs.flags import subcommands
from tests.install.conftest import JSON, by_name, of_kind

CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "Queue",
    "PriorityClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
}
ORDER = [
    "CustomResourceDefinition",
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Service",
    "Deployment",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "PriorityClass",
]
COMPONENT_DEPLOYMENTS = {"kai-scheduler", "kai-binder", "kai-podgrouper", "kai-controllers", "kai-admission"}
DEPLOYMENTS = {"default": {"kai-operator"}, "static": COMPONENT_DEPLOYMENTS}
# 5 cluster-wide, 5 in the install namespace, 1 for reservation pods; the operator install adds the operator's two
BINDINGS = {"default": 14, "static": 12}


def test_every_object_has_api_version_kind_name_and_the_right_scope(each_set: tuple[str, list[JSON]]) -> None:
    for obj in each_set[1]:
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"], obj
        namespaced = "namespace" in obj["metadata"]
        assert namespaced == (obj["kind"] not in CLUSTER_SCOPED), obj["metadata"]


def test_objects_come_in_apply_order(each_set: tuple[str, list[JSON]]) -> None:
    _, objects = each_set
    kinds = [o["kind"] for o in objects]
    assert sorted(kinds, key=ORDER.index) == kinds
    # ServiceMonitor is off by default; each install has a ConfigMap (the operator's kai-config-manifest, the static
    # scheduler's configuration)
    assert set(kinds) == set(ORDER)
    assert [o for o in objects if o["kind"] == "CustomResourceDefinition"] == load_crds()


def test_names_are_unique_per_kind_and_namespace(each_set: tuple[str, list[JSON]]) -> None:
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in each_set[1]]
    assert len(keys) == len(set(keys))


def test_every_deployment_runs_as_an_existing_service_account(each_set: tuple[str, list[JSON]]) -> None:
    mode, objects = each_set
    accounts = {(sa["metadata"]["namespace"], sa["metadata"]["name"]) for sa in of_kind(objects, "ServiceAccount")}
    deployments = of_kind(objects, "Deployment")
    assert {d["metadata"]["name"] for d in deployments} == DEPLOYMENTS[mode]
    if mode == "default":  # and what the operator renders runs as the install's accounts too
        rendered = render.shared_objects(install_values.defaults(), None)
        deployments = deployments + [o for key, o in rendered.items() if key[0] == "deployments"]
        assert {d["metadata"]["name"] for d in deployments} >= COMPONENT_DEPLOYMENTS - {"kai-scheduler"}
    for d in deployments:
        sa = d["spec"]["template"]["spec"]["serviceAccountName"]
        assert (d["metadata"]["namespace"], sa) in accounts


def test_every_binding_names_an_existing_role_and_service_account(each_set: tuple[str, list[JSON]]) -> None:
    mode, objects = each_set
    accounts = {(sa["metadata"]["namespace"], sa["metadata"]["name"]) for sa in of_kind(objects, "ServiceAccount")}
    cluster_roles = {r["metadata"]["name"] for r in of_kind(objects, "ClusterRole")}
    roles = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in of_kind(objects, "Role")}
    namespaces = {n["metadata"]["name"] for n in of_kind(objects, "Namespace")}
    bindings = of_kind(objects, "ClusterRoleBinding") + of_kind(objects, "RoleBinding")
    assert len(bindings) == BINDINGS[mode]
    for b in bindings:
        ref = b["roleRef"]
        if ref["kind"] == "ClusterRole":
            assert ref["name"] in cluster_roles
        else:
            assert b["kind"] == "RoleBinding"
            assert (b["metadata"]["namespace"], ref["name"]) in roles
            assert b["metadata"]["namespace"] in namespaces
        for subject in b["subjects"]:
            assert (subject["namespace"], subject["name"]) in accounts


def _rules(objects: list[JSON], kind: str, name: str) -> list[JSON]:
    rules: list[JSON] = by_name(objects, kind, name)["rules"]
    return rules


def _allows(rules: list[JSON], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


def test_rbac_is_least_privilege(each_set: tuple[str, list[JSON]]) -> None:
    objects = each_set[1]
    for role in of_kind(objects, "ClusterRole") + of_kind(objects, "Role"):
        for r in role["rules"]:
            assert "*" not in r["verbs"] + r["resources"] + r["apiGroups"], role["metadata"]["name"]
    scheduler = _rules(objects, "ClusterRole", "kai-scheduler")
    assert _allows(scheduler, "scheduling.run.ai", "bindrequests", "create")
    assert _allows(scheduler, "", "pods/eviction", "create")
    assert not _allows(scheduler, "", "pods/binding", "create")  # binding is the binder's job
    assert not _allows(scheduler, "", "pods", "delete")
    binder = _rules(objects, "ClusterRole", "kai-binder")
    assert _allows(binder, "", "pods/binding", "create")
    assert not _allows(binder, "", "pods", "create")  # reservation pods: own namespace only
    reservation = _rules(objects, "Role", "kai-binder-reservation")
    assert _allows(reservation, "", "pods", "create")
    assert by_name(objects, "Role", "kai-binder-reservation")["metadata"]["namespace"] == "kai-resource-reservation"
    podgrouper = _rules(objects, "ClusterRole", "kai-podgrouper")
    assert _allows(podgrouper, "kubeflow.org", "pytorchjobs", "get")
    assert _allows(podgrouper, "batch", "jobs", "get")
    assert _allows(podgrouper, "batch", "jobs", "watch")  # owners are watched, as KAI's informers do
    assert _allows(podgrouper, "scheduling.run.ai", "podgroups", "create")
    for verb in ("get", "list", "watch"):  # the Grove grouper reads PodGangs and walks PodClique → PodCliqueSet
        assert _allows(podgrouper, "scheduler.grove.io", "podgangs", verb)
        assert _allows(podgrouper, "grove.io", "podcliques", verb)
    assert not _allows(podgrouper, "scheduler.grove.io", "podgangs", "update")
    # the reservation pods' own account patches its pod with its GPU index, in the reservation namespace only
    account = by_name(objects, "ServiceAccount", "kai-resource-reservation")
    assert account["metadata"]["namespace"] == "kai-resource-reservation"
    [binding] = [b for b in of_kind(objects, "RoleBinding") if b["subjects"][0]["name"] == "kai-resource-reservation"]
    assert binding["metadata"]["namespace"] == "kai-resource-reservation"
    own_pod = by_name(objects, "Role", binding["roleRef"]["name"])["rules"]
    assert _allows(own_pod, "", "pods", "patch") and not _allows(own_pod, "", "pods", "create")
    assert _allows(podgrouper, "", "configmaps", "get")  # the default priorities ConfigMap, read by name
    assert not _allows(podgrouper, "", "configmaps", "list")
    controllers = _rules(objects, "ClusterRole", "kai-controllers")
    assert _allows(controllers, "scheduling.run.ai", "queues/status", "patch")
    assert _allows(controllers, "scheduling.run.ai", "queues", "create")  # the default queues
    assert not _allows(controllers, "scheduling.run.ai", "queues", "update")
    for name in ("kai-scheduler", "kai-binder", "kai-podgrouper", "kai-controllers"):
        assert _allows(_rules(objects, "Role", name), "coordination.k8s.io", "leases", "update")
    assert not _allows(_rules(objects, "Role", "kai-admission"), "coordination.k8s.io", "leases", "get")
    for name in ("kai-scheduler", "kai-binder", "kai-podgrouper", "kai-controllers", "kai-admission"):
        # the scheduler (scheduler/commit.py), the binder (Bound, BindingError) and the pod grouper
        # (PodGrouperWarning) write events, each created once
        writes = name in ("kai-scheduler", "kai-binder", "kai-podgrouper")
        assert _allows(_rules(objects, "ClusterRole", name), "", "events", "create") == writes
        assert not _allows(_rules(objects, "ClusterRole", name), "", "events", "patch")
        assert not _allows(_rules(objects, "ClusterRole", name), "", "secrets", "get")


def test_admission_rbac_covers_its_certificate_and_webhooks(each_set: tuple[str, list[JSON]]) -> None:
    objects = each_set[1]
    role = _rules(objects, "Role", "kai-admission")
    for verb in ("get", "create", "update"):
        assert _allows(role, "", "secrets", verb)
    cluster = _rules(objects, "ClusterRole", "kai-admission")
    for resource in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        writes = [r for r in cluster if resource in r["resources"] and "update" in r["verbs"]]
        assert writes and all(r.get("resourceNames") == ["kai-admission"] for r in writes)
        for verb in ("get", "update"):
            assert _allows(cluster, "admissionregistration.k8s.io", resource, verb)
        assert not _allows(cluster, "admissionregistration.k8s.io", resource, "list")
    assert _allows(cluster, "scheduling.run.ai", "queues", "list")
    assert _allows(cluster, "kai.scheduler", "topologies", "get")
    assert not _allows(cluster, "scheduling.run.ai", "podgroups", "get")


def test_the_stream_has_no_object_of_a_kind_its_own_crds_define(each_set: tuple[str, list[JSON]]) -> None:
    """`kubectl apply` of one stream cannot create a Queue (nor a Config or SchedulingShard) in the pass that creates
    its CRD: the default queues are the controllers component's (controllers/default_queues.py), switched by
    defaultQueues.create; the default Config and SchedulingShard are the operator's (--create-defaults)."""
    mode, objects = each_set
    defined = {crd["spec"]["names"]["kind"] for crd in of_kind(objects, "CustomResourceDefinition")}
    assert defined == {"Queue", "PodGroup", "BindRequest", "Topology", "SchedulingShard", "Config"}
    assert not [o for o in objects if o["kind"] in defined]
    if mode == "default":
        operator = by_name(objects, "Deployment", "kai-operator")["spec"]["template"]["spec"]["containers"][0]
        assert "--create-defaults=true" in operator["args"]
        controllers = render.shared_objects(install_values.defaults(), None)[("deployments", "kai-controllers")]
    else:
        controllers = by_name(objects, "Deployment", "kai-controllers")
    assert "--create-default-queues=true" in controllers["spec"]["template"]["spec"]["containers"][0]["args"]


def test_priority_classes_are_kais(each_set: tuple[str, list[JSON]]) -> None:
    classes = {pc["metadata"]["name"]: pc["value"] for pc in of_kind(each_set[1], "PriorityClass")}
    assert classes == {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
    for pc in of_kind(each_set[1], "PriorityClass"):
        PARSERS["PriorityClass"](pc)
        assert pc["globalDefault"] is False


def _container(objects: list[JSON], component: str) -> JSON:
    deployment = by_name(objects, "Deployment", f"kai-{component}")
    containers: list[JSON] = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def test_deployments_probe_the_listen_port_and_run_kai(static_set: list[JSON]) -> None:
    for component in ("scheduler", "binder", "podgrouper", "controllers", "admission"):
        c = _container(static_set, component)
        assert c["image"].startswith("kai-scheduler:")
        assert c["args"][:2] == ["--log-format=text", component]
        assert "--listen-address=:8080" in c["args"] and "--leader-elect=false" in c["args"]
        assert not any(a.startswith("--kubeconfig") for a in c["args"])
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8080}
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8080}


def test_scheduler_container_has_kais_defaults(static_set: list[JSON]) -> None:
    c = _container(static_set, "scheduler")
    assert c["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"cpu": "700m", "memory": "512Mi"},
    }
    for flag in (
        "--scheduler-name=kai-scheduler",
        "--schedule-period=1s",
        "--max-consolidation-preemptees=16",
        "--default-staleness-grace-period=60s",
        "--stuck-in-releasing-threshold=2m",
        "--metrics-namespace=kai",
        "--use-scheduling-signatures=true",
        "--qps=50",
        "--burst=300",
        "--scheduler-conf=/etc/kai/config.yaml",
        "--leader-elect-lease-duration=15s",
    ):
        assert flag in c["args"]
    mount = next(m for m in c["volumeMounts"] if m["name"] == "config")
    assert mount["mountPath"] == "/etc/kai"


def test_the_scheduler_configmap_loads_as_a_scheduler_config(static_set: list[JSON]) -> None:
    import yaml

    config_map = by_name(static_set, "ConfigMap", "kai-scheduler-config")
    config = load_config(yaml.safe_load(config_map["data"]["config.yaml"]))
    assert config.actions == ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
    assert config.plugin("proportion") is not None


def test_services_expose_metrics_and_the_webhook(static_set: list[JSON]) -> None:
    services = {s["metadata"]["name"]: s for s in of_kind(static_set, "Service")}
    for component in ("scheduler", "binder", "podgrouper", "controllers", "admission"):
        port = services[f"kai-{component}-metrics"]["spec"]["ports"][0]
        assert (port["port"], port["targetPort"]) == (8080, "metrics")
    webhook = services["kai-admission"]["spec"]["ports"][0]
    assert (webhook["port"], webhook["targetPort"]) == (443, "webhook")
    admission_ports = {p["name"]: p["containerPort"] for p in _container(static_set, "admission")["ports"]}
    assert admission_ports == {"metrics": 8080, "webhook": 9443}


def test_webhooks_leave_the_ca_bundle_to_the_admission_component(each_set: tuple[str, list[JSON]]) -> None:
    objects = each_set[1]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        config = by_name(objects, kind, "kai-admission")
        for hook in config["webhooks"]:
            assert hook["sideEffects"] == "None"
            assert not hook["clientConfig"].get("caBundle")
            assert hook["clientConfig"]["service"] == {
                **hook["clientConfig"]["service"],
                "name": "kai-admission",
                "namespace": "kai-scheduler",
                "port": 443,
            }
            is_pod = hook["rules"][0]["resources"] == ["pods"]
            assert hook["failurePolicy"] == ("Ignore" if is_pod else "Fail")
            if is_pod:
                assert hook["matchConditions"][0]["expression"] == "object.spec.schedulerName == 'kai-scheduler'"
    validating = by_name(objects, "ValidatingWebhookConfiguration", "kai-admission")
    resources = [h["rules"][0]["resources"][0] for h in validating["webhooks"]]
    assert resources == ["pods", "queues", "podgroups", "topologies", "schedulingshards", "configs"]


@pytest.mark.parametrize("component", ["scheduler", "binder", "podgrouper", "controllers", "admission"])
def test_deployment_args_are_accepted_by_the_component_parser(static_set: list[JSON], component: str) -> None:
    if component not in subcommands(cli.parser()):
        pytest.skip(f"`kai {component}` is not registered yet")
    args = _container(static_set, component)["args"]
    try:
        parsed = cli.parser().parse_args(args)
    except SystemExit as err:
        pytest.fail(f"`kai {' '.join(args)}` rejected (exit {err.code})")
    assert parsed.command == component
