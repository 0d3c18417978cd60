"""elastic: jobs short of their gang minimum first (§3.4, §7.1; KAI `plugins/elastic/elastic.go`).

Jobs are ranked by how far they are from their minimum: below it, exactly at it, above it. A job below its
minimum can still start; one exactly at it is complete and asks for its first elastic pod, which beats a job
that already holds extras. Counts are active-allocated pods, so placements made this session count.
"""

from __future__ import annotations

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase

BELOW_MIN, AT_MIN, ABOVE_MIN = 0, 1, 2


class Elastic(PluginBase):
    name = "elastic"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(points.JOB_ORDER, self.job_order)

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Negative when `left` is further from satisfied; 0 when both are in the same band."""
        left_band, right_band = _band(left), _band(right)
        return (left_band > right_band) - (left_band < right_band)


def _band(job: JobInfo) -> int:
    allocated, minimum = job.active_allocated(), job.min_available()
    if allocated < minimum:
        return BELOW_MIN
    return AT_MIN if allocated == minimum else ABOVE_MIN
