"""DRA in the simulator: claims are made from templates as pods arrive (and again for a pod its owner
recreates), victims of reclaim free their devices, and every job runs to the end."""

from __future__ import annotations

from tests.sim.helpers import simulate

SCENARIO = """
nodes:
- {name: n, count: 2, draGpus: 4}
queues:
- name: team-a
  resources: {gpu: {quota: 4, overQuotaWeight: 1, limit: -1}}
- name: team-b
  resources: {gpu: {quota: 4, overQuotaWeight: 1, limit: -1}}
jobs:
- {name: a, count: 4, queue: team-a, priority: 50, replicas: 2, template: {draGpus: 1}, duration: 20m,
   owner: {kind: PyTorchJob}}
- {name: b, count: 2, queue: team-b, priority: 50, submitAt: 5m, replicas: 2, template: {draGpus: 1},
   duration: 10m, owner: {kind: PyTorchJob}}
"""


def test_reclaimed_dra_gpus_go_to_the_reclaimer_and_every_job_finishes() -> None:
    result = simulate(SCENARIO)
    assert result.summary.interruptions > 0  # team-b reclaimed its quota from team-a's DRA GPUs
    assert all(job.finished is not None for job in result.jobs)
    b_started = sorted(job.started for job in result.jobs if job.meta.name.startswith("b"))
    assert b_started and all(t is not None and t < 600 for t in b_started)  # not after team-a's 20 minutes
