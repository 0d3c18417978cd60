"""Kubeflow Notebook grouper (KAI `plugins/notebook`): the default grouper; its default priority class is
`build` (non-preemptible, §2), set per kind in `context.DEFAULT_PRIORITY_CLASSES`."""

from __future__ import annotations

from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import Context, Grouping


def group(ctx: Context) -> Grouping:
    return default.group(ctx)
