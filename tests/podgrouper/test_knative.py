"""Knative Service grouper: one PodGroup per pod, or with gang scheduling one per Revision (min-scale)."""

from __future__ import annotations

import pytest

from kai_scheduler import cli
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.cli import components as cli_components
from kai_scheduler.podgrouper.context import Config
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.runtime import components
from tests.podgrouper.helpers import NOW, Cluster, controller_pod, spec

SERVICE = """
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: whisper
  namespace: apps
  uid: 5c6d7e8f-0001-4a9b-8c0d-1e2f3a4b5c6d
  labels: {kai.scheduler/queue: inference}
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/min-scale: "3"
        autoscaling.knative.dev/max-scale: "10"
    spec:
      schedulerName: kai-scheduler
      containers:
      - {image: ghcr.io/example/whisper:1.2, resources: {limits: {nvidia.com/gpu: 1}}}
---
apiVersion: serving.knative.dev/v1
kind: Configuration
metadata:
  name: whisper
  namespace: apps
  uid: 5c6d7e8f-0002-4a9b-8c0d-1e2f3a4b5c6d
  labels: {kai.scheduler/queue: inference, serving.knative.dev/service: whisper}
  ownerReferences:
  - {apiVersion: serving.knative.dev/v1, kind: Service, name: whisper, uid: 5c6d7e8f-0001-4a9b-8c0d-1e2f3a4b5c6d,
     controller: true, blockOwnerDeletion: true}
spec: {}
---
apiVersion: serving.knative.dev/v1
kind: Revision
metadata:
  name: whisper-00001
  namespace: apps
  uid: 5c6d7e8f-0003-4a9b-8c0d-1e2f3a4b5c6d
  labels: {serving.knative.dev/service: whisper, serving.knative.dev/configuration: whisper}
  annotations: {autoscaling.knative.dev/min-scale: "3", autoscaling.knative.dev/max-scale: "10"}
  ownerReferences:
  - {apiVersion: serving.knative.dev/v1, kind: Configuration, name: whisper,
     uid: 5c6d7e8f-0002-4a9b-8c0d-1e2f3a4b5c6d, controller: true, blockOwnerDeletion: true}
spec: {containers: [{image: ghcr.io/example/whisper:1.2}]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: whisper-00001-deployment
  namespace: apps
  uid: 5c6d7e8f-0004-4a9b-8c0d-1e2f3a4b5c6d
  ownerReferences:
  - {apiVersion: serving.knative.dev/v1, kind: Revision, name: whisper-00001,
     uid: 5c6d7e8f-0003-4a9b-8c0d-1e2f3a4b5c6d, controller: true, blockOwnerDeletion: true}
spec: {replicas: 3, selector: {matchLabels: {app: whisper-00001}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: whisper-00001-deployment-7b9c8d6f5
  namespace: apps
  uid: 5c6d7e8f-0005-4a9b-8c0d-1e2f3a4b5c6d
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: whisper-00001-deployment,
     uid: 5c6d7e8f-0004-4a9b-8c0d-1e2f3a4b5c6d, controller: true, blockOwnerDeletion: true}
spec: {replicas: 3, selector: {matchLabels: {app: whisper-00001}}}
"""

POD_LABELS = {"serving.knative.dev/service": "whisper", "serving.knative.dev/revision": "whisper-00001"}


def pods(c: Cluster) -> list[JSON]:
    rs = c.owner("replicasets", "whisper-00001-deployment-7b9c8d6f5", "apps")
    return [controller_pod(f"whisper-00001-deployment-7b9c8d6f5-{s}", rs, labels=POD_LABELS) for s in "abc"]


def test_without_gang_scheduling_a_knative_service_gets_one_podgroup_per_pod() -> None:
    c = Cluster(SERVICE, config=Config(knative_gang_schedule=False))
    c.add(*pods(c))
    c.group()
    groups = c.podgroups("apps")
    assert len(groups) == 3
    for pg in groups:
        assert spec(pg) == {"queue": "inference", "minMember": 1, "priorityClassName": "inference"}
        assert pg["metadata"]["ownerReferences"][0]["kind"] == "Pod"


def test_by_default_a_revision_is_one_gang_of_min_scale() -> None:
    """KAI's --knative-gang-schedule defaults to true."""
    c = Cluster(SERVICE)
    c.add(*pods(c))
    outcome = c.group()
    assert outcome.created == ["apps/pg-whisper-00001-5c6d7e8f-0003-4a9b-8c0d-1e2f3a4b5c6d"]
    pg = c.podgroups("apps")[0]
    assert spec(pg) == {"queue": "inference", "minMember": 3, "priorityClassName": "inference"}
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "Revision"
    assert pg["metadata"]["labels"] == {"kai.scheduler/queue": "inference"}  # the Service's


def _grouped_per_pod_then_gang_on(c: Cluster, first: list[JSON]) -> Cluster:
    """`first` grouped one per pod, then the grouper made again with gang scheduling on (an upgrade)."""
    c.grouper = PodGrouper(c.store, Config(knative_gang_schedule=False))
    c.add(*first)
    c.group()
    c.grouper = PodGrouper(c.store, Config(knative_gang_schedule=True))
    return c


def test_a_revision_grouped_one_per_pod_stays_so_when_gang_scheduling_is_turned_on() -> None:
    c = Cluster(SERVICE)
    a, b, new = pods(c)
    _grouped_per_pod_then_gang_on(c, [a, b])
    c.add(new)
    c.group()
    groups = c.podgroups("apps")
    assert len(groups) == 3
    assert {pg["metadata"]["ownerReferences"][0]["kind"] for pg in groups} == {"Pod"}


def test_a_revision_with_one_pod_in_a_podgroup_of_its_own_stays_one_per_pod() -> None:
    c = Cluster(SERVICE)
    a, b, _ = pods(c)
    _grouped_per_pod_then_gang_on(c, [a])
    c.add(b)
    c.group()
    assert c.podgroup_of(b["metadata"]["name"], "apps")["metadata"]["ownerReferences"][0]["kind"] == "Pod"


def test_a_revision_already_in_a_gang_stays_a_gang() -> None:
    c = Cluster(SERVICE)
    a, b, new = pods(c)
    c.add(a)
    c.group()
    c.add(b, new)
    c.group()
    groups = c.podgroups("apps")
    assert len(groups) == 1
    assert groups[0]["metadata"]["ownerReferences"][0]["kind"] == "Revision"


@pytest.mark.parametrize(
    "command, flags, groups",
    [
        pytest.param("podgrouper", [], 1, id="default: one per Revision"),
        pytest.param("podgrouper", ["--knative-gang-schedule"], 1, id="kai podgrouper --knative-gang-schedule"),
        pytest.param("podgrouper", ["--knative-gang-schedule=false"], 3, id="=false"),
        pytest.param("run", ["--knative-gang-schedule=true"], 1, id="kai run --knative-gang-schedule=true"),
    ],
)
def test_the_knative_gang_schedule_flag_reaches_the_pod_grouper(command: str, flags: list[str], groups: int) -> None:
    """Gang scheduling of Knative Revisions was in the grouper's Config but no flag set it; the flag's default is
    KAI's, true."""
    c = Cluster(SERVICE)
    c.add(*pods(c))
    options = cli_components._grouper_options(cli.parser().parse_args([command, *flags]))
    components.podgrouper(c.store, options, ManualClock(NOW)).step()
    assert len(c.podgroups("apps")) == groups
