"""What the carried model derives from its entries, derived again where a build's changes reached
(`CarriedModel.reached`): jobs, the ledger rows of nodes, the order of `tasks` and `jobs`, the queues' sums and
the other schedulers' usage, each as a build from nothing gives it."""

from __future__ import annotations

import bisect

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeInfo, charge_nodes, ledger_rule
from kai_scheduler.cluster.pod_info import Placement, PodInfo, QueueVectors
from kai_scheduler.cluster.queue_charge import PrefixSums, QueueCharge, Rows, job_rows
from kai_scheduler.cluster.snapshot.carried import CarriedGroup, CarriedModel, CarriedPod
from kai_scheduler.cluster.snapshot.inputs import SnapshotParams
from kai_scheduler.cluster.snapshot.jobs import (
    backed_off,
    job_holds,
    new_job,
    place_tasks,
    take_podgroup,
    unassigned_problem,
    watches_staleness,
)
from kai_scheduler.cluster.snapshot.queues import access_problem, queue_problem
from kai_scheduler.cluster.snapshot.sorted_keys import SortKey, insert_sorted, key_of, remove_sorted, sort_key_of


def rederive(model: CarriedModel, params: SnapshotParams) -> None:
    """Derive again what the changes reached (and empty `model.reached`): jobs, node rows, the snapshot's dicts
    in their order, the queues' sums, the other schedulers' usage."""
    reached = model.reached
    shared: QueueVectors = {}  # this build's queue vectors, shared by the tasks of equal requests
    for key in sorted(reached.groups, key=sort_key_of):  # in a build from nothing, keys arrive in order
        _rebuild_job(model, key, params, shared)
    reached.groups.clear()
    _recharged_alike(model)
    if reached.nodes:
        _recharge(model, reached.nodes)
        reached.nodes.clear()
    changes = reached.task_changes
    if changes:
        model.task_log.add(
            (uid for pair in changes.values() for uid in pair if uid), limit=2 * len(model.task_keys) + 1024
        )
    if changes and all(before == after for before, after in changes.values()):
        for k in changes:  # the same tasks, new records: each keeps its place
            e = model.by_sort_key[k]
            model.tasks.put(str(e.info.uid), e.info)
    elif changes and not _tasks_appended(model):
        _tasks_among(model)
    changes.clear()
    added = reached.jobs_added
    if added and model.job_keys[-len(added) :] != added:  # not all after the others: put them in their place
        jobs = {(job := model.job_by_group[key_of(k)]).uid: job for k in model.job_keys}
        model.jobs.clear()
        model.jobs.update(jobs)
    added.clear()
    for queue, first in reached.queues.items():  # summed again from the first job that changed on
        keys = model.queue_job_keys.get(queue, [])
        start = bisect.bisect_left(keys, first)
        sums = model.queue_sums.get(queue) or model.queue_sums.setdefault(queue, PrefixSums())
        charge = sums.update(start, (model.job_rows[key_of(k)] for k in keys[start:]))
        if not _same_charge(model.queue_charges.get(queue), charge):  # else the last object stays: see `_same_charge`
            model.queue_charges[queue] = charge
    reached.queues.clear()
    if reached.other_usage or model.other_usage is None:
        usage = model.axis.zeros()
        for k in model.other_scheduler_pods:
            usage += model.by_sort_key[k].record.request
        model.other_usage = usage
        reached.other_usage = False


def _same_charge(last: QueueCharge | None, charge: QueueCharge) -> bool:
    """Whether a queue's sums are bit for bit what they were: a job rebuilt for a change that moves no sum (a
    PodGroup's status written) then leaves the last QueueCharge object in place, and the proportion plugin, which
    tells its inputs unchanged by identity, keeps its last opening."""
    fields = ("allocated", "non_preemptible", "pending")
    return last is not None and all(getattr(last, f).tobytes() == getattr(charge, f).tobytes() for f in fields)


def _tasks_appended(model: CarriedModel) -> bool:
    """Change `tasks` in place when that keeps it in key order: tasks removed, tasks replaced by records of the
    same uid, and new tasks whose keys all come after every other (arrivals named in order, as a trace's
    are). False, changing nothing, for any other change."""
    if not model.tasks:  # no task before (a build from nothing): every task is new, put in key order
        for k in model.task_keys:
            info = model.by_sort_key[k].info
            model.tasks.put(str(info.uid), info)
        return True
    changes = model.reached.task_changes
    added = sorted(k for k, (before, after) in changes.items() if after and before != after)
    if any(before and after and before != after for before, after in changes.values()):
        return False
    if added and model.task_keys[-len(added) :] != added:
        return False
    for k, (before, after) in changes.items():
        if not after:
            model.tasks.remove(before)
        elif before == after:
            model.tasks.put(after, model.by_sort_key[k].info)
    for k in added:
        info = model.by_sort_key[k].info
        model.tasks.put(str(info.uid), info)
    return True


def _tasks_among(model: CarriedModel) -> None:
    """Any other change of `tasks`: the gone taken out, the new and replaced put in, the order made again only
    when a reader walks the tasks (`TaskMap`)."""
    changes = model.reached.task_changes
    for before, after in changes.values():
        if before and before != after:
            model.tasks.remove(before)
    for k, (_, after) in changes.items():
        if after:
            model.tasks.put_among(after, model.by_sort_key[k].info)


def _rebuild_job(model: CarriedModel, key: str, params: SnapshotParams, shared: QueueVectors) -> None:
    """The job of PodGroup `key` from its PodGroup and its pods, as a build from nothing makes it (its tasks' queue
    vectors from `shared`)."""
    g = model.group_by_key.get(key)
    pods = model.group_pods.get(key, {})
    old = model.job_by_group.get(key)
    if old is not None and g is not None and _job_kept(model, g, old, params):
        _refill_job(model, key, g, old, pods, params, shared)
        return
    job = _make_job(model, g, pods, params) if g is not None else None
    sort_key = g.sort_key if g is not None else sort_key_of(key)
    rows = job_rows(job, shared) if job is not None else None
    # A job rebuilt with the rows it had, in its queue, leaves its queue's sums as they were: they are not summed
    # again.
    sums_move = old is None or job is None or old.queue != job.queue or not _same_rows(model.job_rows[key], rows)
    if old is not None:
        _forget(model, key, sort_key, old, keep_place=job is not None and job.uid == old.uid, reach=sums_move)
    if job is None:
        for e in pods.values():
            e.info.job_uid = ""
        if g is not None:
            g.job = None
        return
    assert g is not None
    uid = job.uid
    model.jobs[uid] = job  # a job of the same uid keeps its place in the order
    model.job_by_group[key] = g.job = job
    if old is None or old.uid != uid:
        insert_sorted(model.job_keys, sort_key, appending=model.appending)
        model.reached.jobs_added.append(sort_key)  # at the end of `jobs`: moved into place by `rederive` if need be
    insert_sorted(model.queue_job_keys.setdefault(job.queue, []), sort_key, appending=model.appending)
    if sums_move:
        _queue_reached(model, job.queue, sort_key)
    assert rows is not None
    model.job_rows[key] = rows
    _note_job(model, g, job, pods, params)


def _job_kept(model: CarriedModel, g: CarriedGroup, job: JobInfo, params: SnapshotParams) -> bool:
    """Whether the job of `g` may be kept, taking its PodGroup and pods as they are now (`_refill_job`): its PodGroup
    is not backed off, and names the same job with the same subgroup tree (`jobs.job_holds`)."""
    pg = g.record.podgroup
    return job_holds(job, pg) and (pg is job.podgroup or not backed_off(pg, params))


def _refill_job(
    model: CarriedModel,
    key: str,
    g: CarriedGroup,
    job: JobInfo,
    pods: dict[SortKey, CarriedPod],
    params: SnapshotParams,
    shared: QueueVectors,
) -> None:
    """Keep the job of PodGroup `key` and its subgroup tree, in its place everywhere: it takes its PodGroup (with
    its record's times) and its pods' records as they are now, and its rows and what is noted of it are derived
    again."""
    take_podgroup(job, g.record.podgroup, g.record, model.priorities, model.default_priority)
    g.job = job
    place_tasks(job, _ordered(pods))
    rows = job_rows(job, shared)
    if not _same_rows(model.job_rows[key], rows):
        _queue_reached(model, job.queue, g.sort_key)
    model.job_rows[key] = rows
    model.waiting.discard(job.uid)
    model.stale_watch.discard(job.uid)
    model.queue_problems.pop(g.sort_key, None)
    model.group_problems.pop(g.sort_key, None)
    _note_job(model, g, job, pods, params)


def _note_job(
    model: CarriedModel, g: CarriedGroup, job: JobInfo, pods: dict[SortKey, CarriedPod], params: SnapshotParams
) -> None:
    """Note what the model keeps of a job just (re)derived: its tasks' queue vectors on their pods' records, whether
    it waits or is watched for staleness, its problems."""
    for e in pods.values():
        e.record.queue_cache = e.info.queue_cache
    uid, sort_key, pg = job.uid, g.sort_key, g.record.podgroup
    if job.has_pending():
        model.waiting.add(uid)
    if watches_staleness(job):
        model.stale_watch.add(uid)
    if (missing := queue_problem(pg, model.queues, model.queue_notes, params)) is not None:
        model.queue_problems[sort_key] = (uid, missing)
    elif (refused := access_problem(pg, model.queues, model.namespace_labels, params)) is not None:
        model.queue_problems[sort_key] = (uid, refused)
    if job.unassigned:
        model.group_problems[sort_key] = unassigned_problem(pg, job)


def _forget(
    model: CarriedModel, key: str, sort_key: SortKey, old: JobInfo, *, keep_place: bool, reach: bool = True
) -> None:
    """Take the old job of PodGroup `key` out of every index; `keep_place`: a job of its uid replaces it;
    `reach`: its queue's sums are summed again from it."""
    remove_sorted(model.queue_job_keys[old.queue], sort_key)
    if reach:
        _queue_reached(model, old.queue, sort_key)
    del model.job_rows[key]
    model.waiting.discard(old.uid)
    model.stale_watch.discard(old.uid)
    model.queue_problems.pop(sort_key, None)
    model.group_problems.pop(sort_key, None)
    del model.job_by_group[key]
    if not keep_place:
        del model.jobs[old.uid]
        remove_sorted(model.job_keys, sort_key)


def _same_rows(last: Rows, rows: Rows | None) -> bool:
    """Whether a job's rows are bit for bit what they were: its queue's sums over them come out the same."""
    return rows is not None and all(
        len(a) == len(b) and all(x is y or x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True))
        for a, b in zip(last, rows, strict=True)
    )


def _queue_reached(model: CarriedModel, queue: str, sort_key: SortKey) -> None:
    """Note that the queue's sums change from its job `sort_key` on."""
    first = model.reached.queues.get(queue)
    if first is None or sort_key < first:
        model.reached.queues[queue] = sort_key


def _make_job(
    model: CarriedModel, g: CarriedGroup, pods: dict[SortKey, CarriedPod], params: SnapshotParams
) -> JobInfo | None:
    pg, record = g.record.podgroup, g.record
    if backed_off(pg, params):
        return None
    return new_job(pg, record, model.priorities, model.default_priority, _ordered(pods))


def _ordered(pods: dict[SortKey, CarriedPod]) -> list[PodInfo]:
    """The records of a job's pods in key order."""
    if len(pods) < 2:
        return [e.info for e in pods.values()]
    return [pods[k].info for k in sorted(pods)]


def _recharged_alike(model: CarriedModel) -> None:
    """Keep the rows of the nodes a recomputation would give the same floats (`_row_holds`): their tasks take the
    new records in place. Every other node the changes reached is recomputed (`_recharge`). (Empties
    `reached.unlinked` and `reached.appended`.)"""
    reached = model.reached
    kept: list[NodeInfo] = []
    for name in reached.unlinked.keys() | reached.appended.keys():
        if name in reached.nodes:
            continue
        if _row_holds(model, name):
            node = model.node_by_name[name]
            now = model.node_pods[name]
            for k in (*reached.unlinked.get(name, ()), *reached.appended.get(name, ())):
                info = now[k].info
                node.tasks[str(info.uid)] = info
            kept.append(node)
        else:
            reached.nodes.add(name)
    reached.unlinked.clear()
    reached.appended.clear()
    if kept:
        model.arrays.stamp([n.row for n in kept])  # their tasks changed: what a node's stamp keys is new


def _row_holds(model: CarriedModel, name: str) -> bool:
    """Whether the node's row is what a recomputation from its pods in key order gives: its row summed them in
    key order when last recomputed, then

    - each pod taken out (`reached.unlinked`) came back charged alike (a pod bound by the binder, its
      BindRequest's status written): the same additions in the same places;
    - the tasks the last session added (`reached.appended`: pending tasks allocated there, added after the
      others) came back charged as the session charged them, and their keys come after every other pod's on
      the node, in the order added: a recomputation adds them last, in that order, as the session did."""
    now = model.node_pods.get(name, {})
    unlinked = model.reached.unlinked.get(name, {})
    if not all(_charged_alike(e.info, e.placement, now.get(k)) for k, e in unlinked.items()):
        return False
    appended = model.reached.appended.get(name, {})
    if not appended:
        return True
    keys = list(appended)
    if sorted(now)[-len(keys) :] != keys or any(k in unlinked for k in keys):
        return False  # not the node's last pods in the order added (or a pod of it taken out)
    return all(_charged_alike(task, placement, now.get(k)) for k, (task, placement) in appended.items())


def _charged_alike(task: PodInfo, placement: Placement, after: CarriedPod | None) -> bool:
    """Whether `after` (the pod's entry on the node now) charges the node's row and tasks as `task` in
    `placement` did: the same task uid, request and ledger rule, and nothing beyond the ledgers (GPU groups, MIG
    instances)."""
    if after is None:
        return False
    a = after.placement
    return (
        str(task.uid) == str(after.info.uid)
        and ledger_rule(placement) == ledger_rule(a)
        and not (placement.gpu_groups or a.gpu_groups or task.gpu.mig or after.info.gpu.mig)
        and (task.request is after.info.request or task.request.tobytes() == after.info.request.tobytes())
    )


def _recharge(model: CarriedModel, names: set[str]) -> None:
    """Recompute the ledger rows, tasks and GPU groups of these nodes from their pods, in pod order."""
    a, pristine = model.arrays, model.pool_nodes.arrays
    assert pristine is not None
    nodes = [model.node_by_name[n] for n in sorted(names) if n in model.node_by_name]
    rows = [n.row for n in nodes]
    for ledger in ("idle", "used", "releasing", "shared_free"):
        getattr(a, ledger)[rows] = getattr(pristine, ledger)[rows]
    charged: list[tuple[NodeInfo, PodInfo, Placement]] = []
    for node in nodes:
        node.clear_tasks()
        pods = model.node_pods.get(node.name, {})
        charged += [(node, (e := pods[k]).info, e.placement) for k in sorted(pods)]
    charge_nodes(a, charged)
    a.refresh()
    a.stamp(rows)
