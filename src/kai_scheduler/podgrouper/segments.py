"""Segments (BEHAVIOR.md §7.3): a replica set cut into fixed-size SubGroups by the pods' replica index.

A PodTemplate annotated `kai.scheduler/segment-size: S` splits its R replicas into ceil(R/S) segments; the
pod with replica index i joins segment floor(i/S). A segment is mandatory while it lies within the replica
set's minMember: it needs all its pods (the last one fewer, where minMember ends inside it), the rest need
none. Each segment may carry its own topology constraint (`segment-topology-*-placement`), on the workload's
topology (`kai.scheduler/topology` of the top owner, else of the template).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kai_scheduler.api import constants
from kai_scheduler.api.podgroup import SubGroup, TopologyConstraint
from kai_scheduler.podgrouper.context import annotation_int, check_subgroups


@dataclass(frozen=True, slots=True)
class Segments:
    size: int
    constraint: TopologyConstraint | None = None

    def index(self, replica_index: int) -> int:
        return replica_index // self.size


def read(template_annotations: Mapping[str, str], topology: str, where: str, warnings: list[str]) -> Segments | None:
    """The segmentation a template asks for, or None (no or a bad `segment-size`: a warning)."""
    size = annotation_int(template_annotations, constants.ANNOTATION_SEGMENT_SIZE, where, warnings, minimum=1)
    if size is None:
        return None
    topology = topology or template_annotations.get(constants.ANNOTATION_TOPOLOGY, "")
    required = template_annotations.get(constants.ANNOTATION_SEGMENT_TOPOLOGY_REQUIRED, "")
    preferred = template_annotations.get(constants.ANNOTATION_SEGMENT_TOPOLOGY_PREFERRED, "")
    if (required or preferred) and not topology:
        warnings.append(f"{where}: segment placement without a {constants.ANNOTATION_TOPOLOGY} annotation; ignored")
    constraint = TopologyConstraint(topology, required, preferred) if topology and (required or preferred) else None
    return Segments(size, constraint)


def name(prefix: str, segment: int) -> str:
    return f"{prefix}-segment-{segment}" if prefix else f"segment-{segment}"


def sub_groups(
    segments: Segments, replicas: int, min_member: int, *, where: str, prefix: str = "", parent: str | None = None
) -> list[SubGroup]:
    """The leaf SubGroups of `replicas` pods cut into segments, in index order; GroupingError naming `where` (the
    owner and its replica count) when they would be more than MAX_SUBGROUPS."""
    out = []
    count = -(-replicas // segments.size)
    check_subgroups(f"{where} ({replicas} in segments of {segments.size})", count)
    for i in range(count):
        first = i * segments.size
        size = min(segments.size, replicas - first)
        required = max(0, min(size, min_member - first))
        out.append(
            SubGroup(name(prefix, i), min_member=required, parent=parent, topology_constraint=segments.constraint)
        )
    return out


def replica_index(labels: Mapping[str, str], key: str) -> int | None:
    raw = labels.get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None
