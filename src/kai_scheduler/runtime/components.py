"""Each component built from its options over one store: a name, a Lease name, a period and a step.

Building reads files and validates configuration but never calls the API server, so a server that is down
at startup is not a startup error: the first steps fail, and the runner retries them. The components `build`
makes read the store through one set of shared informers (`store.informer`): `kai run` lists and watches each
resource once, however many of its components read it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.binder import binder as binders
from kai_scheduler.binder.binder import Binder
from kai_scheduler.binder.reservation import ReservationConfig
from kai_scheduler.controllers import podgroup_status
from kai_scheduler.controllers.default_queues import DefaultQueues
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import MetricLabels, QueueStatusController
from kai_scheduler.framework import config as configs
from kai_scheduler.nodescaleadjuster.adjuster import NodeScaleAdjuster
from kai_scheduler.podgrouper import context as grouping
from kai_scheduler.podgrouper import grouper as grouping_controller
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.runtime.fence import Fenced
from kai_scheduler.runtime.http import Endpoint, Reply
from kai_scheduler.runtime.loop import Outcome
from kai_scheduler.runtime.options import BinderOptions, GrouperOptions, ScaleAdjusterOptions, SchedulerOptions
from kai_scheduler.scheduler import capture, config_file
from kai_scheduler.scheduler import job_order as reflected
from kai_scheduler.scheduler.metrics import SchedulerMetrics
from kai_scheduler.scheduler.scheduler import Scheduler, load_config, usage_source
from kai_scheduler.store import metrics
from kai_scheduler.store.cache import SCHEDULER_RESOURCES
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import ClusterStore
from kai_scheduler.store.metric_names import check_namespace
from kai_scheduler.store.writers import Writers

log = logging.getLogger(__name__)

NAMES = ("scheduler", "binder", "podgrouper", "controllers")
# Components `kai run` starts only when asked (`--node-scale-adjuster`).
OPTIONAL = ("node-scale-adjuster",)


@dataclass(frozen=True, slots=True)
class Component:
    name: str  # "scheduler"
    lease: str  # its Lease under leader election: "kai-scheduler"
    period: float  # seconds between the end of one step and the start of the next
    step: Callable[[], object]
    # Resources whose change starts the next step early (with an Activity), not sooner than min_gap after the
    # last one ended; see runtime.loop.
    triggers: tuple[str, ...] = ()
    min_gap: float = 0.0
    # GET endpoints served on the plugin server at `plugin_port` (0: none served), as KAI's plugins register them.
    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)
    plugin_port: int = 0
    # The store its writes go through, refused once its lease lapsed (runtime.fence); `build` sets it.
    fence: Fenced | None = None


def scheduler_config(options: SchedulerOptions) -> configs.SchedulerConfig:
    """The file's configuration (KAI's defaults when none) with the command line's flags over its own."""
    if not options.scheduler_conf:
        config = load_config(None)
    else:
        try:
            source = config_file.read(options.scheduler_conf)
        except ValueError as err:
            raise UserError(f"--scheduler-conf {err}") from None
        config = config_file.load(source)
    flags = dataclasses.replace(config.flags, **options.flags)
    configs.check_supported(flags, spelling="--{}")
    return dataclasses.replace(config, flags=flags)


def scheduler(
    store: ClusterStore,
    options: SchedulerOptions,
    registry: CollectorRegistry,
    clock: Clock,
    informers: Informers | None = None,
) -> Component:
    """The scheduler; with --scheduler-conf it rereads the file between cycles when its content changed (a bad new
    file is logged and the running configuration kept; new flags or usageDBConfig in it start a fresh scheduler
    core, anything else is taken in place)."""
    config = scheduler_config(options)
    if not 0 <= options.plugin_server_port <= 65535:
        raise UserError(f"--plugin-server-port: want 0 (off) to 65535, got {options.plugin_server_port}")
    if config.flags.schedule_period <= 0:
        raise UserError(f"--schedule-period: must be positive, got {config.flags.schedule_period}s")
    try:
        check_namespace(options.metrics_namespace)
    except ValueError as err:
        raise UserError(f"--metrics-namespace: {err}") from None
    shared = informers if informers is not None else Informers(store)  # a reloaded core's cache reads them too

    def make_core(config: configs.SchedulerConfig) -> Scheduler:
        usage = usage_source(config, clock, offline=False)
        return Scheduler(store, config, clock, usage, writers=WRITERS, informers=shared)

    core = make_core(config)
    metrics = SchedulerMetrics(registry, options.metrics_namespace, config.flags.partition_label_value)
    metrics.configure(config)
    watcher = config_file.Watcher(options.scheduler_conf) if options.scheduler_conf else None
    # Which configuration this replica runs, once at start (and again at each reload): after a rolling change of
    # the ConfigMap an operator compares the replicas' lines.
    log.info(
        "scheduler configuration",
        extra={
            "file": options.scheduler_conf or "(none: KAI's defaults)",
            "sha256": watcher.digest if watcher is not None else "",
            "actions": list(config.actions),
            "plugins": len(config.plugins()),
        },
    )

    def reload() -> None:
        nonlocal core, config
        try:
            new = scheduler_config(options)
        except ValueError as err:
            log.warning(
                "scheduler configuration changed but cannot be used; keeping the running one",
                extra={"reason": str(err)},
            )
            return
        if new.flags == config.flags and new.usage_db_config == config.usage_db_config:
            core.reconfigure(new)
        else:
            core = make_core(new)
        config = new
        metrics.configure(new)
        log.info(
            "scheduler configuration reloaded",
            extra={
                "file": options.scheduler_conf,
                "sha256": watcher.digest if watcher is not None else "",
                "actions": list(new.actions),
                "plugins": len(new.plugins()),
            },
        )

    def step() -> Outcome | None:
        if watcher is not None and watcher.changed():
            reload()
        result = core.run_once()
        metrics.record(result)
        return Outcome.WRITES_REFUSED if result.write_errors else None

    def get_snapshot() -> Reply:
        """The `snapshot` plugin's endpoint: the running configuration decides whether it is there."""
        current = core
        if not capture.enabled(current.config):
            return Reply(404, b"404 page not found: the snapshot plugin is not in the scheduler configuration\n")
        data = capture.snapshot_zip(current)
        if data is None:
            return Reply(503, b"no scheduling cycle has run yet (a standby replica, or starting): nothing to capture\n")
        log.info("snapshot served", extra={"bytes": len(data)})
        return Reply(200, data, "application/zip", {"Content-Disposition": "attachment; filename=snapshot.zip"})

    def get_job_order() -> Reply:
        """The `reflectjoborder` plugin's endpoint: the order allocate took jobs in as the last session opened."""
        current = core
        if not reflected.enabled(current.config):
            return Reply(404, b"404 page not found: the reflectjoborder plugin is not in the scheduler configuration\n")
        order = current.job_order
        if order is None:
            return Reply(503, b"Job order data not ready\n")
        return Reply(200, reflected.encode(order), "application/json")

    return Component(
        "scheduler",
        scheduler_lease(config.flags.partition_label_value),
        config.flags.schedule_period,
        step,
        triggers=SCHEDULER_RESOURCES,
        min_gap=min(SCHEDULER_MIN_GAP, config.flags.schedule_period),
        endpoints={SNAPSHOT_PATH: get_snapshot, reflected.PATH: get_job_order},
        plugin_port=options.plugin_server_port,
    )


SNAPSHOT_PATH = "/get-snapshot"


def scheduler_lease(partition: str) -> str:
    """The scheduler's Lease: one per node pool, so the schedulers of several shards each lead their own."""
    if not partition:
        return "kai-scheduler"
    name = re.sub(r"[^a-z0-9.-]+", "-", partition.lower()).strip("-.")
    return f"kai-scheduler-{name}"[:253]


# The shortest time between two steps when changes keep coming: a change starts the next step early, and
# what arrives during the gap is handled together. A scheduling cycle costs more than a reconcile.
SCHEDULER_MIN_GAP = 0.1
RECONCILE_MIN_GAP = 0.02

# Threads that write at once where a step writes for many objects (the pod grouper's PodGroups and pod
# annotations, the scheduler's BindRequests): against an API server every write is one round trip.
WRITERS = 10

RESERVATION_COLLECT_SECONDS = 10.0  # each collection is three LISTs against the API server


def binder(
    store: ClusterStore,
    options: BinderOptions,
    clock: Clock,
    registry: CollectorRegistry | None = None,
    informers: Informers | None = None,
) -> Component:
    _positive("--reconcile-period", options.reconcile_period)
    _positive("--resource-reservation-allocation-timeout", options.resource_reservation_allocation_timeout)
    core = Binder(
        store,
        clock,
        ReservationConfig(
            namespace=options.resource_reservation_namespace,
            runtime_class=options.runtime_class_name,
            image=options.resource_reservation_pod_image,
            service_account=options.resource_reservation_service_account,
            resources=options.resource_reservation_pod_resources,
            pod_security_context=options.resource_reservation_pod_security_context,
            container_security_context=options.resource_reservation_container_security_context,
            allocation_timeout=options.resource_reservation_allocation_timeout,
        ),
        collect_every=RESERVATION_COLLECT_SECONDS,
        concurrency=options.max_concurrent_reconciles,
        events=True,
        work=metrics.controller(registry, binders.CONTROLLER, options.max_concurrent_reconciles),
        hami_core=options.hami_core_enabled,
        informers=informers,
    )
    return Component(
        "binder",
        "kai-binder",
        options.reconcile_period,
        core.reconcile,
        triggers=("bindrequests",),
        min_gap=RECONCILE_MIN_GAP,
    )


def podgrouper(
    store: ClusterStore,
    options: GrouperOptions,
    clock: Clock,
    registry: CollectorRegistry | None = None,
    informers: Informers | None = None,
) -> Component:
    _positive("--reconcile-period", options.reconcile_period)
    config = grouping.Config(
        scheduler_name=options.scheduler_name,
        queue_label_key=options.queue_label_key,
        node_pool_label_key=options.node_pool_label_key,
        migrate_from=options.migrate_from,
        queue_map=options.queue_map,
        knative_gang_schedule=options.knative_gang_schedule,
        defaults_configmap_namespace=options.defaults_configmap_namespace,
        defaults_configmap_name=options.defaults_configmap_name,
        pod_label_selector=options.pod_label_selector,
        namespace_label_selector=options.namespace_label_selector,
    )
    writers = _writers(options.grouper_writers)
    work = metrics.controller(registry, grouping_controller.CONTROLLER, writers)
    grouper = PodGrouper(store, config, concurrency=writers, clock=clock, work=work, informers=informers)
    return Component(
        "podgrouper",
        "kai-podgrouper",
        options.reconcile_period,
        grouper.reconcile,
        triggers=("pods", "podgroups", "priorityclasses"),
        min_gap=RECONCILE_MIN_GAP,
    )


def controllers(
    store: ClusterStore,
    options: GrouperOptions,
    registry: CollectorRegistry,
    clock: Clock,
    informers: Informers | None = None,
) -> Component:
    """The default queues until they exist (`--create-default-queues`), the PodGroup status controller, then the
    Queue status controller (which sums PodGroup statuses)."""
    _positive("--reconcile-period", options.reconcile_period)
    defaults = DefaultQueues(store, clock) if options.create_default_queues else None
    shared = informers if informers is not None else Informers(store)
    concurrency = _writers(options.max_concurrent_reconciles)
    # One pool for both: the Queue pass runs after the PodGroup pass, never beside it.
    writers = Writers(concurrency, "kai-status")
    podgroups = PodGroupStatusController(
        store,
        work=metrics.controller(registry, podgroup_status.CONTROLLER, concurrency),
        informers=shared,
        writers=writers,
    )
    queues = QueueStatusController(
        store,
        registry,
        metrics_namespace=options.metrics_namespace,
        metric_labels=queue_metric_labels(options),
        informers=shared,
        writers=writers,
    )

    def step() -> None:
        if defaults is not None:
            defaults.ensure()
        podgroups.reconcile()
        queues.reconcile()

    return Component(
        "controllers",
        "kai-controllers",
        options.reconcile_period,
        step,
        triggers=("pods", "podgroups", "bindrequests", "priorityclasses", "queues"),
        min_gap=RECONCILE_MIN_GAP,
    )


def queue_metric_labels(options: GrouperOptions) -> MetricLabels:
    """The queue controller's extra metric labels; a bad one is a UserError naming its flag."""
    try:
        check_namespace(options.metrics_namespace)
    except ValueError as err:
        raise UserError(f"--metrics-namespace: {err}") from None
    try:
        return MetricLabels(options.queue_label_to_metric_label, options.queue_label_to_default_metric_value)
    except ValueError as err:
        raise UserError(f"--queue-label-to-metric-label: {err}") from None


def node_scale_adjuster(
    store: ClusterStore,
    options: ScaleAdjusterOptions,
    registry: CollectorRegistry,
    clock: Clock,
    informers: Informers | None = None,
) -> Component:
    """Scaling pods for unschedulable fractional-GPU pods (KAI `nodescaleadjuster`)."""
    _positive("--reconcile-period", options.reconcile_period)
    try:
        core = NodeScaleAdjuster(store, clock, options.settings, registry, informers)
    except ValueError as err:
        raise UserError(str(err)) from None
    return Component(
        "node-scale-adjuster",
        "kai-node-scale-adjuster",
        options.reconcile_period,
        core.reconcile,
        triggers=("pods",),
        min_gap=RECONCILE_MIN_GAP,
    )


def _positive(flag: str, seconds: float) -> None:
    if seconds <= 0:
        raise UserError(f"{flag}: must be positive, got {seconds}s")


def _writers(count: int) -> int:
    if count < 1:
        raise UserError(f"--max-concurrent-reconciles: must be at least 1, got {count}")
    return count


def build(
    names: Sequence[str],
    store: ClusterStore,
    clock: Clock,
    registry: CollectorRegistry,
    *,
    scheduler_options: SchedulerOptions | None = None,
    binder_options: BinderOptions | None = None,
    grouper_options: GrouperOptions | None = None,
    scale_adjuster_options: ScaleAdjusterOptions | None = None,
) -> list[Component]:
    """The named components (of `NAMES` and `OPTIONAL`), in that order, reading `store` through one set of shared
    informers; each writes through a `Fenced` store of its own."""
    known = (*NAMES, *OPTIONAL)
    unknown = set(names) - set(known)
    if unknown:
        raise UserError(f"unknown component {sorted(unknown)[0]!r}; known: {', '.join(known)}")
    grouper_options = grouper_options or GrouperOptions()
    informers = Informers(store, first_from_cache=True, lists_ahead=True)
    builders: dict[str, Callable[[Fenced], Component]] = {
        "scheduler": lambda s: scheduler(s, scheduler_options or SchedulerOptions(), registry, clock, informers),
        "binder": lambda s: binder(s, binder_options or BinderOptions(), clock, registry, informers),
        "podgrouper": lambda s: podgrouper(s, grouper_options, clock, registry, informers),
        "controllers": lambda s: controllers(s, grouper_options, registry, clock, informers),
        "node-scale-adjuster": lambda s: node_scale_adjuster(
            s, scale_adjuster_options or ScaleAdjusterOptions(), registry, clock, informers
        ),
    }
    built = []
    for name in known:
        if name in names:
            fence = Fenced(store)
            built.append(dataclasses.replace(builders[name](fence), fence=fence))
    return built
