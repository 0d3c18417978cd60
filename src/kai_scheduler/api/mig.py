"""MIG instances as extended resources (§2, §6): `nvidia.com/mig-<profile>` with the mixed strategy.

A profile reads `<g>g.<m>gb`, optionally with a `+me`-style suffix (1g.10gb, 3g.40gb, 1g.10gb+me): `g` compute
slices of one GPU and `m` GB of its memory. As KAI's `GetSumGPUs` and `GetGpusQuota`, queue accounting counts an
instance as `g` GPU units, both in what a pod holds and in the cluster's total; a slice is the share of one
device that a queue's GPU quota counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

RESOURCE_PREFIX: Final = "nvidia.com/mig-"
# The instances the scheduler chose for a pod, "<profile>/<index>" comma-separated: on its BindRequest, and
# copied to the pod by the binder, so a rebuilt snapshot gives each pod the instance it was given (this
# project's own; KAI keeps no instance index).
ANNOTATION_INSTANCES: Final = "kai.scheduler/mig-instances"
STRATEGY_MIXED: Final = "mixed"
STRATEGY_SINGLE: Final = "single"
STRATEGIES: Final = (STRATEGY_SINGLE, STRATEGY_MIXED)

_PROFILE = re.compile(r"^(?P<slices>[1-9][0-9]?)g\.(?P<gb>[1-9][0-9]{0,3})gb(?P<extra>\+[a-z][a-z0-9.]*)?$")
PROFILE_FORMAT: Final = "<g>g.<m>gb, e.g. 1g.10gb or 3g.40gb"


@dataclass(frozen=True, slots=True)
class Profile:
    """One MIG profile: its name (`1g.10gb`), compute slices and memory in GB."""

    name: str
    slices: int
    memory_gb: int

    @property
    def resource(self) -> str:
        return RESOURCE_PREFIX + self.name


def parse_profile(name: str) -> Profile | None:
    """The profile `name` denotes, or None when it is not of the MIG profile form."""
    m = _PROFILE.match(name)
    if m is None:
        return None
    return Profile(name, int(m["slices"]), int(m["gb"]))


# MIG instances of one profile a node may list: the scheduler tracks each instance (an A100 or H100 has at most 7,
# a node at most a few dozen GPUs), so a count past this is a broken node object, not a large node.
MAX_NODE_INSTANCES: Final = 4096


def is_mig_resource(resource: str) -> bool:
    return resource.startswith(RESOURCE_PREFIX)


def profile_of(resource: str) -> Profile | None:
    """The profile of a `nvidia.com/mig-<profile>` resource name; None for another resource or a bad profile."""
    if not is_mig_resource(resource):
        return None
    return parse_profile(resource[len(RESOURCE_PREFIX) :])


def gpu_units(resource: str) -> int:
    """GPU units one instance of `resource` counts in queue accounting: its compute slices (0 if not MIG)."""
    profile = profile_of(resource)
    return 0 if profile is None else profile.slices


def units_of(resources: Mapping[str, float]) -> float:
    """GPU units of the MIG instances in a resource list (a node's allocatable)."""
    return float(sum(gpu_units(name) * amount for name, amount in resources.items() if is_mig_resource(name)))


def format_instances(held: tuple[tuple[str, int], ...]) -> str:
    """`((1g.10gb, 0), (1g.10gb, 1))` → "1g.10gb/0,1g.10gb/1"."""
    return ",".join(f"{profile}/{index}" for profile, index in held)


def parse_instances(text: str | None) -> tuple[tuple[str, int], ...]:
    """The instances `format_instances` wrote; a malformed entry is left out (the pod then gets any free one)."""
    out = []
    for part in (text or "").split(","):
        profile, _, index = part.strip().rpartition("/")
        if parse_profile(profile) is not None and index.isdigit():
            out.append((profile, int(index)))
    return tuple(out)
