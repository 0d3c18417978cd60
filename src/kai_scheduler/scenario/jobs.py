"""Build the jobs of a scenario: one PodGroup per job, its Pods, the BindRequests of Binding tasks.

Naming: `count: N` makes jobs <job>-0 … <job>-(N-1); `replicas: R` makes tasks <job>-0 … <job>-(R-1) from
`template`; a listed task keeps its name (unnamed: <job>-<index>), prefixed with the job's name when the job
has a `count` so the copies do not clash.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kai_scheduler.api import constants
from kai_scheduler.api.fields import format_time
from kai_scheduler.scenario import dra, meta
from kai_scheduler.scenario.cluster import Cluster
from kai_scheduler.scenario.entry import MAX_JOB_AGE_MINUTES, MAX_OBJECTS, Entry
from kai_scheduler.scenario.model import JSON, JobMeta
from kai_scheduler.scenario.tasks import TASK_FIELDS, TEMPLATE_FIELDS, JobFacts, TaskSpec, read_task, render

JOB_FIELDS = (
    "name",
    "count",
    "namespace",
    "queue",
    "priority",
    "priorityClassName",
    "preemptibility",
    "createdAt",
    "minMember",
    "subGroups",
    "minSubGroup",
    "topologyConstraint",
    "preemptionDelay",
    "stalenessGracePeriod",
    "staleSince",
    "lastStartedAgo",
    "deleted",
    "owner",
    "submitAt",
    "duration",
    "replicas",
    "template",
    "tasks",
    "labels",
)
SUB_GROUP_FIELDS = ("name", "minMember", "minSubGroup", "parent", "topologyConstraint")
CONSTRAINT_FIELDS = ("topology", "requiredTopologyLevel", "preferredTopologyLevel")
OWNER_FIELDS = ("kind", "apiVersion")
PREEMPTIBILITY = (constants.PREEMPTIBLE, constants.NON_PREEMPTIBLE)
DEFAULT_NAMESPACE = "default"


@dataclass(slots=True)
class Jobs:
    """Everything the jobs produce, each list in file order."""

    podgroups: list[meta.Built] = field(default_factory=list)
    pods: list[meta.Built] = field(default_factory=list)
    bindrequests: list[meta.Built] = field(default_factory=list)
    dra: list[meta.Built] = field(default_factory=list)  # the tasks' ResourceClaimTemplates and placed claims
    metas: list[JobMeta] = field(default_factory=list)


def build(top: Entry, cluster: Cluster, now: float) -> Jobs:
    """Every job of the scenario; names are unique per namespace for jobs and for pods."""
    out = Jobs()
    job_keys: set[str] = set()
    pod_keys: dict[str, str] = {}
    for e in top.named_items("jobs", "job", unique=False):
        e.check_keys(JOB_FIELDS)
        count = e.integer("count", minimum=0, maximum=MAX_OBJECTS)
        names = [e.name] if count is None else [f"{e.name}-{i}" for i in range(count)]
        namespace = e.text("namespace", DEFAULT_NAMESPACE)
        spec, facts = _podgroup_spec(e, cluster), _facts(e, cluster, e.name, namespace, now)
        tasks = _tasks(e, facts.sub_groups, cluster)
        timing = _timing(e)
        for name in names:
            if f"{namespace}/{name}" in job_keys:
                raise e.error("name", f"duplicate job {namespace}/{name}")
            job_keys.add(f"{namespace}/{name}")
            job = _renamed(facts, name)
            pod_names = [_pod_name(t, name, count is not None) for t in tasks]
            out.podgroups.append(meta.Built(_podgroup(e, job, spec, len(tasks), now), e.where.at(e.data)))
            for task, pod_name in zip(tasks, pod_names, strict=True):
                _add_pod(out, task, job, pod_name, pod_keys, now, cluster.dra)
            owner_kind = job.owner["kind"] if job.owner else ""
            out.metas.append(JobMeta(name, namespace, job.queue, *timing, owner_kind, tuple(pod_names)))
    return out


def _add_pod(
    out: Jobs,
    task: TaskSpec,
    job: JobFacts,
    pod_name: str,
    pod_keys: dict[str, str],
    now: float,
    devices: dra.DraFacts,
) -> None:
    key = f"{job.namespace}/{pod_name}"
    if key in pod_keys:
        raise task.entry.error("name", f"duplicate pod {key} (also in job {pod_keys[key]})")
    pod_keys[key] = job.name
    pod, request = render(task, job, pod_name, now)
    where = task.entry.where.at(task.entry.data)
    if task.claims:
        binding = request is not None
        placed = pod["status"]["phase"] in ("Pending", "Running")
        node = task.node if binding else pod["spec"].get("nodeName", "") if placed else ""
        made, allocations = dra.pod_objects(pod, task.claims, node, devices, task.entry, binding=binding)
        out.dra.extend(meta.Built(obj, where) for obj in made)
        if request is not None and allocations:
            request["spec"]["resourceClaimAllocations"] = allocations
    out.pods.append(meta.Built(pod, where))
    if request is not None:
        out.bindrequests.append(meta.Built(request, where))


def _renamed(facts: JobFacts, name: str) -> JobFacts:
    """The facts of copy `name` of a counted job: its own name, and an owner of that name."""
    if facts.name == name:
        return facts
    owner = (
        None
        if facts.owner is None
        else meta.owner_reference(facts.owner["kind"], facts.owner["apiVersion"], facts.namespace, name)
    )
    return dataclasses.replace(facts, name=name, owner=owner)


def _pod_name(task: TaskSpec, job_name: str, counted: bool) -> str:
    if not task.name:
        return f"{job_name}-{task.index}"
    return f"{job_name}-{task.name}" if counted else task.name


def _facts(e: Entry, cluster: Cluster, name: str, namespace: str, now: float) -> JobFacts:
    """The job's queue (an existing leaf), priority class, creation time, owner and subgroup names."""
    queue = e.text("queue", constants.DEFAULT_QUEUE_NAME)
    if queue not in cluster.queue_children:
        known = ", ".join(cluster.queue_children) or "none declared"
        raise e.error("queue", f"no queue named {queue!r}; queues: {known}")
    children = cluster.queue_children[queue]
    if children:
        raise e.error(
            "queue", f"queue {queue!r} is not a leaf (children: {', '.join(children)}); jobs go to leaf queues"
        )
    priority_class = _priority_class(e, cluster)
    owner_entry = e.child("owner", OWNER_FIELDS)
    owner = None
    if owner_entry is not None:
        owner = meta.owner_reference(owner_entry.required_text("kind"), owner_entry.text("apiVersion"), namespace, name)
    created = now - 60.0 * (e.number("createdAt", 0.0, minimum=0, maximum=MAX_JOB_AGE_MINUTES) or 0.0)
    sub_groups = frozenset(sg.required_text("name") for sg in e.items("subGroups"))
    return JobFacts(
        name,
        namespace,
        queue,
        priority_class,
        cluster.class_values.get(priority_class),
        created,
        e.flag("deleted"),
        owner,
        sub_groups,
    )


def _priority_class(e: Entry, cluster: Cluster) -> str:
    """`priorityClassName` (must exist), or the class for `priority: N` (found or synthesised), or none."""
    if e.has("priority") and e.has("priorityClassName"):
        raise e.error("priority", "give priority or priorityClassName, not both")
    name = e.text("priorityClassName")
    if name and name not in cluster.class_values:
        known = ", ".join(cluster.class_values) or "none declared"
        raise e.error("priorityClassName", f"no priority class named {name!r}; classes: {known}")
    value = e.integer("priority")
    if value is not None:
        return cluster.class_for(value, e.where.at(e.data, "priority"))
    return name


def _tasks(e: Entry, sub_groups: frozenset[str], cluster: Cluster) -> list[TaskSpec]:
    """The listed tasks, or `replicas` copies of `template` (names filled in later)."""
    nodes = cluster.node_gpu_memory
    if e.has("tasks"):
        if e.has("replicas") or e.has("template"):
            raise e.error(
                "replicas" if e.has("replicas") else "template", "give tasks, or replicas with a template, not both"
            )
        specs = []
        for i, t in enumerate(e.items("tasks")):
            t.check_keys(TASK_FIELDS)
            specs.append(read_task(t, t.text("name"), i, sub_groups, nodes))
        return specs
    template = e.child("template", TEMPLATE_FIELDS) or Entry(e.where, {}, e.kind, e.name, "template")
    replicas = e.integer("replicas", 1 if e.has("template") else 0, minimum=0, maximum=MAX_OBJECTS) or 0
    spec = read_task(template, "", 0, sub_groups, nodes)
    return [dataclasses.replace(spec, index=i) for i in range(replicas)]


def _timing(e: Entry) -> tuple[float, float | None]:
    """The simulator's arrival (`submitAt`, default 0) and run time (`duration`, default: no end)."""
    submit = e.duration("submitAt")
    run = e.duration("duration")
    return (submit[0] if submit else 0.0), (run[0] if run else None)


def _podgroup_spec(e: Entry, cluster: Cluster) -> JSON:
    """The PodGroup spec fields written on the job (queue, minMember and priority are added per job)."""
    spec: JSON = {}
    min_sub_group = e.integer("minSubGroup", minimum=0)
    if min_sub_group is not None:
        spec["minSubGroup"] = min_sub_group
    sub_groups = [_sub_group(sg, cluster) for sg in e.items("subGroups")]
    if sub_groups:
        spec["subGroups"] = sub_groups
    constraint = _constraint(e, "topologyConstraint", cluster)
    if constraint:
        spec["topologyConstraint"] = constraint
    preemptibility = e.text("preemptibility")
    if preemptibility and preemptibility not in PREEMPTIBILITY:
        want = ", ".join(PREEMPTIBILITY)
        raise e.error("preemptibility", f"unknown value {preemptibility!r}; want one of {want}")
    if preemptibility:
        spec["preemptibility"] = preemptibility
    delay = e.duration("preemptionDelay")
    if delay is not None:
        spec["preemptionDelay"] = delay[1]
    grace = e.duration("stalenessGracePeriod", allow_negative=True)
    if grace is not None:
        spec["stalenessGracePeriod"] = grace[1]
    return spec


def _sub_group(sg: Entry, cluster: Cluster) -> JSON:
    sg.check_keys(SUB_GROUP_FIELDS)
    out: JSON = {"name": sg.required_text("name")}
    for key in ("minMember", "minSubGroup"):
        value = sg.integer(key, minimum=0)
        if value is not None:
            out[key] = value
    if sg.has("parent"):
        out["parent"] = sg.required_text("parent")
    constraint = _constraint(sg, "topologyConstraint", cluster)
    if constraint:
        out["topologyConstraint"] = constraint
    return out


def _constraint(e: Entry, key: str, cluster: Cluster) -> JSON:
    """A topology constraint naming a declared topology and levels it has (by node label or alias)."""
    c = e.child(key, CONSTRAINT_FIELDS)
    if c is None:
        return {}
    topology = c.required_text("topology")
    if topology not in cluster.topology_levels:
        known = ", ".join(cluster.topology_levels) or "none declared"
        raise c.error("topology", f"no topology named {topology!r}; topologies: {known}")
    out: JSON = {"topology": topology}
    for level_key in ("requiredTopologyLevel", "preferredTopologyLevel"):
        level = c.text(level_key)
        if level and level not in cluster.topology_levels[topology]:
            levels = ", ".join(sorted(cluster.topology_levels[topology]))
            raise c.error(level_key, f"topology {topology!r} has no level {level!r}; levels: {levels}")
        if level:
            out[level_key] = level
    return out


def _podgroup(e: Entry, job: JobFacts, written: JSON, n_tasks: int, now: float) -> JSON:
    """The job's PodGroup; minMember defaults to the task count unless the job gangs by subgroups."""
    spec: JSON = {"queue": job.queue}
    min_member = e.integer("minMember", minimum=0)
    if min_member is None and "minSubGroup" not in written and "subGroups" not in written:
        min_member = n_tasks
    if min_member is not None:
        spec["minMember"] = min_member
    if job.priority_class:
        spec["priorityClassName"] = job.priority_class
    spec.update(written)
    annotations = {}
    for key, annotation in (
        ("lastStartedAgo", constants.ANNOTATION_LAST_START_TIMESTAMP),
        ("staleSince", constants.ANNOTATION_STALE_TIMESTAMP),
    ):
        ago = e.duration(key)
        if ago is not None:
            annotations[annotation] = format_time(now - ago[0])
    metadata = meta.metadata(
        "PodGroup",
        job.name,
        namespace=job.namespace,
        created=job.created,
        annotations=annotations,
        labels=e.text_map("labels") or None,
    )
    if job.deleted:  # the workload is gone: its PodGroup is being garbage-collected with its pods
        metadata["deletionTimestamp"] = format_time(now)
    return {
        "apiVersion": constants.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }
