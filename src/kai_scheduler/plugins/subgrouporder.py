"""subgrouporder: which member of a SubGroupSet is served first (§3.4; KAI `plugins/subgrouporder/`).

Rules, first decisive one wins: members below their threshold first; then required members (threshold > 0)
before optional ones; optional ones by fewer allocated; required ones by lower allocated/threshold. A tie is
left to the session, which orders by name.

A member's progress is counted in the unit of its own threshold: active-allocated pods for a PodSet
(threshold = minAvailable), satisfied children for a SubGroupSet (threshold = minSubGroup), so a PodSet and a
SubGroupSet side by side compare as fractions of what each needs.
"""

from __future__ import annotations

from kai_scheduler.cluster.job_info import Member, PodSet
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


class SubGroupOrder(PluginBase):
    name = "subgrouporder"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(points.SUBGROUP_ORDER, self.subgroup_order)

    def subgroup_order(self, left: Member, right: Member) -> int:
        """Negative when `left` is served first."""
        left_below, right_below = not left.is_satisfied(), not right.is_satisfied()
        if left_below != right_below:
            return -1 if left_below else 1
        left_required, right_required = left.threshold() > 0, right.threshold() > 0
        if left_required != right_required:
            return -1 if left_required else 1
        if not left_required:
            return _compare(_progress(left), _progress(right))
        return _compare(_progress(left) / left.threshold(), _progress(right) / right.threshold())


def _progress(member: Member) -> int:
    """Allocated, in the unit of the member's threshold."""
    return member.active_allocated() if isinstance(member, PodSet) else member.satisfied_members()


def _compare(left: float, right: float) -> int:
    return (left > right) - (left < right)
