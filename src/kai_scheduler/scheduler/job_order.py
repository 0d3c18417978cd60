"""The `reflectjoborder` plugin's job order (KAI `plugins/reflectjoborder/reflect_job_order.go`): what
`/get-job-order` answers.

`reflect(ssn)` drains, at session open, the order allocate would take jobs in: the pending jobs that are ready
(allocate's candidates), through the queue tree, at most `queueDepthPerAction.allocate` jobs per queue. Each job
is `{"id": PodGroup name, "priority": its priority}` (KAI's PodGroup ID is the PodGroup's name), listed once in
`global_order` and once under its queue in `queue_order`. `encode` writes it as KAI's Go encoder does: two-space
indent, map keys sorted, a final newline.
"""

from __future__ import annotations

import json
from typing import Any

from kai_scheduler.actions import allocate
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.framework import config as configs
from kai_scheduler.framework.session import Session

PLUGIN = "reflectjoborder"
PATH = "/get-job-order"

JobOrder = dict[str, Any]  # {"global_order": [...], "queue_order": {queue: [...]}}


def enabled(config: configs.SchedulerConfig) -> bool:
    """Whether the configuration names the `reflectjoborder` plugin (which serves `/get-job-order`)."""
    return config.plugin(PLUGIN) is not None


def reflect(ssn: Session) -> JobOrder:
    """The allocate order of this session's pending, ready jobs, as KAI's plugin reports it."""
    depth = ssn.config.queue_depth_per_action.get(allocate.NAME)
    jobs = JobOrderByQueues(ssn, allocate.candidates(ssn), depth=depth)
    global_order: list[dict[str, Any]] = []
    queue_order: dict[str, list[dict[str, Any]]] = {}
    while (job := jobs.pop()) is not None:
        entry = {"id": job.podgroup.name, "priority": job.priority}
        global_order.append(entry)
        queue_order.setdefault(job.queue, []).append(entry)
    return {"global_order": global_order, "queue_order": queue_order}


def encode(order: JobOrder) -> bytes:
    return (json.dumps(order, indent=2, sort_keys=True) + "\n").encode()
