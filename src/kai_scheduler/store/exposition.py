"""The Prometheus text format of a registry, with counters named as Go's client names them.

The Python client always exposes a counter's samples as `<name>_total` (OpenMetrics asks for it); KAI's Go
components expose a counter under the name it was registered with, so several of KAI's documented counters
(`kai_podgroups_scheduled_by_action`, `kai_total_preemption_attempts`) have no `_total`, and dashboards query
them so. `GoCounter` is such a counter: a collector whose families (`GoCounterFamily`) `text` writes under
their own name; everything else is written by the client's `generate_latest` unchanged.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector


class GoCounterFamily(CounterMetricFamily):
    """A counter family that `text` exposes as `<name>{labels} value`, without the `_total` the client adds."""


class GoCounter(Collector):
    """A counter with labels whose series are named exactly `name`, as a Go `CounterVec` is exposed."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str], registry: CollectorRegistry) -> None:
        if name.endswith("_total"):
            raise ValueError(f"{name}: a counter named with _total needs no GoCounter (use prometheus_client.Counter)")
        self.name = name
        self.documentation = documentation
        self.label_names = tuple(labels)
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def inc(self, *label_values: str, amount: float = 1.0) -> None:
        if len(label_values) != len(self.label_names):
            raise ValueError(f"{self.name}: want labels {self.label_names}, got {label_values}")
        if amount < 0:
            raise ValueError(f"{self.name}: a counter only goes up, got {amount}")
        with self._lock:
            self._values[label_values] = self._values.get(label_values, 0.0) + amount

    def value(self, *label_values: str) -> float | None:
        with self._lock:
            return self._values.get(label_values)

    def collect(self) -> Iterator[Metric]:
        family = GoCounterFamily(self.name, self.documentation, labels=self.label_names)
        with self._lock:
            values = sorted(self._values.items())
        for labels, value in values:
            family.add_metric(labels, value)
        yield family

    def describe(self) -> Iterator[Metric]:
        yield GoCounterFamily(self.name, self.documentation, labels=self.label_names)


class _Families(Collector):
    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def text(registry: Collector) -> bytes:
    """The registry in the Prometheus text format (0.0.4), `GoCounterFamily` counters under their own names."""
    families = list(registry.collect())
    go = [f for f in families if isinstance(f, GoCounterFamily)]
    rest = _Families(f for f in families if not isinstance(f, GoCounterFamily))
    return generate_latest(rest) + "".join(_go_counter(f) for f in go).encode("utf-8")


def _go_counter(family: Metric) -> str:
    lines = [f"# HELP {family.name} {_escape_help(family.documentation)}\n", f"# TYPE {family.name} counter\n"]
    total = family.name + "_total"
    for sample in family.samples:
        if sample.name != total:
            continue  # `_created`: Go's client has no such series
        labels = ",".join(f'{key}="{_escape_value(value)}"' for key, value in sorted(sample.labels.items()))
        series = f"{family.name}{{{labels}}}" if labels else family.name
        lines.append(f"{series} {_number(sample.value)}\n")
    return "".join(lines)


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
