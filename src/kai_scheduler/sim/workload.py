"""Workload owners: what a Job, PyTorchJob or Deployment controller does with a job's pods in a replay.

A scenario's jobs are held back until their `submitAt`: `split` takes their PodGroup, Pods and BindRequests
out of the scenario's objects, and `Workload.arrive` creates them in the store at the arrival instant (with
that instant as their creation time, so the scheduler sees them in arrival order). A job with an owner kind is
created as a user would submit it: the owner object and its pods, without a PodGroup, which the real
podgrouper makes from the owner (`sim.owners`; a job whose PodGroup the owner kind cannot ask for keeps its
PodGroup, as an external one). From then on the owner:

- labels its pods as the real controller would (Kubeflow `job-role`/`replica-index`, Ray `node-type`, LWS
  `worker-index`), which the scheduler's task order reads;
- recreates a pod that vanished (evicted, its node gone) Pending under the same name, as long as the job
  lives; a bare `Pod` has no controller, so its job is LOST instead;
- finishes the job `duration` after all its pods run: pods Succeeded, then deleted with the PodGroup (a Job
  with `ttlSecondsAfterFinished: 0`). An interrupted run starts over: nothing is checkpointed.

Job states: WAITING (not submitted) → PENDING (submitted, not all pods running) ⇄ RUNNING (all running;
back to PENDING when one stops) → DONE (finished) or LOST (a bare pod was evicted).
The timing of these moves is the replay's (`sim.replay`); this module only writes what an owner writes.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson

from kai_scheduler.api import constants
from kai_scheduler.scenario.model import JobMeta
from kai_scheduler.sim import owners
from kai_scheduler.sim.kubelet import pending_copy
from kai_scheduler.store.interface import JSON, ClusterStore, NotFound, resource_for

BARE_POD = "Pod"
KUBEFLOW = {"PyTorchJob": "master", "TFJob": "chief", "XGBoostJob": "master", "JAXJob": "worker", "MPIJob": "launcher"}
RAY = ("RayJob", "RayCluster", "RayService")
_KIND_ORDER = {"PodGroup": 0, "Pod": 1, "BindRequest": 2}


class Phase(enum.Enum):
    WAITING = "waiting"
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    LOST = "lost"


@dataclass(slots=True, eq=False)
class Job:
    """One scenario job and where it is in its life; times are virtual seconds (None = not yet)."""

    meta: JobMeta
    objects: list[JSON]  # owners or PodGroup, Pods, BindRequests, in creation order
    templates: dict[str, JSON]  # pod key → the pod as its owner would create it again
    min_member: int
    phase: Phase = Phase.WAITING
    running: set[str] = field(default_factory=set)
    generation: int = 0  # bumped whenever a run is interrupted
    submitted: float | None = None
    first_pod_start: float | None = None
    started: float | None = None  # the first time all pods ran
    finished: float | None = None
    runs: int = 0  # how many times all its pods ran (restarts + 1)
    interruptions: int = 0
    owners: list[JSON] = field(default_factory=list)  # owner objects (the podgrouper makes the PodGroup)

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"

    @property
    def is_gang(self) -> bool:
        return self.min_member > 1

    @property
    def is_live(self) -> bool:
        return self.phase in (Phase.PENDING, Phase.RUNNING)

    @property
    def recreates(self) -> bool:
        return self.meta.owner_kind != BARE_POD


def split(objects: Iterable[JSON], jobs: Iterable[JobMeta]) -> tuple[list[JSON], list[Job]]:
    """The cluster's own objects (created at the start), and each job with the objects it owns.

    Works on a copy: the owners rewrite their pods (labels, no PodGroup name), and a scenario is replayed
    more than once (`--compare`), each replay from the objects as loaded."""
    objects = orjson.loads(orjson.dumps(list(objects), option=orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z))
    owned: dict[str, list[JSON]] = {f"{m.namespace}/{m.name}": [] for m in jobs}
    pod_job: dict[str, str] = {}
    cluster: list[JSON] = []
    pods: list[JSON] = []
    brs: list[JSON] = []
    for obj in objects:
        kind = obj.get("kind")
        meta = obj.get("metadata", {})
        ns = meta.get("namespace", "")
        if kind == "PodGroup" and f"{ns}/{meta.get('name')}" in owned:
            owned[f"{ns}/{meta['name']}"].append(obj)
        elif kind == "Pod":
            pods.append(obj)
        elif kind == "BindRequest":
            brs.append(obj)
        else:
            cluster.append(obj)
    for pod in pods:
        meta = pod["metadata"]
        job_key = f"{meta.get('namespace', '')}/{meta.get('annotations', {}).get(constants.ANNOTATION_POD_GROUP_NAME)}"
        if job_key in owned:
            owned[job_key].append(pod)
            pod_job[f"{meta.get('namespace', '')}/{meta['name']}"] = job_key
        else:
            cluster.append(pod)  # a pod of no job: there from the start, no owner
    for br in brs:
        pod_key = f"{br['metadata'].get('namespace', '')}/{br.get('spec', {}).get('podName', '')}"
        if pod_key in pod_job:
            owned[pod_job[pod_key]].append(br)
        else:
            cluster.append(br)
    out = []
    for m in jobs:
        objs = sorted(owned[f"{m.namespace}/{m.name}"], key=lambda o: _KIND_ORDER.get(o["kind"], 3))
        out.append(_job(m, objs))
    return cluster, out


def _job(meta: JobMeta, objects: list[JSON]) -> Job:
    pods = [o for o in objects if o["kind"] == "Pod"]
    for index, pod in enumerate(pods):
        _owner_labels(pod, meta.owner_kind, index)
    group = next((o for o in objects if o["kind"] == "PodGroup"), None)
    min_member = len(pods)
    if group is not None and isinstance(group.get("spec", {}).get("minMember"), int):
        min_member = group["spec"]["minMember"]
    emulated = owners.emulate(meta, group, pods)
    if emulated is not None:
        objects = [*emulated, *(o for o in objects if o["kind"] != "PodGroup")]
    templates = {f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}": pending_copy(p) for p in pods}
    return Job(meta, objects, templates, min_member, owners=emulated or [])


def _without_creation_time(obj: JSON) -> JSON:
    """`obj` with a metadata that has no creationTimestamp (the store stamps its clock's time)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "creationTimestamp"}
    return {**obj, "metadata": meta}


def _owner_labels(pod: JSON, kind: str, index: int) -> None:
    """The labels the owner's controller puts on replica `index` (kept when the scenario wrote them)."""
    labels = owners.own_map(pod["metadata"], "labels")
    new: dict[str, str] = {}
    if kind in KUBEFLOW:
        new[constants.LABEL_KUBEFLOW_JOB_ROLE] = KUBEFLOW[kind] if index == 0 else "worker"
        new[constants.LABEL_KUBEFLOW_REPLICA_INDEX] = str(index)
    elif kind in RAY:
        new[constants.LABEL_RAY_NODE_TYPE] = "head" if index == 0 else "worker"
    elif kind == "LeaderWorkerSet":
        new[constants.LABEL_LWS_WORKER_INDEX] = str(index)
    for key, value in new.items():
        labels.setdefault(key, value)


class Workload:
    """The jobs of a replay and the owner writes that move them; looked up by job key and pod key."""

    def __init__(self, store: ClusterStore, jobs: list[Job]) -> None:
        self.store = store
        self.jobs = {job.key: job for job in jobs}
        self.pod_job: dict[str, Job] = {pod: job for job in jobs for pod in job.templates}
        self.pending = 0  # live jobs not RUNNING: whether a cycle could place something
        self.running = 0  # jobs RUNNING
        self.done = 0  # jobs DONE

    def job_of(self, pod_key: str) -> Job | None:
        return self.pod_job.get(pod_key)

    def arrive(self, job: Job, now: float, *, keep_creation: bool) -> None:
        """Create the job's objects; `keep_creation`: keep the scenario's creation times (jobs at the start)."""
        job.phase, job.submitted = Phase.PENDING, now
        self.pending += 1
        for obj in job.objects:  # the store copies what it is given and never changes it
            self.store.create(obj if keep_creation else _without_creation_time(obj))

    def pod_running(self, pod_key: str, now: float) -> bool:
        """Count a pod as running; True when that makes the whole job run (a run starts now)."""
        job = self.pod_job[pod_key]
        if not job.is_live:
            return False
        job.running.add(pod_key)
        if job.first_pod_start is None:
            job.first_pod_start = now
        if job.phase is Phase.PENDING and len(job.running) == len(job.templates):
            job.phase = Phase.RUNNING
            job.runs += 1
            self.pending -= 1
            self.running += 1
            if job.started is None:
                job.started = now
            return True
        return False

    def pod_stopped(self, pod_key: str) -> bool:
        """A pod stopped running (terminating or gone); True when that interrupts a running job."""
        job = self.pod_job[pod_key]
        job.running.discard(pod_key)
        if job.phase is not Phase.RUNNING:
            return False
        job.phase = Phase.PENDING
        job.generation += 1
        job.interruptions += 1
        self.pending += 1
        self.running -= 1
        return True

    def pod_gone(self, pod_key: str) -> bool:
        """A pod was removed; its owner creates it again while the job lives. True when it did."""
        job = self.pod_job[pod_key]
        self.pod_stopped(pod_key)
        if not job.is_live:
            return False
        if not job.recreates:
            job.phase = Phase.LOST
            self.pending -= 1
            return False
        self.store.create(job.templates[pod_key])
        return True

    def finish(self, job: Job, now: float) -> None:
        """The run is over: every pod Succeeded, then pods and PodGroup deleted."""
        if job.phase is Phase.RUNNING:
            self.running -= 1
        elif job.phase is Phase.PENDING:
            self.pending -= 1
        job.phase, job.finished = Phase.DONE, now
        self.done += 1
        job.running.clear()
        groups = set() if job.owners else {job.meta.name}
        for pod_key in job.templates:
            ns, name = pod_key.split("/", 1)
            try:
                pod = self.store.patch("pods", name, ns, {"status": {"phase": "Succeeded"}}, "status")
                self.store.delete("pods", name, ns)
            except NotFound:
                continue
            groups.add((pod["metadata"].get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME, ""))
        for owner in job.owners:  # and what the garbage collector removes with them: their PodGroups
            with contextlib.suppress(NotFound):
                plural = resource_for(owner["kind"], owner["apiVersion"]).plural
                self.store.delete(plural, owner["metadata"]["name"], job.meta.namespace)
        for group in sorted(groups - {""}):
            with contextlib.suppress(NotFound):
                self.store.delete("podgroups", group, job.meta.namespace)

    def unfinished(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.phase in (Phase.PENDING, Phase.RUNNING)]
