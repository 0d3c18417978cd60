"""Knative Service grouper (KAI `plugins/knative`, `serving.knative.dev/v1`).

With gang scheduling (`Config.knative_gang_schedule`, KAI's default) the pods of one Revision form one PodGroup
(`pg-<revision>-<uid>`) with minMember = its `autoscaling.knative.dev/min-scale` annotation (default 1; read from
the Revision, else from the Service's `spec.template`). Without it every pod is its own PodGroup
(`pg-<pod>-<uid>`, minMember 1). Labels, annotations and queue come from the Service in both cases; the priority
class is `inference` unless labelled otherwise.

A Revision whose pods were already grouped one per pod (before gang scheduling was turned on) stays so, as KAI's
grouper keeps it: its pods name more than one PodGroup, or name one that a pod owns. Its running pods are not
moved into a gang they were never placed as.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import Context, Grouping, Obj, annotation_int, metadata_strings

REVISION_LABEL = "serving.knative.dev/revision"


def group(ctx: Context) -> Grouping:
    revision = ctx.find("serving.knative.dev", "Revision")
    if not ctx.config.knative_gang_schedule or (revision is not None and _grouped_per_pod(ctx, revision)):
        return default.per_pod(ctx)
    top = ctx.top
    by = revision or top
    grouping = default.group(ctx)
    pg = grouping.podgroup
    pg.meta.name = default.name_for(by)
    pg.meta.owner_references = (by.reference(),)
    pg.meta.creation_timestamp = by.created
    scale = None
    key = constants.ANNOTATION_KNATIVE_MIN_SCALE
    if revision is not None:
        scale = annotation_int(revision.annotations, key, f"Revision {revision.name}", grouping.warnings)
    if scale is None:
        template = metadata_strings(top.get("spec.template"), "annotations")
        scale = annotation_int(template, key, f"{top.kind} {top.name} spec.template", grouping.warnings)
    pg.min_member = 1 if scale is None else max(scale, 1)
    return grouping


def _grouped_per_pod(ctx: Context, revision: Obj) -> bool:
    """Whether the Revision's pods are already in PodGroups of their own; read once per reconcile."""
    return ctx.lookup.once(("knative-per-pod", revision.uid), lambda: _named_per_pod(ctx, revision))


def _named_per_pod(ctx: Context, revision: Obj) -> bool:
    named: set[str] = set()
    for pod in ctx.lookup.pods(revision.namespace, {REVISION_LABEL: revision.name}):
        name = ((pod.get("metadata") or {}).get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME)
        if not name:
            continue
        if name in named:  # two pods in one PodGroup: a gang
            return False
        named.add(name)
    if len(named) != 1:
        return len(named) > 1
    podgroup = ctx.lookup.podgroup(revision.namespace, named.pop())
    owners = ((podgroup or {}).get("metadata") or {}).get("ownerReferences") or []
    return bool(owners) and isinstance(owners[0], dict) and owners[0].get("kind") == "Pod"
