"""The plugins this scheduler implements, by their ConfigMap name (§4): an explicit table, no import magic.

A builder takes the plugin's `arguments` (strings, as in KAI's ConfigMap) and returns a fresh plugin for one
session; a bad argument raises `config.ConfigError` at load time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kai_scheduler.framework.session import Plugin
from kai_scheduler.plugins import (
    dynamicresources,
    elastic,
    gpupack,
    gpusharingorder,
    gpuspread,
    minruntime,
    nodeavailability,
    nodeplacement,
    nominatednode,
    podaffinity,
    priority,
    reflectjoborder,
    resourcetype,
    snapshot_endpoint,
    subgrouporder,
    taskorder,
)
from kai_scheduler.plugins.gpufrag import plugin as gpufrag
from kai_scheduler.plugins.predicates import plugin as predicates
from kai_scheduler.plugins.proportion import plugin as proportion
from kai_scheduler.plugins.topology import plugin as topology

Builder = Callable[[Mapping[str, str]], Plugin]

BUILDERS: Mapping[str, Builder] = {
    "predicates": predicates.Predicates.from_args,
    "proportion": proportion.Proportion.from_args,
    "priority": priority.Priority.from_args,
    "elastic": elastic.Elastic.from_args,
    "kubeflow": taskorder.Kubeflow.from_args,
    "ray": taskorder.Ray.from_args,
    "taskorder": taskorder.TaskOrder.from_args,
    "subgrouporder": subgrouporder.SubGroupOrder.from_args,
    "nodeavailability": nodeavailability.NodeAvailability.from_args,
    "nominatednode": nominatednode.NominatedNode.from_args,
    "resourcetype": resourcetype.ResourceType.from_args,
    "podaffinity": podaffinity.PodAffinity.from_args,
    "nodeplacement": nodeplacement.NodePlacement.from_args,
    "gpupack": gpupack.GpuPack.from_args,
    "gpuspread": gpuspread.GpuSpread.from_args,
    "gpusharingorder": gpusharingorder.GpuSharingOrder.from_args,
    "gpufrag": gpufrag.GpuFrag.from_args,
    "topology": topology.Topology.from_args,
    "minruntime": minruntime.MinRuntime.from_args,
    "dynamicresources": dynamicresources.DynamicResources.from_args,
    "snapshot": snapshot_endpoint.SnapshotEndpoint.from_args,
    "reflectjoborder": reflectjoborder.ReflectJobOrder.from_args,
}

# Plugins KAI ships that this scheduler does not implement: accepted in a configuration and ignored, so a KAI
# ConfigMap loads unchanged; `kai` reports them.
KAI_PLUGINS = frozenset(
    {
        "sg-nodelocalgreedy",
        "sg-multinodegang",
        "numa",
    }
)


def build(name: str, arguments: Mapping[str, str]) -> Plugin:
    return BUILDERS[name](arguments)
