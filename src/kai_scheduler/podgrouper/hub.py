"""Which grouper serves which top owner (KAI `podgrouper/hub/hub.go`, BEHAVIOR.md §8.2).

Groupers are keyed by the top owner's (API group, Kind), whatever its version (ray.io v1 and v1alpha1, MPIJob
v1 and v2beta1 read alike). Kinds in SKIP_TOP_OWNER only wrap the real workload (an Argo Workflow runs each
step as its own pod; a Kubeflow TrainJob runs a JobSet): the pod is grouped by the next owner down, or by
itself if there is none. Any other kind gets the default grouper.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from kai_scheduler.podgrouper import batch, default, foreign, grove, jobset, knative, kubeflow, lws, notebook, ray
from kai_scheduler.podgrouper.context import Context, Grouping, GroupKind

Grouper = Callable[[Context], Grouping]

GROUPERS: Mapping[GroupKind, Grouper] = {
    ("", "Pod"): default.group,
    ("apps", "Deployment"): default.per_pod,
    ("apps", "ReplicaSet"): default.group,
    ("apps", "StatefulSet"): default.group,
    ("batch", "Job"): batch.job,
    ("batch", "CronJob"): batch.cronjob,
    ("kubeflow.org", "PyTorchJob"): kubeflow.pytorch,
    ("kubeflow.org", "TFJob"): kubeflow.tfjob,
    ("kubeflow.org", "XGBoostJob"): kubeflow.xgboost,
    ("kubeflow.org", "JAXJob"): kubeflow.jax,
    ("kubeflow.org", "MPIJob"): kubeflow.mpijob,
    ("kubeflow.org", "Notebook"): notebook.group,
    ("ray.io", "RayCluster"): ray.group,
    ("ray.io", "RayJob"): ray.group,
    ("ray.io", "RayService"): ray.group,
    ("jobset.x-k8s.io", "JobSet"): jobset.group,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): lws.group,
    ("serving.knative.dev", "Service"): knative.group,
    ("grove.io", "PodCliqueSet"): grove.group,
    ("grove.io", "PodGangSet"): grove.group,
}

SKIP_TOP_OWNER: frozenset[GroupKind] = frozenset(
    {
        ("argoproj.io", "Workflow"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("nvidia.com", "DynamoGraphDeployment"),
    }
)


def group(ctx: Context) -> Grouping:
    """The pod's grouping by the grouper of its (possibly skipped) top owner; with migration on, a pod written
    for Volcano or YuniKorn is grouped by its markers first (`foreign`). The PodGroup carries the node-pool
    label of its owner, else of the pod (KAI's `addNodePoolLabel`): the scheduler shard of that pool takes it."""
    pod = ctx.pod
    migrated = foreign.group(ctx)
    if migrated is not None:
        return with_node_pool(migrated, pod.labels, ctx.config.node_pool_label_key)
    while len(ctx.chain) > 1 and ctx.top.group_kind in SKIP_TOP_OWNER:
        ctx = ctx.below_top(skip=True)
    grouping = GROUPERS.get(ctx.top.group_kind, default.group)(ctx)
    return with_node_pool(grouping, pod.labels, ctx.config.node_pool_label_key)


def with_node_pool(grouping: Grouping, pod_labels: Mapping[str, str], key: str) -> Grouping:
    """The grouping with the pod's node-pool label on its PodGroup, unless the PodGroup has one (the owner's)."""
    labels = grouping.podgroup.meta.labels
    if key in labels or key not in pod_labels:
        return grouping
    meta = dataclasses.replace(grouping.podgroup.meta, labels={**labels, key: pod_labels[key]})
    return dataclasses.replace(grouping, podgroup=dataclasses.replace(grouping.podgroup, meta=meta))
