"""KAI's chart values work here unchanged: every key of its values.yaml (and those its templates and docs read) is
accepted by `kai manifests`, one with an equivalent here means the same, one without is named in a warning, and a
key that is neither is one error line (exit 2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kai_scheduler import install
from kai_scheduler.cli import main
from kai_scheduler.install import kai_values
from kai_scheduler.install.values import ValuesError, resolve
from tests.install.conftest import JSON, by_name

FIXTURE = yaml.safe_load((Path(__file__).resolve().parents[1] / "fixtures" / "kai" / "values.yaml").read_text())
KAI_VALUES: dict[str, Any] = FIXTURE["values"]
TEMPLATE_KEYS: list[str] = FIXTURE["templateKeys"]


def _leaves(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf; an empty map or a list is a leaf, as Helm's --set sees it."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}" if path else key)
    else:
        yield path, node


def _nested(path: str, value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path.split(".")):
        out = {key: out}
    return dict(out)


def _set_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


KAI_LEAVES = list(_leaves(KAI_VALUES))


@pytest.mark.parametrize(("key", "value"), KAI_LEAVES, ids=[k for k, _ in KAI_LEAVES])
def test_every_kai_value_is_accepted_in_a_values_file(key: str, value: Any, tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(_nested(key, value)))
    resolve(files=[str(path)], ignored=[])


SCALAR_LEAVES = [(k, v) for k, v in KAI_LEAVES if not isinstance(v, dict | list)]


@pytest.mark.parametrize(("key", "value"), SCALAR_LEAVES, ids=[k for k, _ in SCALAR_LEAVES])
def test_every_kai_scalar_value_is_accepted_by_set(key: str, value: Any) -> None:
    resolve(sets=[f"{key}={_set_text(value)}"], ignored=[])


@pytest.mark.parametrize("assignment", TEMPLATE_KEYS)
def test_keys_kai_templates_and_docs_read_are_accepted(assignment: str) -> None:
    resolve(sets=[assignment], ignored=[])


def test_kai_values_file_installs_as_kai_defaults_would(tmp_path: Path) -> None:
    """KAI's whole values.yaml over ours changes nothing this install renders but what KAI's defaults say."""
    path = tmp_path / "kai.yaml"
    path.write_text(yaml.safe_dump(KAI_VALUES))
    ignored: list[str] = []
    values = resolve(files=[str(path)], ignored=ignored)
    assert install.manifests(values) == install.manifests(install.defaults())
    assert "global.registry: KAI's value has no effect here: one image runs every component here" in " ".join(ignored)


# (KAI --set, the same thing in this install's own values, what else the static install needs for it to show)
ALIASES = [
    ("global.gpuSharing=true", "global.gpuSharing=true", ""),
    ("global.clusterAutoscaling=true", "nodeScaleAdjuster.enabled=true", ""),
    ("global.blockNvidiaVisibleDevices=true", "admission.blockNvidiaVisibleDevices=true", ""),
    ("global.jsonLog=true", "global.logFormat=json", ""),
    ("global.imagePullPolicy=Always", "image.pullPolicy=Always", ""),
    ("global.nodePoolLabelKey=pool", "global.nodePoolLabelKey=pool", ""),
    ("global.resourceReservation.namespace=rr", "binder.resourceReservationNamespace=rr", ""),
    ("operator.replicaCount=2", "operator.replicas=2", "operator.enabled=true"),
    ("podgrouper.queueLabelKey=team", "global.queueLabelKey=team", ""),
    ("queuecontroller.resources.requests.cpu=1", "controllers.resources.requests.cpu=1", ""),
    ("podgroupcontroller.resources.requests.cpu=1", "controllers.resources.requests.cpu=1", ""),
    ("binder.resourceReservation.runtimeClassName=nvidia", "binder.runtimeClassName=nvidia", ""),
    ("admission.ports.webhookPort=9444", "admission.webhookPort=9444", ""),
    ("admission.gpuFractionRuntimeClassName=kata", "admission.runtimeClassName=kata", ""),
    ("admission.gpuPodRuntimeClassName=kata", "admission.runtimeClassName=kata", ""),
    (
        "nodescaleadjuster.scalingPodNamespace=scale",
        "nodeScaleAdjuster.scalingPodNamespace=scale",
        "nodeScaleAdjuster.enabled=true",
    ),
    (
        "nodescaleadjuster.resources.limits.cpu=1",
        "nodeScaleAdjuster.resources.limits.cpu=1",
        "nodeScaleAdjuster.enabled=true",
    ),
    ("defaultPriorityClasses.enabled=false", "priorityClasses.create=false", ""),
    ("defaultQueue.createDefaultQueue=false", "defaultQueues.create=false", ""),
    ("admission.gpuSharingEnabled=true", "global.gpuSharing=true", ""),  # this project's older name
]


@pytest.mark.parametrize(("kai", "ours", "shown_with"), ALIASES, ids=[k for k, _, _ in ALIASES])
def test_a_kai_value_means_what_it_means_in_kai(kai: str, ours: str, shown_with: str) -> None:
    for mode in ("operator.enabled=false", "operator.enabled=true"):
        base = [mode, *filter(None, [shown_with])]
        assert install.manifests(resolve(sets=[*base, kai])) == install.manifests(resolve(sets=[*base, ours]))
    base = ["operator.enabled=false", *filter(None, [shown_with])]
    assert install.manifests(resolve(sets=[*base, kai])) != install.manifests(resolve(sets=base))


def test_empty_node_pool_label_key_is_kai_default() -> None:
    assert resolve(sets=["global.nodePoolLabelKey="]) == install.defaults()


def test_null_puts_a_value_back_to_its_default(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("admission: {runtimeClassName: kata}\nscheduler: {replicas: null}\n")
    values = resolve(files=[str(path)], sets=["admission.runtimeClassName=null"])
    assert values == install.defaults()


def test_every_rule_names_a_value_of_this_install() -> None:
    for key, rule in kai_values.RULES.items():
        if isinstance(rule, kai_values.Alias):
            assert resolve(sets=[]) is not None
            node: Any = install.defaults()
            for part in rule.target.split("."):
                assert part in node, f"{key} → {rule.target}"
                node = node[part]


def test_cli_warns_once_per_kai_value_without_effect(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "manifests",
            "--skip-crds",
            "--static",
            "--set",
            "global.registry=ghcr.io/x",
            "--set",
            "scheduler.additionalArgs[0]=--feature-gates=DynamicResourceAllocation=true",
            "--set",
            "global.gpuSharing=true",
        ]
    )
    out = capsys.readouterr()
    assert code == 0 and out.out.startswith("---")
    warnings = out.err.splitlines()
    assert warnings == [
        "kai manifests: warning: global.registry: KAI's value has no effect here: one image runs every component "
        "here (image.repository, image.tag, image.pullPolicy)",
        "kai manifests: warning: scheduler.additionalArgs[0]: KAI's value has no effect here: KAI's chart no longer "
        "reads it either; the scheduler's flags are scheduler.*",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "global.gpuSharng=true"], "kai: --set global.gpuSharng: unknown value 'global.gpuSharng'\n"),
        (["--set", "binder.plugin.x=1"], "kai: --set binder.plugin.x: unknown value 'binder.plugin'\n"),
        (["--set", "global.gpuSharing=maybe"], "kai: --set: value 'global.gpuSharing' must be true or false, got "),
        (
            ["--set", "operator.replicaCount=two"],
            "kai: --set (operator.replicaCount): value 'operator.replicas' must be an integer, got 'two'\n",
        ),
    ],
)
def test_a_key_neither_here_nor_in_kai_is_one_error_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", *args]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith(message) and out.err.count("\n") == 1


def test_unknown_key_in_a_values_file_names_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text("global: {gpuSharing: true, registy: x}\n")
    with pytest.raises(ValuesError, match=rf"^{path}: unknown value 'global.registy'$"):
        resolve(files=[str(path)])


def _args(objects: list[JSON], name: str) -> list[str]:
    args: list[str] = by_name(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_gpu_sharing_is_off_by_default_as_in_kai() -> None:
    static = install.manifests(resolve(sets=["operator.enabled=false"]))
    assert "--gpu-sharing-enabled=false" in _args(static, "kai-admission")
    shared = install.manifests(resolve(sets=["operator.enabled=false", "global.gpuSharing=true"]))
    assert "--gpu-sharing-enabled=true" in _args(shared, "kai-admission")


def test_leader_election_value_turns_it_on_with_one_replica() -> None:
    objects = install.manifests(resolve(sets=["operator.enabled=false", "global.leaderElection=true"]))
    for name in ("kai-scheduler", "kai-binder", "kai-admission"):
        assert "--leader-elect=true" in _args(objects, name)
    default = install.manifests(resolve(sets=["operator.enabled=false"]))
    assert "--leader-elect=false" in _args(default, "kai-binder")
    operator = install.manifests(resolve(sets=["global.leaderElection=true"]))
    assert "--leader-elect=true" in _args(operator, "kai-operator")


def test_hami_core_is_off_by_default_and_kais_documented_install_turns_it_on_in_binder_and_admission() -> None:
    """KAI's HAMi guide: `--set global.gpuSharing=true --set binder.plugins.hamicore.enabled=true`."""
    default = install.manifests(resolve(sets=["operator.enabled=false"]))
    for name in ("kai-binder", "kai-admission"):
        assert "--hami-core-enabled=false" in _args(default, name)
    ignored: list[str] = []
    sets = ["operator.enabled=false", "global.gpuSharing=true", "binder.plugins.hamicore.enabled=true"]
    on = install.manifests(resolve(sets=sets, ignored=ignored))
    assert ignored == []
    for name in ("kai-binder", "kai-admission"):
        assert "--hami-core-enabled=true" in _args(on, name)
    assert "--gpu-sharing-enabled=true" in _args(on, "kai-admission")


def test_the_binders_other_plugin_settings_are_named_as_having_no_effect() -> None:
    ignored: list[str] = []
    values = resolve(
        sets=["binder.plugins.gpusharing.enabled=false", "binder.plugins.hamicore.priority=10"], ignored=ignored
    )
    assert values == install.defaults()
    assert [line.split(":")[0] for line in ignored] == [
        "binder.plugins.gpusharing.enabled",
        "binder.plugins.hamicore.priority",
    ]
    assert "other than binder.plugins.hamicore.enabled are fixed here" in ignored[0]
