"""The actions this scheduler implements, by their ConfigMap name (§1.5)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kai_scheduler.actions import allocate, consolidation, preempt, reclaim, stalegangeviction
from kai_scheduler.framework.session import Session


class Action(Protocol):
    name: str

    def execute(self, ssn: Session) -> None: ...


ACTIONS: Mapping[str, type[Action]] = {
    allocate.NAME: allocate.Allocate,
    consolidation.NAME: consolidation.Consolidation,
    reclaim.NAME: reclaim.Reclaim,
    preempt.NAME: preempt.Preempt,
    stalegangeviction.NAME: stalegangeviction.StaleGangEviction,
}
