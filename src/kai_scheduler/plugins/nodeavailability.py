"""nodeavailability: prefer nodes where the task can start now (§4; KAI `plugins/nodeavailability/`).

+AVAILABILITY on nodes whose effective idle covers the task's request in every resource, so a task is
allocated on free capacity rather than pipelined behind pods that are still releasing.

A shared-GPU task's GPU entry is 0 (its devices are charged through GPU groups), so for it only the non-GPU
resources are compared.
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.node_info import NodeArrays
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.base import PluginBase


class NodeAvailability(PluginBase):
    name = "nodeavailability"
    _arrays: NodeArrays

    def on_session_open(self, ssn: Session) -> None:
        self._arrays = ssn.snapshot.arrays
        ssn.add(points.NODE_ORDER, self.node_order)

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores:
        """Only requested resources are compared: a zero request fits even an overcommitted resource."""
        # free_now is never below zero, so a zero request fits even an overcommitted resource.
        fits = (self._arrays.free_now >= task.request - tolerance.RESOURCE).all(axis=1)
        return np.where(fits, scores.AVAILABILITY, 0.0)
