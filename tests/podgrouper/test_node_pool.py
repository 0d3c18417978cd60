"""A PodGroup takes the node-pool label of its top owner, else of its pod (KAI's `addNodePoolLabel`): the
scheduler shard of that pool then takes the job (docs/shards.md)."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.podgrouper.context import Config
from tests.podgrouper.helpers import Cluster, bare_pod, controller_pod

KEY = constants.DEFAULT_NODE_POOL_LABEL_KEY

OWNED = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis
  namespace: default
  uid: 7f1e0c3a-3333-4c1b-8e57-2f0a9d6b1c2d
  labels: {kai.scheduler/node-pool: from-owner}
spec:
  serviceName: redis
  replicas: 1
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec:
      schedulerName: kai-scheduler
      containers: [{name: redis, image: redis:7}]
"""


def test_a_pods_node_pool_label_goes_to_its_podgroup() -> None:
    c = Cluster()
    c.add(bare_pod("p", labels={KEY: "a100"}))
    c.group()
    assert c.podgroup_of("p")["metadata"]["labels"][KEY] == "a100"


def test_a_pod_without_the_label_gives_a_podgroup_without_it() -> None:
    c = Cluster()
    c.add(bare_pod("p"))
    c.group()
    assert KEY not in (c.podgroup_of("p")["metadata"].get("labels") or {})


def test_the_owners_label_wins_over_the_pods() -> None:
    c = Cluster(OWNED)
    sts = c.owner("statefulsets", "redis")
    c.add(controller_pod("redis-0", sts, labels={KEY: "from-pod"}, gpus=0))
    c.group()
    assert c.podgroup_of("redis-0")["metadata"]["labels"][KEY] == "from-owner"


def test_the_configured_label_key_is_the_one_copied() -> None:
    """The owner has no label: only the configured key comes from the pod."""
    owner = OWNED.replace("labels: {kai.scheduler/node-pool: from-owner}", "labels: {}")
    c = Cluster(owner, config=Config(node_pool_label_key="example.com/pool"))
    sts = c.owner("statefulsets", "redis")
    c.add(controller_pod("redis-0", sts, labels={"example.com/pool": "x", KEY: "ignored"}, gpus=0))
    c.group()
    labels = c.podgroup_of("redis-0")["metadata"].get("labels") or {}
    assert labels.get("example.com/pool") == "x" and KEY not in labels
