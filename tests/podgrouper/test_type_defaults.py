"""The default priorities ConfigMap (KAI's --default-priorities-configmap-name/-namespace): a priority class and
preemptibility per workload kind, below what the workload's labels say and above the built-in kind defaults."""

from __future__ import annotations

import json
import logging

import pytest

from kai_scheduler import cli
from kai_scheduler.api import constants
from kai_scheduler.api.errors import UserError
from kai_scheduler.api.fields import JSON
from kai_scheduler.cli import components as cli_components
from kai_scheduler.podgrouper import type_defaults
from kai_scheduler.podgrouper.context import Config
from kai_scheduler.podgrouper.type_defaults import TypeDefault
from tests.podgrouper.helpers import Cluster, bare_pod, controller_pod, defaults_configmap, spec
from tests.podgrouper.test_batch import CRONJOB
from tests.podgrouper.test_default import WORKFLOW

NS, NAME = "kai-scheduler", "kind-defaults"
CONFIG = Config(defaults_configmap_namespace=NS, defaults_configmap_name=NAME)

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: llm, namespace: serve, uid: 7d1e2f3a-0001-4b5c-8d9e-0f1a2b3c4d5e}
spec:
  replicas: 1
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec: {schedulerName: kai-scheduler, containers: [{name: llm, image: vllm:0.6}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: llm-5f6d
  namespace: serve
  uid: 7d1e2f3a-0002-4b5c-8d9e-0f1a2b3c4d5e
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: llm, uid: 7d1e2f3a-0001-4b5c-8d9e-0f1a2b3c4d5e, controller: true}
spec:
  replicas: 1
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec: {schedulerName: kai-scheduler, containers: [{name: llm, image: vllm:0.6}]}
"""


def _cluster(types: list[JSON], *manifests: str) -> Cluster:
    c = Cluster(*manifests, config=CONFIG)
    c.add(defaults_configmap(NS, NAME, types))
    return c


def _deployment_pod(c: Cluster, labels: dict[str, str] | None = None) -> JSON:
    c.add(controller_pod("llm-5f6d-abcde", c.owner("replicasets", "llm-5f6d", "serve"), labels=labels))
    c.group()
    return spec(c.podgroup_of("llm-5f6d-abcde", "serve"))


def test_a_kinds_entry_sets_its_workloads_priority_class_and_preemptibility() -> None:
    c = _cluster(
        [{"typeName": "Deployment", "group": "apps", "priorityName": "train", "preemptibility": "Preemptible"}],
        DEPLOYMENT,
    )
    got = _deployment_pod(c)
    assert got["priorityClassName"] == "train"  # the built-in default of a Deployment is `inference`
    assert got["preemptibility"] == "preemptible"  # written in any case, read lowercased


def test_without_the_configmap_the_built_in_kind_defaults_hold() -> None:
    c = Cluster(DEPLOYMENT)
    got = _deployment_pod(c)
    assert got["priorityClassName"] == "inference"
    assert "preemptibility" not in got


def test_an_entry_of_the_group_and_kind_comes_before_one_of_the_kind_alone() -> None:
    c = _cluster(
        [
            {"typeName": "Deployment", "priorityName": "build"},
            {"typeName": "Deployment", "group": "apps", "priorityName": "train"},
        ],
        DEPLOYMENT,
    )
    assert _deployment_pod(c)["priorityClassName"] == "train"


def test_an_entry_of_another_group_does_not_apply() -> None:
    c = _cluster([{"typeName": "Deployment", "group": "example.com", "priorityName": "train"}], DEPLOYMENT)
    assert _deployment_pod(c)["priorityClassName"] == "inference"


def test_the_nearest_owner_with_an_entry_comes_first() -> None:
    """KAI's grouper takes the owners from the pod up: the ReplicaSet's entry before the Deployment's."""
    c = _cluster(
        [
            {"typeName": "Deployment", "group": "apps", "priorityName": "train", "preemptibility": "preemptible"},
            {"typeName": "ReplicaSet", "group": "apps", "priorityName": "build"},
        ],
        DEPLOYMENT,
    )
    got = _deployment_pod(c)
    assert got["priorityClassName"] == "build"
    assert got["preemptibility"] == "preemptible"  # the ReplicaSet's entry sets none: the Deployment's applies


def test_a_class_that_does_not_exist_is_passed_over() -> None:
    c = _cluster(
        [
            {"typeName": "ReplicaSet", "group": "apps", "priorityName": "no-such-class"},
            {"typeName": "Deployment", "group": "apps", "priorityName": "train"},
        ],
        DEPLOYMENT,
    )
    assert _deployment_pod(c)["priorityClassName"] == "train"


def test_the_workloads_labels_come_before_the_kinds_defaults() -> None:
    c = _cluster(
        [{"typeName": "Deployment", "group": "apps", "priorityName": "train", "preemptibility": "preemptible"}],
        DEPLOYMENT,
    )
    labels = {constants.LABEL_PRIORITY_CLASS: "build", constants.LABEL_PREEMPTIBILITY: "non-preemptible"}
    got = _deployment_pod(c, labels)
    assert (got["priorityClassName"], got["preemptibility"]) == ("build", "non-preemptible")


def test_a_bare_pod_takes_the_entry_of_the_kind_pod() -> None:
    c = _cluster([{"typeName": "Pod", "priorityName": "inference", "preemptibility": "non-preemptible"}])
    c.add(bare_pod("shell"))
    c.group()
    got = spec(c.podgroup_of("shell"))
    assert (got["priorityClassName"], got["preemptibility"]) == ("inference", "non-preemptible")


def test_a_skipped_top_owners_entry_comes_first() -> None:
    """An Argo Workflow is skipped as the workload, each step its own; KAI still gives the steps the Workflow's
    kind defaults (it writes them into the child's labels), before the step pod's own kind's."""
    c = _cluster(
        [
            {"typeName": "Workflow", "group": "argoproj.io", "priorityName": "build"},
            {"typeName": "Pod", "priorityName": "inference", "preemptibility": "preemptible"},
        ],
        WORKFLOW,
    )
    c.add(controller_pod("etl-6x2kq-step-1", c.owner("workflows", "etl-6x2kq")))
    c.group()
    got = spec(c.podgroup_of("etl-6x2kq-step-1"))
    assert (got["priorityClassName"], got["preemptibility"]) == ("build", "preemptible")


def test_a_cronjobs_entry_applies_to_its_runs() -> None:
    c = _cluster([{"typeName": "CronJob", "group": "batch", "priorityName": "build"}], CRONJOB)
    c.add(controller_pod("nightly-eval-29471040-abcde", c.owner("jobs", "nightly-eval-29471040", "ml")))
    c.group()
    assert spec(c.podgroup_of("nightly-eval-29471040-abcde", "ml"))["priorityClassName"] == "build"


def test_an_edit_applies_to_the_pods_grouped_after_it() -> None:
    c = _cluster([{"typeName": "Pod", "priorityName": "build"}])
    c.add(bare_pod("first"))
    c.group()
    c.store.patch(
        "configmaps", NAME, NS, {"data": {"types": json.dumps([{"typeName": "Pod", "priorityName": "inference"}])}}
    )
    c.add(bare_pod("second"))
    c.group()
    assert spec(c.podgroup_of("first"))["priorityClassName"] == "build"
    assert spec(c.podgroup_of("second"))["priorityClassName"] == "inference"


def test_a_missing_configmap_leaves_the_built_in_defaults_and_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    c = Cluster(DEPLOYMENT, config=CONFIG)
    with caplog.at_level(logging.WARNING, logger=type_defaults.__name__):
        assert _deployment_pod(c)["priorityClassName"] == "inference"
        c.add(bare_pod("shell"))
        c.group()
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [f"default priorities: ConfigMap {NS}/{NAME}: not found; the built-in defaults apply"]


def test_an_unreadable_configmap_leaves_the_built_in_defaults(caplog: pytest.LogCaptureFixture) -> None:
    c = Cluster(DEPLOYMENT, config=CONFIG)
    c.add(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NS}, "data": {"types": "[{"}}
    )
    with caplog.at_level(logging.WARNING, logger=type_defaults.__name__):
        assert _deployment_pod(c)["priorityClassName"] == "inference"
    assert [r.getMessage().split(": not JSON")[0] for r in caplog.records] == [
        f"default priorities: ConfigMap {NS}/{NAME} data.types"
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({}, "data.types: missing"),
        ({"types": "{}"}, "data.types: expected a list of entries, got dict"),
        ({"types": "[1]"}, "data.types[0]: expected an object, got int"),
        ({"types": '[{"typeName": "Pod", "group": 3}]'}, "data.types[0].group: expected a string, got 3"),
    ],
)
def test_a_configmap_that_cannot_be_read_names_its_field(data: JSON, problem: str) -> None:
    configmap = {"metadata": {"name": NAME, "namespace": NS}, "data": data}
    with pytest.raises(UserError) as err:
        type_defaults.parse(configmap)
    assert str(err.value).startswith(f"ConfigMap {NS}/{NAME} {problem}")


def test_an_entry_taken_in_part_is_named() -> None:
    """An unknown preemptibility is left out of its entry, as KAI's grouper leaves it; an entry without a kind is
    left out."""
    types = [
        {"typeName": "Deployment", "group": "apps", "priorityName": "train", "preemptibility": "INVALID_VALUE"},
        {"priorityName": "build"},
    ]
    defaults, problems = type_defaults.parse(defaults_configmap(NS, NAME, types))
    assert defaults == {"Deployment.apps": TypeDefault("train", "")}
    assert problems == [
        f"ConfigMap {NS}/{NAME} data.types[0].preemptibility: unknown value 'INVALID_VALUE'; want preemptible or "
        "non-preemptible; ignored",
        f"ConfigMap {NS}/{NAME} data.types[1].typeName: missing; entry ignored",
    ]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--default-priorities-configmap-name=d", "--default-priorities-configmap-namespace=kai"], ("kai", "d")),
        ([], ("", "")),
    ],
)
def test_the_flags_set_the_configmap(argv: list[str], expected: tuple[str, str]) -> None:
    args = cli.parser().parse_args(["podgrouper", *argv])
    options = cli_components._grouper_options(args)
    assert (options.defaults_configmap_namespace, options.defaults_configmap_name) == expected


@pytest.mark.parametrize("component", ["podgrouper", "run"])
def test_one_flag_of_the_pair_alone_is_a_user_error(component: str) -> None:
    args = cli.parser().parse_args([component, "--default-priorities-configmap-name=d"])
    with pytest.raises(UserError) as err:
        cli_components._grouper_options(args)
    assert str(err.value) == "--default-priorities-configmap-name needs --default-priorities-configmap-namespace too"
