"""The committed Helm chart is exactly what the install model generates, and renders to `kai manifests`' objects."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kai_scheduler import install
from kai_scheduler.cli import main
from kai_scheduler.install import kai_config
from kai_scheduler.install.chart import crd_files
from tests.install.conftest import JSON

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "kai-scheduler"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_committed_chart_is_up_to_date(tmp_path: Path) -> None:
    assert main(["manifests", "--helm-chart", str(tmp_path / "chart")]) == 0
    generated, committed = _tree(tmp_path / "chart"), _tree(CHART)
    assert sorted(generated) == sorted(committed), "regenerate: kai manifests --helm-chart deploy/helm/kai-scheduler"
    for name, data in generated.items():
        assert committed[name] == data, f"{name} is stale: kai manifests --helm-chart deploy/helm/kai-scheduler"


def test_chart_values_are_the_manifest_defaults() -> None:
    assert yaml.safe_load((CHART / "values.yaml").read_text()) == install.defaults()
    assert {f"crds/{n}" for n in crd_files()} == {f"crds/{p.name}" for p in (CHART / "crds").iterdir()}


def helm_render_text(values: dict[str, Any] | None) -> str | None:
    """`helm template` of the chart as one YAML stream (templates only, as Helm applies `crds/` apart): the helm
    binary if there is one, else the helm-python-sdk; None when neither is here."""
    if shutil.which("helm"):
        command = ["helm", "template", "kai", str(CHART), "--namespace", "kai-scheduler"]
        for key, value in (values or {}).items():
            command += ["--set", f"{key}={value}"]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout
    if importlib.util.find_spec("helm_python") is None:
        return None
    import helm_python

    nested: dict[str, Any] = {}
    for key, value in (values or {}).items():
        *path, last = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    with helm_python.Chart.load(str(CHART)) as chart:
        rendered = chart.render(nested or None, name="kai", namespace="kai-scheduler")
    return "".join(f"---\n{text}\n" for _, text in sorted(rendered.items()) if text.strip())


def _helm_render(values: dict[str, Any] | None) -> list[JSON]:
    text = helm_render_text(values)
    if text is None:
        pytest.fail("cannot render the chart: no helm binary, and the dev dependency helm-python-sdk is missing")
    return [d for d in yaml.safe_load_all(text) if d]


def _key(obj: JSON) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _without_helm_annotations(obj: JSON) -> JSON:
    meta = dict(obj["metadata"])
    annotations = {k: v for k, v in meta.pop("annotations", {}).items() if not k.startswith("helm.sh/")}
    if annotations:
        meta["annotations"] = annotations
    return {**obj, "metadata": meta}


def _comparable(obj: JSON) -> JSON:
    """The object, with the YAML documents of kai-config-manifest parsed: the chart writes their strings quoted and
    their free-form maps as JSON, `kai manifests` in block style; what the operator reads is the parsed object."""
    if obj["kind"] != "ConfigMap" or obj["metadata"]["name"] != kai_config.CONFIG_MAP:
        return obj
    return {**obj, "data": {k: yaml.safe_load(v) for k, v in obj["data"].items()}}


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "scheduler.replicas": 2,
            "namespace.name": "gpu-sched",
            "serviceMonitor.enabled": True,
            "admission.matchConditions": False,
            "defaultQueues.create": False,
            "image.tag": "1.10",
            "scheduler.partitionLabelValue": "pool-a",
            "nodeScaleAdjuster.enabled": True,
            "operator.enabled": False,
        },
        {"operator.replicas": 2, "namespace.name": "gpu-sched", "nodeScaleAdjuster.enabled": True},
        {"operator.enabled": False},
        {  # KAI's names of values this install has
            "operator.enabled": False,
            "global.gpuSharing": True,
            "global.leaderElection": True,
            "global.clusterAutoscaling": True,
            "global.jsonLog": True,
            "global.imagePullPolicy": "Always",
            "global.resourceReservation.namespace": "rr",
            "queuecontroller.resources.requests.cpu": "1",
            "admission.ports.webhookPort": 9444,
            "admission.gpuFractionRuntimeClassName": "kata",
            "nodescaleadjuster.scalingPodNamespace": "scale",
            "defaultPriorityClasses.enabled": False,
        },
        {"operator.replicaCount": 2, "global.jsonLog": False, "global.clusterAutoscaling": True},
        {  # KAI's values that reach the operator through the Config and the default shard it applies
            "global.gpuSharing": True,
            "global.jsonLog": True,
            "global.blockNvidiaVisibleDevices": True,
            "global.resourceReservation.namespace": "rr",
            "podgrouper.queueLabelKey": "team",
            "queuecontroller.resources.limits.cpu": "2",
            "admission.gpuFractionRuntimeClassName": "",
            "admission.ports.webhookPort": 9444,
            "binder.resourceReservation.runtimeClassName": "kata",
            "scheduler.placementStrategy": "spread",
            "scheduler.args.leader-elect": True,
            "scheduler.args.v": 4,
            "scheduler.plugins.nodeplacement.arguments.gpu": "spread",
            "scheduler.actions.stalegangeviction.enabled": False,
            "scheduler.scenarioSearchBudgets.maxJobSearchDuration": "1m",
            "prometheus.enabled": True,
            "prometheus.externalPrometheusUrl": "http://prometheus.monitoring:9090",
            "scheduler.replicas": 2,
            "namespace.name": "gpu-sched",
        },
        {"defaultShard.enabled": False, "scheduler.partitionLabelValue": "pool-a"},
        {  # KAI's selective monitoring, static: the grouper's flags and the pod webhooks' selectors
            "operator.enabled": False,
            "global.podLabelSelector.app": "batch",
            "global.podLabelSelector.gpu": True,
            "global.namespaceLabelSelector.team": "ml",
        },
        {"global.podLabelSelector.app": "batch", "global.namespaceLabelSelector.team": "ml"},
        {  # the reservation pods' additions, KAI's values and this install's; JSON flags of the binder
            "operator.enabled": False,
            "global.resourceReservation.serviceAccount": "rr-sa",
            "binder.resourceReservationPodResources.requests.cpu": "10m",
            "binder.resourceReservationPodResources.limits.memory": "64Mi",
            "binder.resourceReservationPodSecurityContext.runAsNonRoot": True,
            "binder.resourceReservationContainerSecurityContext.allowPrivilegeEscalation": False,
        },
        {  # the same through the Config the operator renders the binder from
            "binder.resourceReservationPodResources.requests.cpu": "10m",
            "binder.resourceReservationContainerSecurityContext.readOnlyRootFilesystem": True,
        },
    ],
    ids=[
        "defaults",
        "static-overrides",
        "operator-overrides",
        "static",
        "kai-static",
        "kai-operator",
        "kai-config",
        "no-default-shard",
        "selectors-static",
        "selectors-operator",
        "reservation-pods-static",
        "reservation-pods-operator",
    ],
)
def test_helm_template_yields_the_same_objects_as_kai_manifests(overrides: dict[str, Any]) -> None:
    rendered = {_key(o): _comparable(_without_helm_annotations(o)) for o in _helm_render(overrides)}
    sets = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()]
    expected = {_key(o): _comparable(o) for o in install.manifests(install.resolve(sets=sets), skip_crds=True)}
    assert sorted(rendered) == sorted(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, key


def test_the_plugin_server_port_is_a_flag_and_a_container_port_also_when_off() -> None:
    for value, port in ((8081, 8081), (9000, 9000), (0, 8081)):
        deployments = [
            d
            for d in _helm_render({"scheduler.pluginServerPort": value, "operator.enabled": False})
            if d["kind"] == "Deployment"
        ]
        (scheduler,) = [d for d in deployments if d["metadata"]["name"] == "kai-scheduler"]
        container = scheduler["spec"]["template"]["spec"]["containers"][0]
        assert f"--plugin-server-port={value}" in container["args"]
        declared = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert declared == {"metrics": 8080, "plugin-server": port}


# KAI's global values of where the components' pods run; lists can only come from a values file.
PLACEMENT: dict[str, Any] = {
    "nodeSelector": {"node-role.kubernetes.io/system": "true"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]
            }
        }
    },
    "imagePullSecrets": [{"name": "regcred"}],
    "priorityClassName": "system-cluster-critical",
}


@pytest.mark.parametrize("operator", [False, True], ids=["static", "operator"])
def test_kais_placement_values_reach_every_deployment_as_helm_renders_them(operator: bool, tmp_path: Path) -> None:
    """KAI's `global.nodeSelector`, `.tolerations`, `.affinity`, `.imagePullSecrets` and `.priorityClassName`: every
    component's pod (the operator's too), and the Config the operator renders the components from."""
    values = {"operator": {"enabled": operator}, "global": PLACEMENT}
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    expected = {_key(o): _comparable(o) for o in install.manifests(install.resolve(files=[str(path)]), skip_crds=True)}
    flat = {"operator.enabled": operator, **{f"global.{k}": v for k, v in PLACEMENT.items()}}
    rendered = {_key(o): _comparable(_without_helm_annotations(o)) for o in _helm_render(flat)}
    assert rendered == expected
    deployments = [o for o in expected.values() if o["kind"] == "Deployment"]
    assert len(deployments) == (1 if operator else 5)
    for d in deployments:
        spec = d["spec"]["template"]["spec"]
        assert {k: spec.get(k) for k in PLACEMENT} == PLACEMENT, d["metadata"]["name"]
    if operator:
        config = expected[("ConfigMap", "kai-scheduler", kai_config.CONFIG_MAP)]["data"][kai_config.CONFIG_KEY]
        assert config["spec"]["global"]["additionalImagePullSecrets"] == ["regcred"]
        assert config["spec"]["global"]["tolerations"] == PLACEMENT["tolerations"]


def test_without_placement_values_the_pods_say_nothing_of_it() -> None:
    for d in (o for o in install.manifests(install.defaults(), skip_crds=True) if o["kind"] == "Deployment"):
        assert not set(PLACEMENT) & set(d["spec"]["template"]["spec"]), d["metadata"]["name"]
