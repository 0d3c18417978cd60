"""A small valid cluster with one object of each shape the scheduler reads: the objects the fuzz tests change
one field of. Every object here parses and the cycle over them places the pods it can."""

from __future__ import annotations

from kai_scheduler.api import constants
from tests import builders as b

JSON = b.JSON
MIG = "nvidia.com/mig-1g.10gb"


def topology() -> JSON:
    return {
        "apiVersion": constants.TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": "cluster"},
        "spec": {"levels": [{"nodeLabel": "rack", "alias": "r"}, {"nodeLabel": constants.LABEL_HOSTNAME}]},
    }


def nodes() -> list[JSON]:
    gpu = b.node(
        "gpu-0",
        gpus=4,
        gpu_memory=40960,
        labels={"rack": "r1", constants.LABEL_GPU_COUNT: "4", "nvidia.com/gpu.product": "A100"},
        taints=["dedicated=gpu:NoSchedule"],
    )
    mig = b.node(
        "mig-0",
        gpus=0,
        labels={"rack": "r1", constants.LABEL_MIG_STRATEGY: "mixed", constants.LABEL_GPU_COUNT: "1"},
        extended={MIG: "7"},
    )
    return [gpu, mig, b.node("gpu-1", gpus=8, labels={"rack": "r2"})]


def queues() -> list[JSON]:
    return [
        b.queue(
            "dept",
            gpu_quota=8,
            cpu={"quota": 16000, "overQuotaWeight": 1, "limit": -1},
            memory={"quota": 16384, "overQuotaWeight": 1, "limit": -1},
        ),
        b.queue("q", parent="dept", gpu_quota=4, gpu_limit=12, cpu={"quota": 1000, "overQuotaWeight": 2, "limit": -1}),
        b.queue(
            "other",
            parent="dept",
            gpu_quota=4,
            cpu={"quota": 8000, "overQuotaWeight": 1, "limit": -1},
            memory={"quota": 8192, "overQuotaWeight": 1, "limit": -1},
        ),
    ]


TOLERATE = b.toleration("dedicated", value="gpu", effect="NoSchedule")


def workloads() -> list[JSON]:
    """PodGroups with their pods: a gang, a fractional pod, a gpu-memory pod, a subgroup tree with a topology
    constraint, a MIG pod, a running pod with its BindRequest."""
    gang = b.podgroup(
        "gang",
        min_member=2,
        priority_class="train",
        topologyConstraint={"topology": "cluster", "preferredTopologyLevel": "rack"},
        preemptionDelay="30s",
    )
    tree = b.podgroup(
        "tree",
        queue="other",
        sub_groups=[b.sub_group("lead", min_member=1), b.sub_group("work", min_member=1)],
        priority_class="build",
    )
    return [
        gang,
        *(b.pod(f"gang-{i}", group="gang", gpus=1, tolerations=[TOLERATE]) for i in range(2)),
        b.podgroup("frac"),
        b.pod("frac", fraction=0.5, tolerations=[TOLERATE], labels={constants.LABEL_QUEUE: "q"}),
        b.podgroup("mem"),
        b.pod("mem", gpu_memory=2000, tolerations=[TOLERATE]),
        tree,
        b.pod("tree-lead", group="tree", subgroup="lead", gpus=1),
        b.pod("tree-work", group="tree", subgroup="work", gpus=2, node_affinity=[b.term(b.expr("rack", "In", "r2"))]),
        b.podgroup("migjob"),
        b.pod("migjob", extended={MIG: "1"}),
        b.podgroup("run", queue="other"),
        b.pod("run", gpus=1, node="gpu-1"),
        b.bind_request("run", "gpu-1", phase="Succeeded"),
    ]


def cluster() -> list[JSON]:
    return [
        *nodes(),
        *queues(),
        topology(),
        b.priority_class("train", 50),
        b.priority_class("build", 100),
        *workloads(),
    ]
