"""The replay's owner objects: the real podgrouper makes from them the PodGroup the scenario job describes."""

from __future__ import annotations

import textwrap

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.sim import sources, workload
from kai_scheduler.store.memory import MemoryStore

HEAD = """
topologies:
- name: cluster
  levels:
  - {nodeLabel: topology/rack, alias: rack}
  - kubernetes.io/hostname
nodes:
- {name: n, count: 2, gpus: 8, labels: {topology/rack: r1}}
queues:
- name: a
  resources: {gpu: {quota: 8, overQuotaWeight: 1, limit: -1}}
jobs:
"""


def grouped(job_yaml: str) -> tuple[workload.Job, list[JSON], list[JSON]]:
    """The job as the replay holds it, and the PodGroups and pods after its objects are created and grouped."""
    loaded = sources.loads(HEAD + textwrap.indent(textwrap.dedent(job_yaml), ""), "test.yaml")
    cluster, jobs = workload.split(loaded.objects, loaded.jobs)
    store = MemoryStore(ManualClock(loaded.now))
    store.add_many(cluster)
    for obj in jobs[0].objects:
        store.create(obj)
    PodGrouper(store).reconcile()
    return jobs[0], store.list("podgroups")[0], store.list("pods")[0]


def specs(groups: list[JSON]) -> list[JSON]:
    return [g["spec"] for g in groups]


@pytest.mark.parametrize(
    "kind, replicas, min_member, want",
    [
        pytest.param("Job", 3, None, [{"queue": "a", "minMember": 3, "priorityClassName": "train"}], id="Job"),
        pytest.param("Job", 3, 1, [{"queue": "a", "minMember": 1, "priorityClassName": "train"}], id="elastic Job"),
        pytest.param("CronJob", 2, None, [{"queue": "a", "minMember": 2, "priorityClassName": "train"}], id="CronJob"),
        pytest.param(
            "PyTorchJob",
            3,
            None,
            [
                {
                    "queue": "a",
                    "minMember": 3,
                    "priorityClassName": "train",
                    "subGroups": [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}],
                }
            ],
            id="PyTorchJob",
        ),
        pytest.param("TFJob", 3, 2, [{"queue": "a", "minMember": 2, "priorityClassName": "train"}], id="TFJob"),
        pytest.param("MPIJob", 3, None, [{"queue": "a", "minMember": 3, "priorityClassName": "train"}], id="MPIJob"),
        pytest.param("JAXJob", 2, None, [{"queue": "a", "minMember": 2, "priorityClassName": "train"}], id="JAXJob"),
        pytest.param(
            "RayJob",
            3,
            2,
            [
                {
                    "queue": "a",
                    "minMember": 2,
                    "priorityClassName": "train",
                    "subGroups": [{"name": "head", "minMember": 1}, {"name": "workers", "minMember": 1}],
                }
            ],
            id="RayJob",
        ),
        pytest.param(
            "JobSet",
            3,
            None,
            [
                {
                    "queue": "a",
                    "priorityClassName": "train",
                    "minSubGroup": 1,
                    "subGroups": [
                        {"name": "workers", "minSubGroup": 1},
                        {"name": "workers-replica-0", "minMember": 3, "parent": "workers"},
                    ],
                }
            ],
            id="JobSet",
        ),
        pytest.param(
            "LeaderWorkerSet",
            3,
            None,
            [
                {
                    "queue": "a",
                    "minMember": 3,
                    "priorityClassName": "train",
                    "subGroups": [{"name": "leader", "minMember": 1}, {"name": "workers", "minMember": 2}],
                }
            ],
            id="LeaderWorkerSet",
        ),
        pytest.param(
            "Deployment",
            2,
            1,
            [{"queue": "a", "minMember": 1, "priorityClassName": "inference"}] * 2,
            id="Deployment: one per pod",
        ),
        pytest.param("Pod", 1, None, [{"queue": "a", "minMember": 1, "priorityClassName": "train"}], id="bare Pod"),
    ],
)
def test_the_podgrouper_makes_the_podgroup_from_the_owner(
    kind: str, replicas: int, min_member: int | None, want: list[JSON]
) -> None:
    extra = "" if min_member is None else f", minMember: {min_member}"
    job, groups, pods = grouped(f"""
- {{name: train, queue: a, owner: {{kind: {kind}}}, replicas: {replicas}{extra}, template: {{gpus: 1}}}}
""")
    assert job.owners or kind == "Pod"
    assert not any(o["kind"] == "PodGroup" for o in job.objects)
    assert specs(groups) == want
    assert all(p["metadata"]["annotations"]["pod-group-name"].startswith("pg-") for p in pods)


def test_what_the_scenario_says_rides_on_the_owner() -> None:
    _, groups, _ = grouped("""
- name: train
  queue: a
  owner: {kind: Job}
  priorityClassName: build
  preemptibility: preemptible
  preemptionDelay: 5m
  stalenessGracePeriod: 2m
  topologyConstraint: {topology: cluster, requiredTopologyLevel: rack}
  replicas: 2
  template: {gpus: 1}
""")
    assert specs(groups) == [
        {
            "queue": "a",
            "minMember": 2,
            "priorityClassName": "build",
            "preemptibility": "preemptible",
            "topologyConstraint": {"topology": "cluster", "requiredTopologyLevel": "rack"},
            "preemptionDelay": "5m",
            "stalenessGracePeriod": "2m",
        }
    ]


@pytest.mark.parametrize(
    "job_yaml",
    [
        pytest.param("- {name: train, queue: a, replicas: 2, template: {gpus: 1}}", id="no owner"),
        pytest.param(
            "- {name: train, queue: a, owner: {kind: Deployment}, replicas: 2, template: {gpus: 1}}",
            id="a gang of a per-pod kind",
        ),
        pytest.param(
            "- {name: train, queue: a, owner: {kind: Job}, minSubGroup: 1, subGroups: [{name: x, minMember: 1}],"
            " replicas: 1, template: {gpus: 1, subGroup: x}}",
            id="subgroups written in the scenario",
        ),
        pytest.param(
            "- {name: train, queue: a, owner: {kind: DaemonSet}, replicas: 1, template: {gpus: 1}}",
            id="a kind the store does not serve",
        ),
    ],
)
def test_a_podgroup_the_owner_cannot_ask_for_stays_external(job_yaml: str) -> None:
    job, groups, pods = grouped(job_yaml)
    assert job.owners == []
    assert [g["metadata"]["name"] for g in groups] == ["train"]
    assert {p["metadata"]["annotations"]["pod-group-name"] for p in pods} == {"train"}
