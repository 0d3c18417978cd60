"""What the property tests' strategies draw, shared by them."""

from __future__ import annotations

from dataclasses import dataclass

from kai_scheduler.api.fields import JSON


@dataclass(frozen=True)
class Cluster:
    """A drawn cluster: its objects, and the one line hypothesis prints for a failing example."""

    objects: list[JSON]
    description: str

    def __repr__(self) -> str:
        return self.description
