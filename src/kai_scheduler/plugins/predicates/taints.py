"""The session's blocking node taints, grouped by the reason a fit error names them with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kai_scheduler.api.selectors import Taint, Toleration
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.framework.points import Mask
from kai_scheduler.plugins.predicates.masks import frozen

TAINT_REASONS = 16  # distinct taints named in fit errors; any further ones share one reason
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")  # PreferNoSchedule only steers scoring upstream


@dataclass(frozen=True, slots=True)
class TaintTable:
    """The session's blocking taints, grouped as fit errors name them: one group per distinct key and
    value (the first TAINT_REASONS in sorted order), any others together in one last group."""

    reasons: tuple[str, ...]
    groups: tuple[tuple[tuple[Taint, Mask], ...], ...]  # per reason: each taint and the nodes carrying it

    @classmethod
    def build(cls, nodes: Sequence[NodeInfo]) -> TaintTable:
        rows: dict[Taint, list[int]] = {}
        for node in nodes:
            for taint in node.node.taints:
                if taint.effect in BLOCKING_EFFECTS:
                    rows.setdefault(taint, []).append(node.row)
        by_name: dict[tuple[str, str], list[tuple[Taint, Mask]]] = {}
        for taint in sorted(rows, key=lambda t: (t.key, t.value, t.effect)):
            on = np.zeros(len(nodes), dtype=bool)
            on[rows[taint]] = True
            by_name.setdefault((taint.key, taint.value), []).append((taint, frozen(on)))
        reasons: list[str] = []
        groups: list[tuple[tuple[Taint, Mask], ...]] = []
        for i, ((key, value), entries) in enumerate(by_name.items()):
            if i < TAINT_REASONS:
                reasons.append(f"node(s) had untolerated taint {{{key}: {value}}}")
                groups.append(tuple(entries))
            elif i == TAINT_REASONS:
                reasons.append("node(s) had untolerated taints")
                groups.append(tuple(entries))
            else:
                groups[-1] += tuple(entries)
        return cls(tuple(reasons), tuple(groups))

    def pass_masks(self, tolerations: tuple[Toleration, ...]) -> tuple[Mask | None, ...]:
        """Per group: the nodes without an untolerated taint of that group (None: all nodes)."""
        out: list[Mask | None] = []
        for entries in self.groups:
            blocked = [on for taint, on in entries if not any(t.tolerates(taint) for t in tolerations)]
            out.append(frozen(~np.logical_or.reduce(blocked)) if blocked else None)
        return tuple(out)
