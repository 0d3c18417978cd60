"""KAI's selective monitoring (`--set global.podLabelSelector.K=V`, `global.namespaceLabelSelector.K=V`): the pod
grouper's selector flags and the pod webhooks' objectSelector / namespaceSelector, in the static install from the
values and in the operator install through the Config `kai-config`."""

from __future__ import annotations

import pytest
import yaml

from kai_scheduler import install
from kai_scheduler.api import kaiconfig
from kai_scheduler.cli import main
from kai_scheduler.install import kai_config
from kai_scheduler.operator import render
from tests.install.conftest import JSON, by_name

SETS = [
    "global.podLabelSelector.app=batch",
    "global.podLabelSelector.gpu=true",
    "global.namespaceLabelSelector.team=ml",
]
POD_WEBHOOKS = ("pods.mutate.kai.scheduler", "pods.validate.kai.scheduler")


def grouper_args(objects: list[JSON]) -> list[str]:
    deployment = by_name(objects, "Deployment", "kai-podgrouper")
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def webhooks(objects: list[JSON]) -> dict[str, JSON]:
    return {
        hook["name"]: hook
        for o in objects
        if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for hook in o["webhooks"]
    }


def test_the_static_install_passes_the_selectors_to_the_grouper_and_the_pod_webhooks() -> None:
    ignored: list[str] = []
    objects = install.manifests(install.resolve(sets=["operator.enabled=false", *SETS], ignored=ignored))
    assert ignored == []
    args = grouper_args(objects)
    assert "--pod-label-selector=app=batch,gpu=true" in args
    assert "--namespace-label-selector=team=ml" in args
    hooks = webhooks(objects)
    for name in POD_WEBHOOKS:
        assert hooks[name]["objectSelector"] == {"matchLabels": {"app": "batch", "gpu": "true"}}
        assert hooks[name]["namespaceSelector"] == {"matchLabels": {"team": "ml"}}
    for name, hook in hooks.items():
        if name not in POD_WEBHOOKS:  # KAI scopes its pod webhooks only
            assert "objectSelector" not in hook and "namespaceSelector" not in hook, name


def test_without_selectors_every_pod_is_served() -> None:
    objects = install.manifests(install.resolve(sets=["operator.enabled=false"]))
    args = grouper_args(objects)
    assert "--pod-label-selector=" in args and "--namespace-label-selector=" in args
    for hook in webhooks(objects).values():
        assert "objectSelector" not in hook and "namespaceSelector" not in hook


def test_the_operator_install_carries_the_selectors_through_the_config() -> None:
    values = install.resolve(sets=SETS)
    objects = install.manifests(values)
    manifest = by_name(objects, "ConfigMap", kai_config.CONFIG_MAP)
    config_doc = yaml.safe_load(manifest["data"][kai_config.CONFIG_KEY])
    assert config_doc["spec"]["global"]["podLabelSelector"] == {"app": "batch", "gpu": "true"}
    assert config_doc["spec"]["global"]["namespaceLabelSelector"] == {"team": "ml"}
    config = kaiconfig.Config.from_dict(config_doc)
    assert config.ignored == []
    rendered = render.shared_objects(render.with_config(install.defaults(), config), None)
    args = rendered[("deployments", "kai-podgrouper")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--pod-label-selector=app=batch,gpu=true" in args and "--namespace-label-selector=team=ml" in args
    hooks = webhooks(objects)  # the install's own webhook configurations, from the same values
    assert hooks["pods.mutate.kai.scheduler"]["objectSelector"] == {"matchLabels": {"app": "batch", "gpu": "true"}}


def test_a_label_key_with_dots_is_set_with_helms_escape() -> None:
    values = install.resolve(sets=[r"global.namespaceLabelSelector.example\.com/team=ml"])
    assert values["global"]["namespaceLabelSelector"] == {"example.com/team": "ml"}


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            "global.podLabelSelector.app=a b",
            "kai: value 'global.podLabelSelector': label app: 'a b' is not a label value\n",
        ),
        (
            "global.namespaceLabelSelector.Team_/x=ml",
            "kai: value 'global.namespaceLabelSelector': 'Team_/x' is not a label key\n",
        ),
    ],
)
@pytest.mark.parametrize("mode", [[], ["--static"]])
def test_a_bad_selector_value_is_one_line_and_exit_2(
    assignment: str, message: str, mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", *mode, "--set", assignment]) == 2
    assert capsys.readouterr().err == message
