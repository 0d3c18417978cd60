"""What a PodGroup yields in a snapshot: its record (the timestamps its annotations carry, carried across builds
while the PodGroup object is the same), its job with priority, preemptibility and the subgroup tree (§1.2), and
the job's own problems (pods in no subgroup, a scheduling backoff)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kai_scheduler.api import constants
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.cluster.job_info import JobInfo, build_tree
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.snapshot.inputs import Problem, SnapshotParams


@dataclass(slots=True, eq=False)
class GroupRecord:
    """What one parsed PodGroup yields alone: the times its annotations carry."""

    podgroup: PodGroup
    last_start: float | None
    last_eviction: float | None
    stale_since: float | None


def group_record(pg: PodGroup, records: dict[str, GroupRecord]) -> GroupRecord:
    """The PodGroup's record: the one in `records` while the PodGroup is the same object, else a new one."""
    record = records.get(pg.meta.key)
    if record is None or record.podgroup is not pg:
        annotations = pg.meta.annotations
        record = GroupRecord(
            podgroup=pg,
            last_start=_annotation_time(annotations.get(constants.ANNOTATION_LAST_START_TIMESTAMP)),
            last_eviction=_annotation_time(annotations.get(constants.ANNOTATION_LAST_EVICTION_TIMESTAMP)),
            stale_since=_annotation_time(annotations.get(constants.ANNOTATION_STALE_TIMESTAMP)),
        )
    return record


def priority_values(classes: list[PriorityClass]) -> dict[str, int]:
    """Each PriorityClass's value by name."""
    return {pc.meta.name: pc.value for pc in classes}


def global_default_priority(classes: list[PriorityClass]) -> int:
    """A PodGroup without a known class gets the globalDefault class's value, else 50 (§1.2)."""
    defaults = sorted((pc.meta.name, pc.value) for pc in classes if pc.global_default)
    return defaults[0][1] if defaults else constants.DEFAULT_PODGROUP_PRIORITY


def new_job(
    pg: PodGroup,
    record: GroupRecord,
    priorities: dict[str, int],
    default_priority: int,
    tasks: Iterable[PodInfo],
) -> JobInfo:
    """The job of a PodGroup with its subgroup tree (`take_podgroup`), its tasks placed on their leaves
    (`place_tasks`)."""
    root, leaves = build_tree(pg)
    job = JobInfo(
        uid=_job_uid(pg),
        name=pg.name,
        namespace=pg.meta.namespace,
        podgroup=pg,
        queue=pg.queue,
        priority=0,
        preemptible=False,
        creation=0.0,
        tasks=[],
        root=root,
        pod_sets=leaves,
    )
    take_podgroup(job, pg, record, priorities, default_priority)
    place_tasks(job, tasks)
    return job


def take_podgroup(
    job: JobInfo, pg: PodGroup, record: GroupRecord, priorities: dict[str, int], default_priority: int
) -> None:
    """Set what the job takes from its PodGroup and record beyond its identity, queue and tree: its priority (the
    class's value; a PodGroup without a known class gets `default_priority`), preemptibility (the PodGroup's, else
    by priority), creation time and the record's times."""
    job.podgroup = pg
    job.priority = priorities.get(pg.priority_class_name, default_priority)
    job.preemptible = (
        pg.preemptibility == constants.PREEMPTIBLE
        if pg.preemptibility
        else job.priority < constants.NON_PREEMPTIBLE_PRIORITY_THRESHOLD
    )
    job.creation = pg.meta.creation_timestamp or 0.0
    job.last_start, job.last_eviction, job.stale_since = record.last_start, record.last_eviction, record.stale_since


def place_tasks(job: JobInfo, tasks: Iterable[PodInfo]) -> None:
    """Put `tasks` in the job, in the order given, each on the leaf its subgroup names (a task naming a subgroup the
    PodGroup does not declare goes to `unassigned`), in place of the tasks it held."""
    job.tasks.clear()
    job.unassigned.clear()
    for pod_set in job.pod_sets.values():
        pod_set.tasks.clear()
    default = "default" if not job.podgroup.sub_groups else ""
    for task in tasks:
        task.job_uid = job.uid
        leaf = job.pod_sets.get(task.subgroup or default)
        if leaf is None:
            job.unassigned.append(task)
            continue
        leaf.tasks.append(task)
        job.tasks.append(task)


def job_holds(job: JobInfo, pg: PodGroup) -> bool:
    """Whether `job` may take `pg` in place of its PodGroup (`take_podgroup`) and stay the job `new_job` makes of
    it: the same uid, name, namespace and queue (the model's indexes of the job), and the same fields its subgroup
    tree is built from."""
    last = job.podgroup
    return pg is last or (
        _job_uid(pg) == job.uid
        and pg.name == job.name
        and pg.meta.namespace == job.namespace
        and pg.queue == job.queue
        and (pg.min_member, pg.min_sub_group, pg.sub_groups) == (last.min_member, last.min_sub_group, last.sub_groups)
    )


def _job_uid(pg: PodGroup) -> str:
    return pg.meta.uid or pg.meta.key


def unassigned_problem(pg: PodGroup, job: JobInfo) -> Problem:
    """The problem of a job whose pods are in no subgroup: pods naming subgroups the PodGroup does not declare, and
    pods naming none where the PodGroup has subgroups (their pod grouper did not label them, or the user's pods
    of a hand-written PodGroup lack the label); neither kind is scheduled."""
    named = sorted({t.subgroup for t in job.unassigned if t.subgroup})
    unnamed = sorted(t.name for t in job.unassigned if not t.subgroup)
    parts = []
    if named:
        parts.append(f"pods name subgroups that the PodGroup does not declare: {', '.join(named)}")
    if unnamed:
        parts.append(
            f"pods without a {constants.LABEL_SUBGROUP_NAME} label in a PodGroup with subgroups: {', '.join(unnamed)}"
        )
    return Problem("PodGroup", pg.meta.key, "SubGroupDoesNotExist", "; ".join(parts))


def watches_staleness(job: JobInfo) -> bool:
    """Stale now, or its PodGroup carries a stale timestamp (which may need clearing)."""
    return job.is_stale() or constants.ANNOTATION_STALE_TIMESTAMP in job.podgroup.meta.annotations


def backed_off(pg: PodGroup, params: SnapshotParams) -> bool:
    """Whether the PodGroup waits out a scheduling backoff in this pool (it is no job of this snapshot)."""
    return pg.scheduling_backoff == 1 and any(c.of_pool(params.partition_label_value) for c in pg.scheduling_conditions)


def _annotation_time(raw: str | None) -> float | None:
    if not raw:
        return None
    from kai_scheduler.api.fields import parse_time

    try:
        return parse_time(raw)
    except ValueError:
        return None
