"""The components' command-line flags, each declared once: its name (KAI's, where KAI's components have the flag),
the older spellings still accepted, the kind of its value and its help.

`kai`'s commands add them (each command states its own default, shown after the help), the install renders them
into the components' command lines, and a SchedulingShard's `args` are checked against the scheduler's
(`framework.shard_args`). A value is read as KAI's Go components read it: booleans as `strconv.ParseBool`,
durations as `time.ParseDuration`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from kai_scheduler.api.booleans import parse_bool
from kai_scheduler.api.duration import DurationError, format_duration, parse_duration

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Kind(Generic[T]):
    """What a flag's value is: `read` turns its text into the value (ValueError saying why not, without the flag's
    name), `show` writes a default as --help shows it."""

    name: str  # "bool", "int", "float", "duration", "str" or "switch"
    read: Callable[[str], T]
    show: Callable[[T], str]


def _bool(text: str) -> bool:
    value = parse_bool(text)
    if value is None:
        raise ValueError(f"invalid boolean {text!r}: want true or false")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"invalid value {text!r}: want an integer") from None


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"invalid value {text!r}: want a number") from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as err:
        raise ValueError(str(err)) from None


def _text(value: str) -> str:
    return value or '""'


BOOL: Final[Kind[bool]] = Kind("bool", _bool, lambda v: str(v).lower())  # `--flag`, `--flag=false`, `--flag 0`
SWITCH: Final[Kind[bool]] = Kind("switch", _bool, lambda v: str(v).lower())  # present or not, takes no value
INT: Final[Kind[int]] = Kind("int", _int, str)
FLOAT: Final[Kind[float]] = Kind("float", _float, lambda v: f"{v:g}")
DURATION: Final[Kind[float]] = Kind("duration", _duration, format_duration)  # Go syntax: 500ms, 2s, 1m
TEXT: Final[Kind[str]] = Kind("str", str, _text)


@dataclass(frozen=True, slots=True)
class Flag(Generic[T]):
    name: str  # without its dashes
    kind: Kind[T]
    help: str
    metavar: str | None = None  # None: a switch, or a choice whose values --help lists
    aliases: tuple[str, ...] = ()  # other option strings accepted, such as an older spelling or `-o`
    repeatable: bool = False  # given more than once, every value is kept, in order

    @property
    def option(self) -> str:
        return f"--{self.name}"

    @property
    def option_strings(self) -> tuple[str, ...]:
        return (self.option, *self.aliases)

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds its value."""
        return self.name.replace("-", "_")


# --- the API server connection (every command that talks to a cluster) ---

KUBECONFIG: Final = Flag("kubeconfig", TEXT, "kubeconfig file", "PATH")
CONTEXT: Final = Flag("context", TEXT, "kubeconfig context", "NAME")
QPS: Final = Flag("qps", FLOAT, "API requests per second after the burst", "QPS")
BURST: Final = Flag("burst", INT, "API requests allowed at once", "N")
CONNECTION: Final = (KUBECONFIG, CONTEXT, QPS, BURST)

# --- a long-running component's endpoints and leader election ---

LISTEN_ADDRESS: Final = Flag("listen-address", TEXT, "address of /healthz, /readyz and /metrics", "ADDR")
LEADER_ELECT: Final = Flag("leader-elect", BOOL, "run only while holding the component's Lease", "BOOL")
LEADER_ELECT_NAMESPACE: Final = Flag("leader-elect-namespace", TEXT, "namespace of the Leases", "NS")
LEADER_ELECT_LEASE_DURATION: Final = Flag(
    "leader-elect-lease-duration", DURATION, "how long a Lease holds without renewal", "DURATION"
)
LEADER_ELECT_RENEW_DEADLINE: Final = Flag(
    "leader-elect-renew-deadline",
    DURATION,
    "the leader steps down when it could not renew for this long",
    "DURATION",
)
LEADER_ELECT_RETRY_PERIOD: Final = Flag(
    "leader-elect-retry-period", DURATION, "time between acquire and renew attempts", "DURATION"
)
LEADER_ELECTION: Final = (
    LEADER_ELECT,
    LEADER_ELECT_NAMESPACE,
    LEADER_ELECT_LEASE_DURATION,
    LEADER_ELECT_RENEW_DEADLINE,
    LEADER_ELECT_RETRY_PERIOD,
)
RECONCILE_PERIOD: Final = Flag("reconcile-period", DURATION, "time between reconciles", "DURATION")

# --- the scheduler: the flags of `framework.config.Flags`, in its order, then the process's own ---

SCHEDULER_NAME: Final = Flag(
    "scheduler-name",
    TEXT,
    "the schedulerName of the pods KAI handles: they are scheduled, grouped, admitted and scaled for",
    "NAME",
)
SCHEDULE_PERIOD: Final = Flag(
    "schedule-period", DURATION, "time between the end of one scheduling cycle and the start of the next", "DURATION"
)
NODEPOOL_LABEL_KEY: Final = Flag(
    "nodepool-label-key",
    TEXT,
    "label key of node pools (the pod grouper's queue of a `project` label is <project>-<pool>)",
    "KEY",
)
PARTITION_LABEL_VALUE: Final = Flag(
    "partition-label-value",
    TEXT,
    "node pool (value of the node-pool label) of the scheduler; empty: the objects without the label",
    "POOL",
)
QUEUE_LABEL_KEY: Final = Flag("queue-label-key", TEXT, "label key naming a workload's queue", "KEY")
RESTRICT_NODE_SCHEDULING: Final = Flag(
    "restrict-node-scheduling", BOOL, "only schedule on nodes labelled as CPU or GPU workers", "BOOL"
)
MAX_CONSOLIDATION_PREEMPTEES: Final = Flag(
    "max-consolidation-preemptees", INT, "most pods one consolidation may move", "N"
)
DETAILED_FIT_ERRORS: Final = Flag("detailed-fit-errors", BOOL, "record per-node fit errors on PodGroups", "BOOL")
UPDATE_POD_EVICTION_CONDITION: Final = Flag(
    "update-pod-eviction-condition", BOOL, "set the DisruptionTarget condition on evicted pods", "BOOL"
)
USE_SCHEDULING_SIGNATURES: Final = Flag(
    "use-scheduling-signatures", BOOL, "group identical pending pods when searching", "BOOL"
)
FULL_HIERARCHY_FAIRNESS: Final = Flag(
    "full-hierarchy-fairness",
    BOOL,
    "divide resources over the whole queue tree (false: leaf queues under one root)",
    "BOOL",
)
ALLOW_CONSOLIDATING_RECLAIM: Final = Flag(
    "allow-consolidating-reclaim", BOOL, "let reclaim move pods instead of evicting them", "BOOL"
)
RECLAIM_PROTECTS_DESERVED: Final = Flag(
    "reclaim-protects-deserved",
    BOOL,
    "reclaim passes over a victim that would take its queue below its deserved quota (not KAI's rule)",
    "BOOL",
)
PIPELINED_CLAIMS: Final = Flag(
    "pipelined-claims",
    BOOL,
    "a pipelined pod claims its node (nominatedNodeName) and allocate serves claimed jobs first (not KAI's; false: "
    "KAI's order)",
    "BOOL",
)
PREEMPTOR_PLACED_FIRST: Final = Flag(
    "preemptor-placed-first",
    BOOL,
    "a victim search's simulation places the preemptor before any victim lands again (not KAI's; false: KAI's "
    "queue order)",
    "BOOL",
)
DEFAULT_STALENESS_GRACE_PERIOD: Final = Flag(
    "default-staleness-grace-period",
    DURATION,
    "how long a gang may run below its minimum before it is evicted",
    "DURATION",
)
STUCK_IN_RELEASING_THRESHOLD: Final = Flag(
    "stuck-in-releasing-threshold",
    DURATION,
    "after this a terminating pod counts as stuck in releasing",
    "DURATION",
)
QUEUE_ACCESS_CONTROL: Final = Flag(
    "queue-access-control",
    BOOL,
    "a job whose queue does not admit its namespace (spec.allowedNamespaces, spec.allowedNamespaceSelector) is "
    "unschedulable, and the admission webhook refuses its pods and PodGroup (not KAI's)",
    "BOOL",
)
SCHEDULING: Final[tuple[Flag[Any], ...]] = (
    SCHEDULER_NAME,
    SCHEDULE_PERIOD,
    NODEPOOL_LABEL_KEY,
    PARTITION_LABEL_VALUE,
    QUEUE_LABEL_KEY,
    RESTRICT_NODE_SCHEDULING,
    MAX_CONSOLIDATION_PREEMPTEES,
    DETAILED_FIT_ERRORS,
    UPDATE_POD_EVICTION_CONDITION,
    USE_SCHEDULING_SIGNATURES,
    FULL_HIERARCHY_FAIRNESS,
    ALLOW_CONSOLIDATING_RECLAIM,
    RECLAIM_PROTECTS_DESERVED,
    PIPELINED_CLAIMS,
    PREEMPTOR_PLACED_FIRST,
    DEFAULT_STALENESS_GRACE_PERIOD,
    STUCK_IN_RELEASING_THRESHOLD,
    QUEUE_ACCESS_CONTROL,
)

SCHEDULER_CONF: Final = Flag(
    "scheduler-conf", TEXT, "scheduler configuration (KAI's config.yaml, or its ConfigMap)", "PATH"
)
METRICS_NAMESPACE: Final = Flag(
    "metrics-namespace",
    TEXT,
    "prefix of the metric names of the scheduler and of the queue controller; empty: none",
    "NAME",
)
PLUGIN_SERVER_PORT: Final = Flag(
    "plugin-server-port",
    INT,
    "port of the plugin server, on the interface of --listen-address: GET /get-snapshot answers snapshot.zip "
    "(the scheduler's view, replayed by `kai schedule snapshot.zip`) when the snapshot plugin is configured, "
    "GET /get-job-order the allocate order of pending jobs when the reflectjoborder plugin is; 0 = off",
    "PORT",
)
DASHBOARD_ADDRESS: Final = Flag(
    "dashboard-address",
    TEXT,
    "also serve the read-only web dashboard (see `kai dashboard`) on this address, such as :8090; needs the "
    "dashboard extra: pip install 'kai-scheduler[dashboard]'",
    "ADDR",
)
SCHEDULER: Final = (SCHEDULER_CONF, METRICS_NAMESPACE, PLUGIN_SERVER_PORT, DASHBOARD_ADDRESS)

# --- the binder ---

MAX_CONCURRENT_RECONCILES: Final = Flag(
    "max-concurrent-reconciles",
    INT,
    "reconciles at once: the binder's BindRequests of whole-GPU pods (shared-GPU ones go one at a time), the "
    "controllers' PodGroup and Queue status writes, the pod grouper's PodGroup and pod writes",
    "N",
)
RESOURCE_RESERVATION_NAMESPACE: Final = Flag(
    "resource-reservation-namespace", TEXT, "namespace of the GPU reservation pods", "NS"
)
RESOURCE_RESERVATION_SERVICE_ACCOUNT: Final = Flag(
    "resource-reservation-service-account",
    TEXT,
    "ServiceAccount of the GPU reservation pods, in their namespace: the reservation image patches its own pod "
    'with its GPU index; "" = the namespace\'s default',
    "NAME",
)
RESOURCE_RESERVATION_POD_RESOURCES: Final = Flag(
    "resource-reservation-pod-resources",
    TEXT,
    "JSON ResourceRequirements added to the GPU reservation pods' container: CPU and memory requests and limits "
    '(its GPU is the binder\'s), e.g. {"requests": {"cpu": "10m", "memory": "32Mi"}}',
    "JSON",
)
RESOURCE_RESERVATION_POD_SECURITY_CONTEXT: Final = Flag(
    "resource-reservation-pod-security-context", TEXT, "JSON PodSecurityContext of the GPU reservation pods", "JSON"
)
RESOURCE_RESERVATION_CONTAINER_SECURITY_CONTEXT: Final = Flag(
    "resource-reservation-container-security-context",
    TEXT,
    "JSON SecurityContext of the GPU reservation pods' container",
    "JSON",
)
RESOURCE_RESERVATION_POD_IMAGE: Final = Flag(
    "resource-reservation-pod-image",
    TEXT,
    "image of the GPU reservation pods (it reports the GPU index the device plugin gave it)",
    "IMAGE",
)
RESOURCE_RESERVATION_ALLOCATION_TIMEOUT: Final = Flag(
    "resource-reservation-allocation-timeout",
    DURATION,
    "how long a reservation pod may take to report its GPU index before the bind fails",
    "DURATION",
)
RUNTIME_CLASS_NAME: Final = Flag(
    "runtime-class-name",
    TEXT,
    'RuntimeClass of the GPU reservation pods; "" = none, the node\'s default runtime',
    "NAME",
)
HAMI_CORE_ENABLED: Final = Flag(
    "hami-core-enabled",
    BOOL,
    "HAMi-core GPU memory isolation of shared-GPU pods: the binder writes a pod's CUDA_DEVICE_MEMORY_LIMIT (its "
    "node's nvidia.com/gpu.memory times its portion, in MiB) into its shared-GPU ConfigMap (KAI's binder plugin "
    "hamicore), the admission webhook gives the pod's GPU container that value (under `kai run`, both)",
    "BOOL",
)

# --- the pod grouper and the controllers ---

MIGRATE_FROM: Final = Flag(
    "migrate-from",
    TEXT,
    "also group pods written for these schedulers by their markers: volcano, yunikorn or both, comma-separated "
    "(not KAI's; docs/migration.md)",
    "SCHEDULERS",
)
QUEUE_MAP: Final = Flag(
    "queue-map", TEXT, "YAML map of their queue names to KAI Queue names, for --migrate-from", "FILE"
)
KNATIVE_GANG_SCHEDULE: Final = Flag(
    "knative-gang-schedule",
    BOOL,
    "pod grouper: the pods of a Knative Revision as one gang, minMember its autoscaling.knative.dev/min-scale, "
    "instead of one PodGroup per pod",
    "BOOL",
)
DEFAULT_PRIORITIES_CONFIGMAP_NAME: Final = Flag(
    "default-priorities-configmap-name",
    TEXT,
    "pod grouper: the ConfigMap whose data.types sets a default priority class and preemptibility per workload "
    "kind (with --default-priorities-configmap-namespace; docs/components.md)",
    "NAME",
)
DEFAULT_PRIORITIES_CONFIGMAP_NAMESPACE: Final = Flag(
    "default-priorities-configmap-namespace",
    TEXT,
    "pod grouper: the namespace of --default-priorities-configmap-name",
    "NAMESPACE",
)
POD_LABEL_SELECTOR: Final = Flag(
    "pod-label-selector",
    TEXT,
    "pod grouper: group only the pods carrying all these labels (KAI's selective monitoring)",
    "KEY=VALUE,...",
)
NAMESPACE_LABEL_SELECTOR: Final = Flag(
    "namespace-label-selector",
    TEXT,
    "pod grouper: group only the pods of namespaces carrying all these labels",
    "KEY=VALUE,...",
)
CREATE_DEFAULT_QUEUES: Final = Flag(
    "create-default-queues",
    BOOL,
    "create the queues default-parent-queue and default-queue when they are missing, retrying until the Queue CRD "
    "and the admission webhook allow it",
    "BOOL",
)
QUEUE_LABEL_TO_METRIC_LABEL: Final = Flag(
    "queue-label-to-metric-label",
    TEXT,
    "queue controller: add to the kai_queue_* series a metric label LABEL valued by each queue's label KEY "
    "(repeatable)",
    "KEY=LABEL,...",
    repeatable=True,
)
QUEUE_LABEL_TO_DEFAULT_METRIC_VALUE: Final = Flag(
    "queue-label-to-default-metric-value",
    TEXT,
    "queue controller: the metric label's value for a queue without the label KEY (repeatable)",
    "KEY=VALUE,...",
    repeatable=True,
)

# --- the node-scale-adjuster ---

SCALE_ADJUST_NAMESPACE: Final = Flag(
    "scale-adjust-namespace", TEXT, "namespace of the scaling pods", "NS", aliases=("--scaling-pod-namespace",)
)
SCALING_POD_IMAGE: Final = Flag("scaling-pod-image", TEXT, "image of the scaling pods' one container", "IMAGE")
GPU_MEMORY_TO_FRACTION_RATIO: Final = Flag(
    "gpu-memory-to-fraction-ratio",
    FLOAT,
    "GPU portion a gpu-memory pod counts for (its node, and so its GPU memory, is not known yet)",
    "RATIO",
)
COOL_DOWN_SECONDS: Final = Flag(
    "cool-down-seconds",
    FLOAT,
    "after a node took a scaling pod, its pods get this long to be placed before they count again",
    "SECONDS",
)

# --- `kai run`: the components it runs besides the four ---

ADMISSION: Final = Flag(
    "admission",
    BOOL,
    "also serve the admission webhooks (self-managed certificates in the --leader-elect-namespace; see "
    "`kai admission` for the other settings)",
    "BOOL",
)
NODE_SCALE_ADJUSTER: Final = Flag(
    "node-scale-adjuster",
    BOOL,
    "also run the node-scale-adjuster (see `kai node-scale-adjuster` for its settings)",
    "BOOL",
)

# --- the admission webhooks ---

WEBHOOK_ADDR: Final = Flag("webhook-addr", INT, "HTTPS port of the admission webhooks", "PORT", ("--webhook-port",))
CERT_DIR: Final = Flag("cert-dir", TEXT, "directory with tls.crt and tls.key to serve", "DIR")
SERVICE_NAME: Final = Flag("service-name", TEXT, "webhook Service name", "NAME")
SECRET_NAME: Final = Flag("secret-name", TEXT, "Secret holding the self-managed certificate", "NAME")
WEBHOOK_CONFIGURATION_NAME: Final = Flag(
    "webhook-configuration-name",
    TEXT,
    "name of the Validating/MutatingWebhookConfiguration to inject the CA into",
    "NAME",
)
GPU_SHARING_ENABLED: Final = Flag(
    "gpu-sharing-enabled",
    BOOL,
    "admission webhook: accept fractional GPU requests (gpu-fraction, gpu-memory)",
    "BOOL",
)
BLOCK_NVIDIA_VISIBLE_DEVICES: Final = Flag(
    "block-nvidia-visible-devices",
    BOOL,
    "set NVIDIA_VISIBLE_DEVICES=void on containers that ask for no GPU",
    "BOOL",
)
# `--runtime-class-name` was this flag's name under `kai admission`; `--gpu-pod-runtime-class-name` is KAI's former
# name of it.
GPU_FRACTION_RUNTIME_CLASS_NAME: Final = Flag(
    "gpu-fraction-runtime-class-name",
    TEXT,
    'runtime class set on fractional pods that have none; "" = off',
    "NAME",
    ("--runtime-class-name", "--gpu-pod-runtime-class-name"),
)

# --- where KAI is installed (the operator, the webhooks' Service and Secret, `kai manifests`) ---

NAMESPACE: Final = Flag("namespace", TEXT, "namespace of KAI's components", "NS")
IMAGE: Final = Flag("image", TEXT, "image of KAI's components", "REPO:TAG")
CREATE_DEFAULTS: Final = Flag(
    "create-defaults",
    BOOL,
    "create the Config kai-config and the SchedulingShard default when they are missing at start",
    "BOOL",
)
