"""Task order inside a PodSet (§3.4): taskorder, kubeflow and ray, three TASK_ORDER plugins.

KAI `plugins/taskorder/taskorder.go`, `plugins/kubeflow/kubeflow.go`, `plugins/ray/ray.go`. Each answers only
its own rule and returns 0 otherwise, so the configured order decides which rule wins; the session ends with
creation time, then name. Evictions walk the reverse order, so the first task placed is the last one lost.
"""

from __future__ import annotations

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


def _first_if(left: bool, right: bool) -> int:
    """Negative when only `left` has the property, positive when only `right` has it."""
    return int(right) - int(left)


class TaskOrder(PluginBase):
    """The `kai.scheduler/task-priority` label: present beats absent, higher value first."""

    name = "taskorder"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(points.TASK_ORDER, self.task_order)

    def task_order(self, left: PodInfo, right: PodInfo) -> int:
        lp, rp = left.task_priority, right.task_priority
        if lp is None or rp is None:
            return _first_if(lp is not None, rp is not None)
        return (lp < rp) - (lp > rp)


class Kubeflow(PluginBase):
    """Kubeflow master or launcher pods (`training.kubeflow.org/job-role`) before workers."""

    name = "kubeflow"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(points.TASK_ORDER, self.task_order)

    def task_order(self, left: PodInfo, right: PodInfo) -> int:
        return _first_if(left.kubeflow_role_first, right.kubeflow_role_first)


class Ray(PluginBase):
    """The Ray head pod (`ray.io/node-type=head`) before workers."""

    name = "ray"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(points.TASK_ORDER, self.task_order)

    def task_order(self, left: PodInfo, right: PodInfo) -> int:
        return _first_if(left.ray_head, right.ray_head)
