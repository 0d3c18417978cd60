"""Kubeflow Notebook grouper: the default grouper with the `build` priority class."""

from __future__ import annotations

from kai_scheduler.podgrouper.context import Config
from tests.podgrouper.helpers import Cluster, controller_pod, defaults_configmap, spec

NOTEBOOK = """
apiVersion: kubeflow.org/v1beta1
kind: Notebook
metadata:
  name: alice-jupyter
  namespace: kubeflow-user-alice
  uid: 1f2e3d4c-0001-4b5a-9c8d-7e6f5a4b3c2d
  labels: {app: alice-jupyter, kai.scheduler/queue: research}
spec:
  template:
    spec:
      schedulerName: kai-scheduler
      containers:
      - {name: alice-jupyter, image: kubeflownotebookswg/jupyter-pytorch-cuda-full:v1.8.0,
         resources: {limits: {nvidia.com/gpu: 1}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: alice-jupyter
  namespace: kubeflow-user-alice
  uid: 1f2e3d4c-0002-4b5a-9c8d-7e6f5a4b3c2d
  ownerReferences:
  - {apiVersion: kubeflow.org/v1beta1, kind: Notebook, name: alice-jupyter, uid: 1f2e3d4c-0001-4b5a-9c8d-7e6f5a4b3c2d,
     controller: true, blockOwnerDeletion: true}
spec: {replicas: 1, serviceName: alice-jupyter}
"""


def test_a_notebook_runs_with_the_build_class() -> None:
    c = Cluster(NOTEBOOK)
    c.add(controller_pod("alice-jupyter-0", c.owner("statefulsets", "alice-jupyter", "kubeflow-user-alice")))
    c.group()
    pg = c.podgroup_of("alice-jupyter-0", "kubeflow-user-alice")
    assert pg["metadata"]["name"] == "pg-alice-jupyter-1f2e3d4c-0001-4b5a-9c8d-7e6f5a4b3c2d"
    assert spec(pg) == {"queue": "research", "minMember": 1, "priorityClassName": "build"}


def test_the_per_kind_default_can_be_configured() -> None:
    config = Config(defaults_configmap_namespace="kai-system", defaults_configmap_name="defaults")
    c = Cluster(NOTEBOOK, config=config)
    c.add(defaults_configmap("kai-system", "defaults", [{"typeName": "Notebook", "priorityName": "build-preemptible"}]))
    c.add(controller_pod("alice-jupyter-0", c.owner("statefulsets", "alice-jupyter", "kubeflow-user-alice")))
    c.group()
    assert spec(c.podgroup_of("alice-jupyter-0", "kubeflow-user-alice"))["priorityClassName"] == "build-preemptible"
