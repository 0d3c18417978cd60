"""Knative Service grouper (KAI `plugins/knative`, `serving.knative.dev/v1`).

Without gang scheduling (the default) every pod is its own PodGroup (`pg-<pod>-<uid>`, minMember 1), priority
class `inference` unless labelled otherwise. With `Config.knative_gang_schedule` the pods of one Revision form
one PodGroup (`pg-<revision>-<uid>`) with minMember = its `autoscaling.knative.dev/min-scale` annotation
(default 1; read from the Revision, else from the Service's `spec.template`). Labels, annotations and queue
come from the Service in both cases.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import Context, Grouping, annotation_int, metadata_strings


def group(ctx: Context) -> Grouping:
    if not ctx.config.knative_gang_schedule:
        return default.per_pod(ctx)
    top = ctx.top
    revision = ctx.find("serving.knative.dev", "Revision")
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
