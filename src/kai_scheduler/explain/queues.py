"""The job's queues (deserved, fair share, allocated) and its place in allocate's order, read from an open
session: the same proportion shares and the same queue-tree order (`actions.common.job_order`) a cycle uses.
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.actions import allocate
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY, Vector
from kai_scheduler.explain import model
from kai_scheduler.framework.session import Session

_MB = 1_000_000.0
_NONE = np.zeros(3)


def amounts(vector: Vector) -> model.Amounts:
    """A queue-axis vector (cpu millicores, memory bytes, gpus) in the Queue CRD's units."""
    memory = float(vector[MEMORY])
    return model.Amounts(
        gpu=round(float(vector[GPU]), 4),
        cpu=round(float(vector[CPU]), 3),
        memory=memory if memory < 0 else round(memory / _MB, 3),
    )


def chain(ssn: Session, job: JobInfo) -> tuple[model.QueueLine, ...]:
    """The job's queue and its ancestors, leaf first; empty when the queue is unknown to the session."""
    lines = []
    name = job.queue
    queues = ssn.snapshot.queues
    while name and name in queues:
        info = queues[name]
        share = ssn.queue_share(name)
        if share is None:  # no proportion plugin: the quotas as written, nothing divided
            lines.append(
                model.QueueLine(
                    name,
                    info.parent,
                    info.priority,
                    amounts(info.deserved),
                    amounts(_NONE),
                    amounts(_NONE),
                    amounts(_NONE),
                    amounts(info.limit),
                )
            )
        else:
            lines.append(
                model.QueueLine(
                    name,
                    info.parent,
                    info.priority,
                    amounts(share.deserved),
                    amounts(share.fair_share),
                    amounts(share.allocated),
                    amounts(share.request),
                    amounts(share.limit),
                )
            )
        name = info.parent
    return tuple(lines)


def order(ssn: Session, job: JobInfo, *, shown: int) -> model.QueueOrder:
    """Pop allocate's candidates in order until `job`; those popped before it are ahead of it.

    Nothing is allocated between pops, so this is the order at the start of a cycle: the queue order changes
    as jobs ahead are placed (their queues' allocation grows)."""
    if job.uid in ssn.snapshot.job_problems:
        return model.QueueOrder(None, "the scheduler cannot consider the job (see problems)", 0, (), ())
    if not job.has_pending():
        return model.QueueOrder(None, "no pending pods", 0, (), ())
    if not job.is_ready():
        return model.QueueOrder(None, "fewer live pods than the gang's minimum: allocate waits for them", 0, (), ())
    candidates = allocate.candidates(ssn)
    jobs = JobOrderByQueues(ssn, candidates, depth=ssn.config.queue_depth_per_action.get(allocate.NAME))
    ahead: list[JobInfo] = []
    found = False
    while (popped := jobs.pop()) is not None:
        if popped.uid == job.uid:
            found = True
            break
        ahead.append(popped)
    if not found:
        why = "its queue is not a leaf queue or its queue's depth limit (queueDepthPerAction) leaves it out"
        return model.QueueOrder(None, why, len(ahead), (), ())
    per_queue: dict[str, int] = {}
    for other in ahead:
        per_queue[other.queue] = per_queue.get(other.queue, 0) + 1
    return model.QueueOrder(
        position=len(ahead) + 1,
        reason="",
        ahead_count=len(ahead),
        ahead=tuple(_ahead(ssn, other) for other in ahead[:shown]),
        queues_ahead=tuple(per_queue.items()),
    )


def _ahead(ssn: Session, job: JobInfo) -> model.AheadJob:
    tasks = ssn.tasks_to_allocate(job)
    return model.AheadJob(
        job=job.key,
        queue=job.queue,
        priority=job.priority,
        pods=len(tasks),
        gpus=round(sum(t.gpus_accepted for t in tasks), 4),
    )
