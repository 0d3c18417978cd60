"""What loading a scenario gives: the cluster's Kubernetes objects plus the extras only a scenario carries.

`objects` is what a real cluster would hold (Kubernetes JSON, as the API server serves it), so `kai schedule`
and `kai simulate` feed them to a store and from there run the same path as in a cluster. The rest (`now`,
`cycles`, `config`, `jobs`, `expect`) is for the commands themselves: the simulator's arrivals and run
times, and the checks of `kai schedule --check` (SCENARIOS.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kai_scheduler.scenario.autoscaler import AutoscalerSpec

JSON = dict[str, Any]

DEFAULT_NOW = 1767225600.0
"""2026-01-01T00:00:00Z: the fixed instant of a scenario that does not say `now`."""

TASK_STATUSES = (
    "Pending",
    "Running",
    "Releasing",
    "StuckInReleasing",
    "Pipelined",
    "Binding",
    "Bound",
    "Succeeded",
    "Failed",
    "Gated",
)
"""The statuses a scenario task may be written in, and an expectation may ask for (SCENARIOS.md)."""

NODE_EXPECTATION_KEYS = ("idleGpus", "releasingGpus", "usedGpus", "allocatableGpus", "sharedGpus", "reservationPods")
QUEUE_EXPECTATION_KEYS = ("fairShare", "allocated", "deserved")
QUEUE_EXPECTATION_RESOURCES = ("gpu", "cpu", "memory")


@dataclass(frozen=True, slots=True)
class JobMeta:
    """One scenario job as the simulator sees it: when it arrives, how long it runs, which pods it owns.

    Times are seconds: `submit_at` after the start of the replay, `duration` once all its pods run (None =
    runs until the end). `owner_kind` is the workload kind of its pods ("" when the scenario names none).
    """

    name: str
    namespace: str
    queue: str
    submit_at: float = 0.0
    duration: float | None = None
    owner_kind: str = ""
    task_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StatusExpectation:
    """Expected status and/or node of a task (or of every task of a job); None = not checked."""

    status: str | None = None
    node: str | None = None


@dataclass(frozen=True, slots=True)
class Expectations:
    """The `expect:` block, typed; checked on the state after the last cycle (bounds: on every cycle).

    `nodes[name][key]` is a GPU count for a key of NODE_EXPECTATION_KEYS; `queues[name][key][resource]` is
    an amount in queue units (GPU devices, CPU millicores, memory MB) for QUEUE_EXPECTATION_KEYS.
    """

    tasks: dict[str, StatusExpectation] = field(default_factory=dict)  # by namespace/name
    jobs: dict[str, StatusExpectation] = field(default_factory=dict)  # by namespace/name
    nodes: dict[str, dict[str, float]] = field(default_factory=dict)
    queues: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    max_binds: int | None = None
    max_evictions: int | None = None
    max_pipelines: int | None = None


@dataclass(frozen=True, slots=True)
class Shard:
    """One scheduler of a sharded scenario (`shards:`): its name, the node pool it serves (the value of the
    node-pool label; "" = objects without it) and its own configuration (None: the scenario's `config`)."""

    name: str
    partition_label_value: str = ""
    config: JSON | None = None
    config_lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)


# The kinds a manifest's objects are read of, in the order they are loaded; others are skipped (`ignored_kinds`).
# Grove's PodGang is read too: the pod grouper groups its pods by it (there is no Grove operator here to make pods).
MANIFEST_KINDS = (
    "PriorityClass",
    "Namespace",
    "Topology",
    "Node",
    "Queue",
    "PodGroup",
    "PodGang",
    "Pod",
    "BindRequest",
)


@dataclass(frozen=True, slots=True)
class Scenario:
    """A loaded scenario file or Kubernetes manifest.

    `objects` come in a fixed order: priority classes, namespaces, topologies, nodes, queues, podgroups, pods,
    bindrequests (each in file order), with deterministic uids, so two loads are equal. A manifest has no
    `config`, `cycles` or `expect`; its `jobs` are derived from its PodGroups and `ignored_kinds` lists the
    kinds it held that the scheduler does not read.
    """

    name: str
    now: float = DEFAULT_NOW
    cycles: int | None = None
    config: JSON = field(default_factory=dict)
    config_lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)  # path in `config` → line
    objects: list[JSON] = field(default_factory=list)
    jobs: list[JobMeta] = field(default_factory=list)
    expect: Expectations | None = None
    source: str = ""
    ignored_kinds: tuple[str, ...] = ()
    autoscaler: AutoscalerSpec | None = None  # `kai simulate`'s autoscaler model (scenario/autoscaler.py)
    shards: tuple[Shard, ...] = ()  # several schedulers side by side, one per node pool; () = one scheduler

    def skipped_note(self) -> str | None:
        """One line saying which kinds of a manifest were skipped and what to give instead, or None."""
        if not self.ignored_kinds:
            return None
        return (
            f"{self.source}: skipped {', '.join(self.ignored_kinds)}: no workload controller runs here to make "
            f"their pods; read are {', '.join(MANIFEST_KINDS)} (e.g. `kubectl get "
            "nodes,queues,podgroups,pods -A -o yaml`)"
        )
