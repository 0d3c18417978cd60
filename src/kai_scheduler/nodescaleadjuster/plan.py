"""What scaling pods there should be: the rules, as pure functions over plain records (no store).

- A *demand* is one unschedulable fractional-GPU pod of the KAI scheduler: its portion of each GPU
  (`gpu-fraction`, or `--gpu-memory-to-fraction-ratio` for a `gpu-memory` pod), its number of devices
  (`gpu-fraction-num-devices`) and its *group*: what decides which nodes it may land on (node selector,
  required node affinity, tolerations) and the number of devices. Only pods of one group share a scaling pod,
  so the autoscaler grows the node group those pods can use.
- A scaling pod of a group with N devices requests N whole GPUs and stands for pods whose portions add up to at
  most one GPU (each of its N GPUs carries that sum): fractions are packed first-fit decreasing.
- An existing scaling pod is kept while one of the pods it stands for still waits; it is deleted when none does
  (placed, gone, no longer unschedulable) or once a node took it (the capacity it asked for is there: the real
  pods must get it, so it is freed at once and its pods rest for the cool-down before they count again).
- A waiting pod that no scaling pod stands for first joins a kept scaling pod of its group with room left, and
  only then goes into new ones. So existing scaling pods change only by gaining members or going away.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.cluster import tolerance

# Portions of one device add up as a GPU's portions do on a node: 3 × 0.33 + 0.01 fills one GPU.
EPSILON = tolerance.RESOURCE


@dataclass(frozen=True, slots=True)
class Constraints:
    """The scheduling constraints a scaling pod copies from the pods it stands for (as Kubernetes JSON)."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: Mapping[str, Any] = field(default_factory=dict)  # spec.affinity.nodeAffinity
    tolerations: tuple[Mapping[str, Any], ...] = ()

    def canonical(self) -> str:
        return json.dumps(
            {
                "nodeSelector": dict(self.node_selector),
                "nodeAffinity": dict(self.node_affinity),
                "tolerations": [dict(t) for t in self.tolerations],
            },
            sort_keys=True,
            separators=(",", ":"),
        )


@dataclass(frozen=True, slots=True)
class Demand:
    uid: str
    key: str  # namespace/name
    portion: float  # of each device, in (0, 1]
    num_devices: int
    constraints: Constraints

    @property
    def group(self) -> str:
        return group_id(self.constraints, self.num_devices)


@dataclass(frozen=True, slots=True)
class ScalingPod:
    """A scaling pod that exists, as read back from its labels."""

    name: str
    group: str
    members: frozenset[str]  # uids of the pods it stands for
    bound: bool  # a node took it


@dataclass(frozen=True, slots=True)
class NewScalingPod:
    name: str
    group: str
    num_devices: int
    constraints: Constraints
    members: tuple[Demand, ...]


@dataclass(slots=True)
class Plan:
    delete: list[str] = field(default_factory=list)  # names
    cool: list[str] = field(default_factory=list)  # uids whose scaling pod a node took
    extend: dict[str, list[Demand]] = field(default_factory=dict)  # kept scaling pod → members it gains
    create: list[NewScalingPod] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.delete or self.extend or self.create)


def group_id(constraints: Constraints, num_devices: int) -> str:
    """A short stable id of (constraints, devices): a label value."""
    text = f"{num_devices}|{constraints.canonical()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def scaling_pod_name(group: str, members: Iterable[str]) -> str:
    """Deterministic, so that a create retried after a restart finds the pod it made (AlreadyExists)."""
    text = group + "|" + ",".join(sorted(members))
    return f"scaling-pod-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def plan(
    demands: Mapping[str, Demand], existing: Iterable[ScalingPod], cooling: frozenset[str] | set[str] = frozenset()
) -> Plan:
    """The writes that bring the scaling pods to the rules above; `demands` by uid, `cooling` uids skipped."""
    out = Plan()
    claimed: set[str] = set()
    load: dict[str, float] = {}
    kept_by_group: dict[str, list[str]] = defaultdict(list)
    for sp in sorted(existing, key=lambda s: s.name):
        if sp.bound:
            out.delete.append(sp.name)
            out.cool.extend(sorted(sp.members))
            claimed.update(sp.members)
            continue
        remaining = [
            demands[u] for u in sorted(sp.members) if u in demands and u not in claimed and demands[u].group == sp.group
        ]
        if not remaining:
            out.delete.append(sp.name)
            continue
        claimed.update(d.uid for d in remaining)
        load[sp.name] = sum(d.portion for d in remaining)
        kept_by_group[sp.group].append(sp.name)
    waiting = [d for u, d in demands.items() if u not in claimed and u not in cooling]
    waiting.sort(key=lambda d: (d.group, -d.portion, d.key, d.uid))
    bins: dict[str, list[list[Demand]]] = defaultdict(list)
    for d in waiting:
        joined = next((n for n in kept_by_group[d.group] if load[n] + d.portion <= 1 + EPSILON), None)
        if joined is not None:
            load[joined] += d.portion
            out.extend.setdefault(joined, []).append(d)
            continue
        fit = next((b for b in bins[d.group] if sum(m.portion for m in b) + d.portion <= 1 + EPSILON), None)
        if fit is None:
            bins[d.group].append([d])
        else:
            fit.append(d)
    for group in sorted(bins):
        for members in bins[group]:
            first = members[0]
            out.create.append(
                NewScalingPod(
                    name=scaling_pod_name(group, (m.uid for m in members)),
                    group=group,
                    num_devices=first.num_devices,
                    constraints=first.constraints,
                    members=tuple(members),
                )
            )
    return out


def gpus_requested(new: Iterable[NewScalingPod]) -> int:
    """Whole GPUs the scaling pods ask for."""
    return sum(sp.num_devices for sp in new)
