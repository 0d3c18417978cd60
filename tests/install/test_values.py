"""Values overrides (`--set`, `-f`, `--namespace`, `--image`) and the errors a bad one gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler import install
from kai_scheduler.cli import main
from kai_scheduler.install.values import ValuesError, resolve
from tests.install.conftest import JSON, by_name, of_kind


def _args(objects: list[JSON], component: str) -> list[str]:
    args: list[str] = by_name(objects, "Deployment", f"kai-{component}")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    return args


def test_set_overrides_keep_the_default_type() -> None:
    values = resolve(
        sets=[
            "scheduler.replicas=3",
            "scheduler.detailedFitErrors=true",
            "image.tag=1.10",
            "binder.reconcilePeriod=1s",
            "operator.enabled=false",  # the static install: its component Deployments carry the values
        ]
    )
    assert values["scheduler"]["replicas"] == 3
    assert values["scheduler"]["detailedFitErrors"] is True
    assert values["image"]["tag"] == "1.10"  # a string value stays a string, not 1.1
    objects = install.manifests(values)
    scheduler = by_name(objects, "Deployment", "kai-scheduler")
    assert scheduler["spec"]["replicas"] == 3
    assert "--leader-elect=true" in _args(objects, "scheduler")
    assert "--leader-elect=false" in _args(objects, "binder")
    assert "--detailed-fit-errors=true" in _args(objects, "scheduler")
    assert "--reconcile-period=1s" in _args(objects, "binder")


@pytest.mark.parametrize("operator", ["true", "false"])
def test_namespace_and_image_shortcuts_reach_every_object(operator: str) -> None:
    objects = install.manifests(
        resolve(sets=[f"operator.enabled={operator}"], namespace="gpu-sched", image="registry.local:5000/kai:v2")
    )
    assert {n["metadata"]["name"] for n in of_kind(objects, "Namespace")} == {"gpu-sched", "kai-resource-reservation"}
    for obj in objects:
        if obj["kind"] in ("Deployment", "ServiceAccount", "Service", "ConfigMap"):
            # the reservation pods' ServiceAccount is in theirs
            reservation = (obj["kind"], obj["metadata"]["name"]) == ("ServiceAccount", "kai-resource-reservation")
            assert obj["metadata"]["namespace"] == ("kai-resource-reservation" if reservation else "gpu-sched")
    for binding in of_kind(objects, "ClusterRoleBinding"):
        assert binding["subjects"][0]["namespace"] == "gpu-sched"
    hook = by_name(objects, "ValidatingWebhookConfiguration", "kai-admission")["webhooks"][0]
    assert hook["clientConfig"]["service"]["namespace"] == "gpu-sched"
    if operator == "true":  # the operator renders the components in its namespace, with its image
        assert {"--namespace=gpu-sched", "--image=registry.local:5000/kai:v2"} <= set(_args(objects, "operator"))
        deployment = by_name(objects, "Deployment", "kai-operator")
    else:
        assert "--namespace=gpu-sched" in _args(objects, "admission")
        assert "--leader-elect-namespace=gpu-sched" in _args(objects, "scheduler")
        deployment = by_name(objects, "Deployment", "kai-binder")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local:5000/kai:v2"


def test_switches_add_and_remove_objects_and_match_conditions() -> None:
    objects = install.manifests(
        resolve(
            sets=[
                "serviceMonitor.enabled=true",
                "defaultQueues.create=false",
                "priorityClasses.create=false",
                "namespace.create=false",
                "admission.matchConditions=false",
                "admission.podFailurePolicy=Fail",
            ]
        )
    )
    kinds = [o["kind"] for o in objects]
    assert "ServiceMonitor" in kinds and "Queue" not in kinds and "PriorityClass" not in kinds
    assert [n["metadata"]["name"] for n in of_kind(objects, "Namespace")] == ["kai-resource-reservation"]
    for hook in by_name(objects, "MutatingWebhookConfiguration", "kai-admission")["webhooks"]:
        assert "matchConditions" not in hook and hook["failurePolicy"] == "Fail"
    assert kinds.index("ServiceMonitor") < kinds.index("Deployment")


def test_skip_crds() -> None:
    objects = install.manifests(install.defaults(), skip_crds=True)
    assert "CustomResourceDefinition" not in {o["kind"] for o in objects}


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("scheduler.replica=2", "unknown value 'scheduler.replica'"),
        ("nope.x=1", "unknown value 'nope'"),
        ("scheduler.replicas=two", "must be an integer"),
        ("scheduler.detailedFitErrors=yes please", "must be true or false"),
        ("scheduler.resources=1", "is a mapping"),
        ("scheduler.replicas", "expected KEY=VALUE"),
        ("image.tag.x=1", "unknown value 'image.tag.x'"),
    ],
)
def test_bad_set_is_a_values_error(assignment: str, message: str) -> None:
    with pytest.raises(ValuesError, match=message):
        resolve(sets=[assignment])


def test_values_file_merges_and_checks_keys(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("scheduler:\n  replicas: 2\n  resources:\n    limits:\n      cpu: '2'\n")
    values = resolve(files=[str(good)])
    assert values["scheduler"]["replicas"] == 2
    assert values["scheduler"]["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"cpu": "2", "memory": "512Mi"},
    }
    typo = tmp_path / "typo.yaml"
    typo.write_text("scheduler:\n  replicaz: 2\n")
    with pytest.raises(ValuesError, match=r"typo.yaml: unknown value 'scheduler.replicaz'"):
        resolve(files=[str(typo)])
    broken = tmp_path / "broken.yaml"
    broken.write_text("scheduler: [\n")
    with pytest.raises(ValuesError, match="not valid YAML"):
        resolve(files=[str(broken)])
    with pytest.raises(ValuesError, match=r"missing\.yaml"):
        resolve(files=[str(tmp_path / "missing.yaml")])


def test_bad_scheduler_config_is_a_values_error() -> None:
    values = resolve(sets=["scheduler.config=actions: allocate, teleport"])
    with pytest.raises(ValuesError, match=r"scheduler\.config.*teleport"):
        install.manifests(values)


def test_bad_image_is_a_values_error() -> None:
    with pytest.raises(ValuesError, match="REPOSITORY:TAG"):
        resolve(image="registry.local:5000/kai")


def test_cli_prints_a_yaml_stream(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    assert main(["manifests", "--skip-crds", "--set", "scheduler.replicas=2", "--namespace", "ns1"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs == install.manifests(resolve(sets=["scheduler.replicas=2"], namespace="ns1"), skip_crds=True)


def test_cli_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["manifests", "--set", "scheduler.bogus=1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scheduler.bogus" in err and "Traceback" not in err
    bad = tmp_path / "values.yaml"
    bad.write_text("- a list\n")
    assert main(["manifests", "-f", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected a mapping" in err
    assert main(["manifests", "--helm-chart", str(tmp_path / "c"), "--set", "scheduler.replicas=2"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_log_format_reaches_every_component_and_must_be_known() -> None:
    objects = install.manifests(resolve(sets=["global.logFormat=json"]))
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    assert deployments and all(
        d["spec"]["template"]["spec"]["containers"][0]["args"][0] == "--log-format=json" for d in deployments
    )
    with pytest.raises(ValuesError, match=r"global\.logFormat.*want text or json"):
        install.manifests(resolve(sets=["global.logFormat=xml"]))


def test_a_bad_reservation_pod_quantity_is_a_values_error_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Caught at `kai manifests`, not when the binder starts with it."""
    bad = "binder.resourceReservationPodResources.limits.cpu=lots"
    assert main(["manifests", "--set", bad]) == 2
    err = capsys.readouterr().err
    assert err == "kai: value binder.resourceReservationPodResources.limits.cpu: invalid quantity 'lots'\n"


def test_a_list_value_is_set_in_a_values_file(tmp_path: Path) -> None:
    with pytest.raises(ValuesError, match=r"'global\.tolerations' is a list; set it in a values file \(-f\)"):
        resolve(sets=["global.tolerations=x"])
    path = tmp_path / "v.yaml"
    path.write_text("global: {tolerations: {key: x}}\n")
    with pytest.raises(ValuesError, match=r"value 'global\.tolerations' must be a list"):
        resolve(files=[str(path)])
    path.write_text("global: {tolerations: [{key: x, operator: Exists}]}\n")
    assert resolve(files=[str(path)])["global"]["tolerations"] == [{"key": "x", "operator": "Exists"}]
