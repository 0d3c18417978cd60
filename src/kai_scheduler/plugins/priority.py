"""priority: jobs of higher PodGroup priority first (§3.4, §4; KAI `plugins/priority/priority.go`).

The first JOB_ORDER plugin in KAI's default tier, so priority decides before elasticity, age and UID.
"""

from __future__ import annotations

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


class Priority(PluginBase):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(points.JOB_ORDER, self.job_order)
        ssn.add(points.JOB_ORDER_KEY, self.job_order_key)

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Negative when `left` goes first: the higher priority; 0 leaves the tie to the next plugin."""
        return (left.priority < right.priority) - (left.priority > right.priority)

    def job_order_key(self, job: JobInfo) -> int:
        """JOB_ORDER_KEY: ascending as `job_order` orders (the higher priority first)."""
        return -job.priority
