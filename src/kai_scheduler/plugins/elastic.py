"""elastic: jobs short of their gang minimum first (§3.4, §7.1; KAI `plugins/elastic/elastic.go`).

Jobs are ranked by how far they are from their minimum: below it, exactly at it, above it. A job below its
minimum can still start; one exactly at it is complete and asks for its first elastic pod, which beats a job
that already holds extras. Counts are active-allocated pods, so placements made this session count.
"""

from __future__ import annotations

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase

BELOW_MIN, AT_MIN, ABOVE_MIN = 0, 1, 2


class Elastic(PluginBase):
    name = "elastic"

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None
        self._bands: dict[str, tuple[int, int]] = {}  # job uid → (band, the snapshot's version when counted)

    def on_session_open(self, ssn: Session) -> None:
        self._snapshot, self._bands = ssn.snapshot, {}
        ssn.add(points.JOB_ORDER, self.job_order)
        ssn.add(points.JOB_ORDER_KEY, self._band)

    def on_session_close(self, ssn: Session) -> None:
        self._snapshot, self._bands = None, {}  # a held snapshot would keep its model from being reused

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Negative when `left` is further from satisfied; 0 when both are in the same band."""
        left_band, right_band = self._band(left), self._band(right)
        return (left_band > right_band) - (left_band < right_band)

    def _band(self, job: JobInfo) -> int:
        """The job's band, remembered until one of its tasks moves: ordering a heap of 100,000 pending jobs
        compares each several times, and counting its allocated tasks each time was a third of the ordering; a
        victim search moves a task per step, and forgetting every job's band at each move counted them again."""
        snap = self._snapshot
        if snap is None:
            return _band(job)
        kept = self._bands.get(job.uid)
        if kept is not None and snap.job_moved.get(job.uid, -1) <= kept[1]:
            return kept[0]
        band = _band(job)
        self._bands[job.uid] = (band, snap.version)
        return band


def _band(job: JobInfo) -> int:
    allocated, minimum = job.active_allocated(), job.min_available()
    if allocated < minimum:
        return BELOW_MIN
    return AT_MIN if allocated == minimum else ABOVE_MIN
