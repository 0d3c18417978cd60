"""Find the job a user names, the node pools to look at, and read the cluster, with one-line errors.

A job is named by its PodGroup (`name` or `namespace/name`), by one of its pods (resolved through the pod's
`pod-group-name` annotation), or by its workload (a Job, a PyTorchJob…: the podgrouper names the PodGroup
`pg-<workload>-<workload uid>`). Without a namespace, every namespace is searched and a name found in several
is an error that lists them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kai_scheduler.api import constants
from kai_scheduler.api.errors import UserError, did_you_mean
from kai_scheduler.cluster.snapshot import ClusterObjects, SnapshotParams
from kai_scheduler.store.cache import DRA_RESOURCES, SCHEDULER_RESOURCES, ObjectCache
from kai_scheduler.store.interface import NotFound, StoreError


class JobNotFound(UserError):
    """No PodGroup or pod by that name (or several, without a namespace to choose)."""


class ClusterError(UserError):
    """The cluster could not be read: unreachable, no rights, or KAI's CRDs not installed."""


@dataclass(frozen=True, slots=True)
class JobRef:
    name: str
    namespace: str | None  # None: any namespace

    @classmethod
    def parse(cls, text: str, namespace: str | None = None) -> JobRef:
        """`name` or `namespace/name`; `namespace` (the -n flag) must agree with a namespace in the text."""
        given, slash, name = text.rpartition("/")
        if not name or (slash and not given) or "/" in given:
            raise UserError(f"JOB {text!r}: want NAME or NAMESPACE/NAME")
        if slash and namespace is not None and namespace != given:
            raise UserError(f"JOB {text!r} names namespace {given!r}, but -n says {namespace!r}")
        return cls(name, given if slash else namespace)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace is not None else self.name


def sync(cache: ObjectCache) -> None:
    """List every resource the scheduler reads; a store error becomes one line saying what to do."""
    try:
        cache.sync()
    except NotFound as err:
        raise ClusterError(
            f"{err} (are KAI's CRDs installed? `kai manifests | kubectl apply --server-side -f -` installs them)"
        ) from None
    except StoreError as err:
        if err.code in (401, 403):
            raise ClusterError(f"{err} (the kubeconfig's user needs to list {_READS})") from None
        raise ClusterError(str(err)) from None


_CORE_READS = [r for r in SCHEDULER_RESOURCES if r not in DRA_RESOURCES]
_READS = f"{', '.join(_CORE_READS)}, and {', '.join(DRA_RESOURCES)} where the cluster serves resource.k8s.io"


def find(objects: ClusterObjects, ref: JobRef, *, scheduler_name: str) -> str:
    """The `namespace/name` key of the PodGroup `ref` names (a PodGroup first, else a pod's)."""
    groups = [g.meta.key for g in objects.podgroups if g.name == ref.name and _in(g.meta.namespace, ref)]
    if len(groups) == 1:
        return groups[0]
    if len(groups) > 1:
        raise JobNotFound(f"job {ref.name!r} is in several namespaces ({', '.join(sorted(groups))}): give one with -n")
    pods = [p for p in objects.pods if p.name == ref.name and _in(p.namespace, ref)]
    if len(pods) > 1:
        keys = ", ".join(sorted(p.meta.key for p in pods))
        raise JobNotFound(f"pod {ref.name!r} is in several namespaces ({keys}): give one with -n")
    if pods:
        pod = pods[0]
        if pod.scheduler_name != scheduler_name:
            raise JobNotFound(
                f"pod {pod.meta.key} is scheduled by {pod.scheduler_name!r}, not {scheduler_name!r}: "
                "this scheduler has nothing to explain about it"
            )
        group = pod.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME, "")
        if not group:
            raise JobNotFound(f"pod {pod.meta.key} has no PodGroup yet (the podgrouper gives it one)")
        key = f"{pod.namespace}/{group}"
        if not any(g.meta.key == key for g in objects.podgroups):
            raise JobNotFound(f"pod {pod.meta.key} names PodGroup {group!r}, which does not exist")
        return key
    owned = sorted(
        g.meta.key for g in objects.podgroups if _of_workload(g.name, ref.name) and _in(g.meta.namespace, ref)
    )
    if len(owned) == 1:
        return owned[0]
    if len(owned) > 1:
        raise JobNotFound(f"workloads named {ref.name!r} have several PodGroups ({', '.join(owned)}): name one of them")
    if ref.namespace is not None and not _namespace_used(objects, ref.namespace):
        raise JobNotFound(
            f"no PodGroup, pod or workload named {ref.name!r}: namespace {ref.namespace!r} has none at all"
        )
    where = f" in namespace {ref.namespace!r}" if ref.namespace is not None else ""
    raise JobNotFound(f"no PodGroup, pod or workload named {ref.name!r}{where}{_guess(objects, ref)}")


# The PodGroup name the podgrouper gives a workload's pods (KAI's `pg-<top owner name>-<top owner uid>`).
_WORKLOAD_PODGROUP = re.compile(r"pg-(?P<workload>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _of_workload(podgroup: str, workload: str) -> bool:
    match = _WORKLOAD_PODGROUP.fullmatch(podgroup)
    return match is not None and match["workload"] == workload


def _guess(objects: ClusterObjects, ref: JobRef) -> str:
    """` (did you mean X?)` for a near miss among the names JOB may take (in the namespace asked for), else empty."""
    names = {g.name for g in objects.podgroups if _in(g.meta.namespace, ref)}
    names |= {p.name for p in objects.pods if _in(p.namespace, ref)}
    names |= {m["workload"] for n in list(names) if (m := _WORKLOAD_PODGROUP.fullmatch(n))}
    return did_you_mean(ref.name, names)


def _in(namespace: str, ref: JobRef) -> bool:
    return ref.namespace is None or namespace == ref.namespace


def _namespace_used(objects: ClusterObjects, namespace: str) -> bool:
    return any(p.namespace == namespace for p in objects.pods) or any(
        g.meta.namespace == namespace for g in objects.podgroups
    )


def job_pool(objects: ClusterObjects, key: str, params: SnapshotParams) -> str:
    """The node pool whose scheduler serves the job: its PodGroup's node-pool label ("" without one, §1.5)."""
    pg = next(g for g in objects.podgroups if g.meta.key == key)
    return pg.meta.labels.get(params.node_pool_label_key, "")


def pools(objects: ClusterObjects, label_key: str, job_pool: str) -> list[str]:
    """Every node pool (values of the node-pool label; "" for unlabelled nodes), the job's first."""
    found = {n.meta.labels.get(label_key, "") for n in objects.nodes}
    found.discard(job_pool)
    return [job_pool, *sorted(found)]
