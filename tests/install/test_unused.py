"""`kai manifests` names each value that changes nothing in the install it was given to: in the default (operator)
install the components' values that the Config and the default shard it renders have no field for; the
node-scale-adjuster's while it is off."""

from __future__ import annotations

import pytest
import yaml

from kai_scheduler import install
from kai_scheduler.cli import main
from kai_scheduler.install.unused import unused


def test_in_the_operator_install_only_the_component_values_the_config_cannot_carry_are_unused() -> None:
    values = install.resolve(
        sets=[
            "scheduler.replicas=2",  # the Config's scheduler.replicas
            "global.gpuSharing=true",  # the Config's admission.gpuSharing
            "scheduler.placementStrategy=spread",  # the default shard's
            "binder.reconcilePeriod=1s",
            "admission.podFailurePolicy=Fail",  # the webhooks are in the stream
            "operator.replicas=2",
            "priorityClasses.create=false",
        ],
        namespace="gpu",
    )
    assert unused(values) == ["binder.reconcilePeriod"]


def test_in_the_static_install_the_component_values_are_used() -> None:
    values = install.resolve(sets=["operator.enabled=false", "scheduler.replicas=2", "binder.reconcilePeriod=1s"])
    assert unused(values) == []


def test_a_disabled_parts_values_are_unused_until_it_is_enabled() -> None:
    assert unused(install.resolve(sets=["nodeScaleAdjuster.replicas=2"])) == ["nodeScaleAdjuster.replicas"]
    assert unused(install.resolve(sets=["nodeScaleAdjuster.replicas=2", "nodeScaleAdjuster.enabled=true"])) == []


def test_the_defaults_have_nothing_to_say() -> None:
    assert unused(install.defaults()) == []


def test_the_cli_warns_once_per_unused_value_and_still_prints_the_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "--skip-crds", "--set", "binder.reconcilePeriod=1s"]) == 0
    out, err = capsys.readouterr()
    assert [d for d in yaml.safe_load_all(out) if d] == install.manifests(
        install.resolve(sets=["binder.reconcilePeriod=1s"]), skip_crds=True
    )
    (line,) = err.splitlines()
    assert line == (
        "kai manifests: warning: binder.reconcilePeriod changes nothing in this install: the operator renders the "
        "components from the Config kai-config and the SchedulingShard default this install renders, which have no "
        "field for it (docs/install.md), or use --static"
    )
    assert main(["manifests", "--skip-crds", "--static", "--set", "binder.reconcilePeriod=1s"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["manifests", "--skip-crds", "--static", "--set", "nodeScaleAdjuster.replicas=3"]) == 0
    assert capsys.readouterr().err.strip().endswith("(nodeScaleAdjuster.enabled is false)")
