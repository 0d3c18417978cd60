"""usageDBConfig as typed values with KAI's defaults (§5.5); parsed and validated by `usagedb.usage_config`.

Durations are seconds. A `half_life` of None means no decay.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

DAY = 86_400.0
WEEK = 7 * DAY


class ClientType(enum.Enum):
    PROMETHEUS = "prometheus"
    FAKE = "fake"  # KAI's test client: no history, every usage 0
    FAKE_WITH_HISTORY = "fake-with-history"  # history recorded from the scheduler's own cycles


class WindowType(enum.Enum):
    SLIDING = "sliding"
    TUMBLING = "tumbling"
    CRON = "cron"


@dataclass(frozen=True, slots=True)
class ExtraParams:
    usage_query_timeout: float = 10.0
    query_resolution: float = 60.0
    gpu_allocation_metric: str = "kai_queue_allocated_gpus"
    cpu_allocation_metric: str = "kai_queue_allocated_cpu_cores"
    memory_allocation_metric: str = "kai_queue_allocated_memory_bytes"
    gpu_capacity_metric: str = 'sum(kube_node_status_capacity{resource="nvidia_com_gpu"})'
    cpu_capacity_metric: str = 'sum(kube_node_status_capacity{resource="cpu"})'
    memory_capacity_metric: str = 'sum(kube_node_status_capacity{resource="memory"})'

    def metrics(self) -> tuple[tuple[str, str], ...]:
        """(allocation metric, capacity metric) per resource, in queue-axis order: cpu, memory, gpu."""
        return (
            (self.cpu_allocation_metric, self.cpu_capacity_metric),
            (self.memory_allocation_metric, self.memory_capacity_metric),
            (self.gpu_allocation_metric, self.gpu_capacity_metric),
        )


@dataclass(frozen=True, slots=True)
class UsageParams:
    window_size: float = WEEK
    window_type: WindowType = WindowType.SLIDING
    tumbling_window_start: float | None = None  # POSIX seconds (tumbling windows)
    cron: str = ""  # cron windows: a new window starts at every match
    half_life: float | None = None  # None: no decay
    fetch_interval: float = 60.0
    staleness_period: float = 300.0
    wait_timeout: float = 60.0
    extra: ExtraParams = field(default_factory=ExtraParams)


@dataclass(frozen=True, slots=True)
class UsageDBSettings:
    client_type: ClientType = ClientType.PROMETHEUS
    connection_string: str = ""
    connection_string_env_var: str = ""
    params: UsageParams = field(default_factory=UsageParams)
