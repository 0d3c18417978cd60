"""Node labels as integer-coded columns, so a nodeSelector, a node-affinity term or a topology key is a few
vector operations over all nodes (`Snapshot.node_labels`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.api.node import Node
from kai_scheduler.api.selectors import Requirement

Codes = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]  # one boolean per node


@dataclass(frozen=True, slots=True)
class Column:
    """One label key over all nodes: each node's value as a code into `index` (-1: label missing)."""

    codes: Codes
    index: dict[str, int]
    numbers: npt.NDArray[np.float64]  # per code: the value as an integer (else nan); then nan for -1

    @classmethod
    def of(cls, values: Sequence[str | None]) -> Column:
        index: dict[str, int] = {}
        codes = np.fromiter(
            (-1 if v is None else index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values)
        )
        numbers = np.array([*(_integer(v) for v in index), np.nan], dtype=np.float64)
        return cls(codes, index, numbers)

    def isin(self, values: Iterable[str]) -> Mask:
        wanted = [self.index[v] for v in values if v in self.index]
        return np.isin(self.codes, wanted) if wanted else np.zeros(len(self.codes), dtype=bool)

    def match(self, req: Requirement) -> Mask:
        """kube-scheduler's requirement rules; Gt/Lt compare integers and fail on a missing label."""
        op = req.operator
        if op == "Exists":
            return self.codes >= 0
        if op == "DoesNotExist":
            return self.codes < 0
        if op in ("In", "NotIn"):
            hit = self.isin(req.values)
            return hit if op == "In" else ~hit
        have, want = self.numbers[self.codes], _integer(req.values[0]) if req.values else np.nan
        result: Mask = have > want if op == "Gt" else have < want
        return result


class LabelColumns:
    """Node labels as integer-coded columns, built per key on first use; `metadata.name` for matchFields.

    Depends on the node objects alone, so the snapshot keeps one per node set across sessions."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self._nodes = nodes
        self._columns: dict[tuple[str, bool], Column] = {}

    def column(self, key: str, *, field: bool = False) -> Column:
        found = self._columns.get((key, field))
        if found is None:
            if not field:
                values: list[str | None] = [n.meta.labels.get(key) for n in self._nodes]
            else:
                values = [n.name if key == "metadata.name" else None for n in self._nodes]
            found = self._columns[(key, field)] = Column.of(values)
        return found


def _integer(text: str) -> float:
    try:
        return float(int(text))
    except ValueError:
        return float("nan")
