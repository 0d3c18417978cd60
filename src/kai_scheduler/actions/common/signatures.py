"""Scheduling signatures: skip jobs no easier than one that already failed (§3.7; KAI
`actions/common/minimal_job_representatives.go`, `--use-scheduling-signatures`).

A job's signature is what constrains *where* its pods may go: node selectors, required node affinity,
tolerations, pod (anti-)affinity (preferred terms too: KAI hashes the whole affinity), the priority class, and
the topology constraints of the PodGroup and its subgroups (this model has no host ports or volumes). Per key
(the victim actions key by queue; consolidation by action), the smallest job that failed is remembered; a later
job with the same signature is skipped unless it is easier: fewer tasks to place, or some task smaller in some
resource than the failed job's task of the same rank (tasks sorted largest first).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework.session import Session

Signature = Hashable


def signature(job: JobInfo) -> Signature:
    """The placement constraints of the job and its pods, as one hashable value."""
    pods = []
    for task in job.tasks:
        pod = task.pod
        pods.append(
            (
                task.subgroup,
                tuple(sorted(pod.node_selector.items())),
                pod.node_affinity,
                pod.tolerations,
                pod.pod_affinity,
                pod.pod_anti_affinity,
                pod.preferred_pod_affinity,
                pod.preferred_pod_anti_affinity,
            )
        )
    podgroup = job.podgroup
    subgroups = tuple((sg.name, sg.topology_constraint) for sg in podgroup.sub_groups)
    return (podgroup.priority_class_name, podgroup.topology_constraint, subgroups, frozenset(pods))


class FailedJobs:
    """The smallest failed job per (key, signature); `enabled=False` never skips."""

    def __init__(self, ssn: Session, *, enabled: bool) -> None:
        self._ssn = ssn
        self._enabled = enabled
        self._smallest: dict[tuple[Hashable, Signature], list[tuple[float, ...]]] = {}

    def should_skip(self, key: Hashable, job: JobInfo) -> bool:
        """True when a job with the same signature failed and this one is no easier."""
        if not self._enabled:
            return False
        failed = self._smallest.get((key, signature(job)))
        return failed is not None and not _easier(self._sizes(job), failed)

    def remember(self, key: Hashable, job: JobInfo) -> None:
        """Record a failure; keep it if it is the first or easier than the one remembered."""
        if not self._enabled:
            return
        slot = (key, signature(job))
        sizes = self._sizes(job)
        known = self._smallest.get(slot)
        if known is None or _easier(sizes, known):
            self._smallest[slot] = sizes

    def _sizes(self, job: JobInfo) -> list[tuple[float, ...]]:
        requests = [tuple(float(x) for x in np.asarray(t.request)) for t in self._ssn.tasks_to_allocate(job)]
        return sorted(requests, reverse=True)


def _easier(candidate: list[tuple[float, ...]], failed: list[tuple[float, ...]]) -> bool:
    if len(candidate) < len(failed):
        return True
    for mine, theirs in zip(candidate, failed, strict=False):
        if any(a < b for a, b in zip(mine, theirs, strict=True)):
            return True
    return False
