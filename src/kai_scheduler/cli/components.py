"""`kai scheduler|binder|podgrouper|controllers|node-scale-adjuster|run`: the components as long-running
processes against an API server (see docs/components.md).

Flags keep KAI's names. Values are checked here, after parsing, so a bad one is one line and exit 2:
durations in Go syntax ("1s", "500ms"), booleans as Go reads them (`--flag`, `--flag=false`, `--flag=1`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kai_scheduler.api import constants
from kai_scheduler.api.duration import DurationError, format_duration, parse_duration
from kai_scheduler.api.errors import UserError
from kai_scheduler.binder import reservation
from kai_scheduler.cli import connection
from kai_scheduler.framework.config import FIXED_FLAGS, ConfigError, Flags, check_supported
from kai_scheduler.runtime.leader import LeaderConfig
from kai_scheduler.runtime.options import (
    PLUGIN_SERVER_PORT,
    BinderOptions,
    GrouperOptions,
    ProcessOptions,
    ScaleAdjusterOptions,
    SchedulerOptions,
    in_cluster_namespace,
)
from kai_scheduler.store.metric_names import check_namespace

if TYPE_CHECKING:
    from kai_scheduler.admission import pod as admission_pod

Parser = argparse.ArgumentParser

_FLAG_HELP = {
    "scheduler_name": "pods with this schedulerName are scheduled",
    "schedule_period": "time between the end of one scheduling cycle and the start of the next",
    "nodepool_label_key": "label key of node pools",
    "partition_label_value": "node pool (value of the node-pool label) this scheduler serves; empty: unlabelled",
    "queue_label_key": "label key naming a workload's queue",
    "restrict_node_scheduling": "only schedule on nodes labelled as CPU or GPU workers",
    "max_consolidation_preemptees": "most pods one consolidation may move",
    "detailed_fit_errors": "record per-node fit errors on PodGroups",
    "update_pod_eviction_condition": "set the DisruptionTarget condition on evicted pods",
    "use_scheduling_signatures": "group identical pending pods when searching",
    "full_hierarchy_fairness": "divide resources over the whole queue tree (false: leaf queues under one root)",
    "allow_consolidating_reclaim": "let reclaim move pods instead of evicting them",
    "reclaim_protects_deserved": "reclaim passes over a victim that would take its queue below its deserved "
    "quota (not KAI's rule; off by default)",
    "pipelined_claims": "a pipelined pod claims its node (nominatedNodeName) and allocate serves claimed jobs "
    "first (not KAI's; off by default: KAI's order)",
    "preemptor_placed_first": "a victim search's simulation places the preemptor before any victim lands again "
    "(not KAI's; false: KAI's queue order)",
    "default_staleness_grace_period": "how long a gang may run below its minimum before it is evicted",
    "stuck_in_releasing_threshold": "after this a terminating pod counts as stuck in releasing",
    "queue_access_control": "a job whose queue does not admit its namespace (spec.allowedNamespaces, "
    "spec.allowedNamespaceSelector) is unschedulable (not KAI's; off by default)",
}
_GO_DURATION = "DURATION"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _component(
        sub,
        "scheduler",
        "run the scheduler: a scheduling cycle every --schedule-period",
        [_scheduler_flags, _dashboard_flag],
    )
    _component(sub, "binder", "run the binder: bind the pods of BindRequests", [_binder_flags, _period("0.2s")])
    _component(
        sub,
        "podgrouper",
        "run the pod grouper: PodGroups for the pods of the KAI scheduler",
        [_period("0.5s"), _grouper_flags, _selector_flags],
    )
    _component(
        sub,
        "controllers",
        "run the PodGroup and Queue status controllers (and create the default queues)",
        [_period("0.5s"), _grouper_flags, _controller_flags, _queue_metrics_namespace_flag],
    )
    _component(
        sub,
        "node-scale-adjuster",
        "run the node-scale-adjuster: whole-GPU scaling pods for unschedulable fractional-GPU pods, "
        "so that a cluster autoscaler sees their demand",
        [_period("1s"), _scheduler_name_flag, _scale_adjuster_flags],
    )
    _component(
        sub,
        "run",
        "run the scheduler, binder, pod grouper and controllers in one process "
        "(the admission webhooks with --admission, the node-scale-adjuster with --node-scale-adjuster)",
        [
            _scheduler_flags,
            _binder_flags,
            _run_period,
            _controller_flags,
            _migration_flags,
            _knative_flag,
            _selector_flags,
            _admission_flag,
            _run_scale_adjuster_flags,
            _dashboard_flag,
        ],
    )


def _component(sub: Any, name: str, summary: str, groups: list[Callable[[Parser], None]]) -> None:
    p: Parser = sub.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}, against the API server of the "
        "kubeconfig (or the in-cluster service account), with /healthz, /readyz and /metrics on "
        "--listen-address. Durations take Go syntax (500ms, 2s, 1m); booleans --flag or --flag=false.",
    )
    _process_flags(p)
    for group in groups:
        group(p)
    p.set_defaults(run=_runner(name))


def _value(p: Parser, flag: str, default: str, help_text: str, metavar: str = "VALUE") -> None:
    p.add_argument(flag, default=None, metavar=metavar, help=f"{help_text} (default {default})")


def _bool(p: Parser, flag: str, default: bool, help_text: str) -> None:
    p.add_argument(
        flag,
        nargs="?",
        const="true",
        default=None,
        metavar="BOOL",
        help=f"{help_text} (default {str(default).lower()})",
    )


def _process_flags(p: Parser) -> None:
    defaults = ProcessOptions()
    connection.add_flags(p, qps=defaults.qps, burst=defaults.burst)
    _value(p, "--listen-address", '":8080"', "address of /healthz, /readyz and /metrics", "ADDR")
    _bool(p, "--leader-elect", False, "run only while holding the component's Lease")
    _value(p, "--leader-elect-namespace", "the pod's namespace, else kai-scheduler", "namespace of the Leases", "NS")
    config = LeaderConfig()
    _value(
        p,
        "--leader-elect-lease-duration",
        format_duration(config.lease_duration),
        "how long a Lease holds without renewal",
        _GO_DURATION,
    )
    _value(
        p,
        "--leader-elect-renew-deadline",
        format_duration(config.renew_deadline),
        "the leader steps down when it could not renew for this long",
        _GO_DURATION,
    )
    _value(
        p,
        "--leader-elect-retry-period",
        format_duration(config.retry_period),
        "time between acquire and renew attempts",
        _GO_DURATION,
    )


def _scheduler_flags(p: Parser) -> None:
    p.add_argument(
        "--scheduler-conf",
        metavar="PATH",
        help="scheduler configuration (KAI's config.yaml, or its ConfigMap) (default: KAI's defaults)",
    )
    _value(
        p,
        "--metrics-namespace",
        "kai",
        "prefix of the scheduler's metric names (under kai run also the queue controller's); empty: none",
        "NAME",
    )
    _value(
        p,
        "--plugin-server-port",
        str(PLUGIN_SERVER_PORT),
        "port of the plugin server, on the interface of --listen-address: GET /get-snapshot answers snapshot.zip "
        "(the scheduler's view, replayed by `kai schedule snapshot.zip`) when the snapshot plugin is configured, "
        "GET /get-job-order the allocate order of pending jobs when the reflectjoborder plugin is; 0 = off",
        "PORT",
    )
    for field in dataclasses.fields(Flags):
        flag, default = "--" + field.name.replace("_", "-"), getattr(Flags(), field.name)
        help_text = _FLAG_HELP.get(field.name, field.name.replace("_", " "))
        if field.name in FIXED_FLAGS:
            help_text += f"; only {str(default).lower()} is supported"
        if isinstance(default, bool):
            _bool(p, flag, default, help_text)
        elif isinstance(default, float):
            _value(p, flag, format_duration(default), help_text, _GO_DURATION)
        else:
            _value(p, flag, str(default) or '""', help_text)


def _binder_flags(p: Parser) -> None:
    _value(
        p,
        "--max-concurrent-reconciles",
        "10",
        "BindRequests of whole-GPU pods bound at once (shared-GPU ones go one at a time)",
        "N",
    )
    _value(
        p,
        "--resource-reservation-namespace",
        constants.RESERVATION_NAMESPACE,
        "namespace of the GPU reservation pods",
        "NS",
    )
    _value(
        p,
        "--resource-reservation-pod-image",
        reservation.DEFAULT_IMAGE,
        "image of the GPU reservation pods (it reports the GPU index the device plugin gave it)",
        "IMAGE",
    )
    _value(
        p,
        "--resource-reservation-allocation-timeout",
        format_duration(reservation.DEFAULT_ALLOCATION_TIMEOUT),
        "how long a reservation pod may take to report its GPU index before the bind fails",
        _GO_DURATION,
    )
    _value(
        p,
        "--runtime-class-name",
        constants.DEFAULT_RUNTIME_CLASS_NAME,
        "RuntimeClass of the GPU reservation pods (under `kai run --admission`, also the one the webhook gives "
        'fractional pods); "" = none',
        "NAME",
    )
    _bool(
        p,
        "--hami-core-enabled",
        False,
        "write a shared-GPU pod's CUDA_DEVICE_MEMORY_LIMIT (its node's nvidia.com/gpu.memory times its portion, "
        "in MiB) into its shared-GPU ConfigMap, for HAMi-core to enforce (KAI's binder plugin hamicore; under "
        "`kai run --admission`, also the webhook's `kai admission --hami-core-enabled`)",
    )


def _period(default: str) -> Callable[[Parser], None]:
    def add(p: Parser) -> None:
        _value(p, "--reconcile-period", default, "time between reconciles", _GO_DURATION)

    return add


def _grouper_flags(p: Parser) -> None:
    _value(p, "--scheduler-name", constants.DEFAULT_SCHEDULER_NAME, "pods with this schedulerName are grouped")
    _value(p, "--queue-label-key", constants.DEFAULT_QUEUE_LABEL_KEY, "label key naming a workload's queue")
    _value(
        p,
        "--nodepool-label-key",
        constants.DEFAULT_NODE_POOL_LABEL_KEY,
        "label key of node pools (the queue of a `project` label is <project>-<pool>)",
    )
    _migration_flags(p)
    _knative_flag(p)


def _knative_flag(p: Parser) -> None:
    _bool(
        p,
        "--knative-gang-schedule",
        False,
        "pod grouper: the pods of a Knative Revision as one gang, minMember its autoscaling.knative.dev/min-scale, "
        "instead of one PodGroup per pod",
    )


def _selector_flags(p: Parser) -> None:
    p.add_argument(
        "--pod-label-selector",
        default=None,
        metavar="KEY=VALUE,...",
        help="pod grouper: group only the pods carrying all these labels (KAI's selective monitoring; default all)",
    )
    p.add_argument(
        "--namespace-label-selector",
        default=None,
        metavar="KEY=VALUE,...",
        help="pod grouper: group only the pods of namespaces carrying all these labels (default all)",
    )


def _migration_flags(p: Parser) -> None:
    p.add_argument(
        "--migrate-from",
        default=None,
        metavar="SCHEDULERS",
        help="also group pods written for these schedulers by their markers: volcano, yunikorn or both, "
        "comma-separated (not KAI's; default none; docs/migration.md)",
    )
    p.add_argument(
        "--queue-map",
        default=None,
        metavar="FILE",
        help="YAML map of their queue names to KAI Queue names, for --migrate-from (default: the name itself)",
    )


def _controller_flags(p: Parser) -> None:
    _bool(
        p,
        "--create-default-queues",
        True,
        "create the queues default-parent-queue and default-queue when "
        "they are missing, retrying until the Queue CRD and the admission webhook allow it",
    )
    p.add_argument(
        "--queue-label-to-metric-label",
        action="append",
        metavar="KEY=LABEL,...",
        help="queue controller: add to the kai_queue_* series a metric label LABEL valued by each queue's label KEY "
        "(repeatable; default none)",
    )
    p.add_argument(
        "--queue-label-to-default-metric-value",
        action="append",
        metavar="KEY=VALUE,...",
        help='queue controller: the metric label\'s value for a queue without the label KEY (repeatable; default "")',
    )


def _queue_metrics_namespace_flag(p: Parser) -> None:
    _value(p, "--metrics-namespace", "kai", "prefix of the queue controller's metric names; empty: none", "NAME")


def _scheduler_name_flag(p: Parser) -> None:
    _value(p, "--scheduler-name", constants.DEFAULT_SCHEDULER_NAME, "pods with this schedulerName are watched")


def _scale_adjuster_flags(p: Parser) -> None:
    defaults = ScaleAdjusterOptions().settings
    _value(p, "--scaling-pod-namespace", defaults.namespace, "namespace of the scaling pods", "NS")
    _value(p, "--scaling-pod-image", defaults.image, "image of the scaling pods' one container", "IMAGE")
    _value(
        p,
        "--gpu-memory-to-fraction-ratio",
        f"{defaults.gpu_memory_to_fraction_ratio:g}",
        "GPU portion a gpu-memory pod counts for (its node, and so its GPU memory, is not known yet)",
        "RATIO",
    )
    _value(
        p,
        "--cool-down-seconds",
        f"{defaults.cool_down_seconds:g}",
        "after a node took a scaling pod, its pods get this long to be placed before they count again",
        "SECONDS",
    )


def _run_scale_adjuster_flags(p: Parser) -> None:
    _bool(
        p,
        "--node-scale-adjuster",
        False,
        "also run the node-scale-adjuster (see `kai node-scale-adjuster` for its settings)",
    )
    _scale_adjuster_flags(p)


def _admission_flag(p: Parser) -> None:
    _bool(
        p,
        "--admission",
        False,
        "also serve the admission webhooks (self-managed certificates in the "
        "--leader-elect-namespace; see `kai admission` for the other settings)",
    )
    _value(p, "--webhook-port", "9443", "with --admission: the HTTPS port of the webhooks", "PORT")
    _bool(
        p, "--gpu-sharing-enabled", False, "with --admission: accept fractional GPU requests (gpu-fraction, gpu-memory)"
    )


def _dashboard_flag(p: Parser) -> None:
    _value(
        p,
        "--dashboard-address",
        '"" (off)',
        "also serve the read-only web dashboard (see `kai dashboard`) on this address, such as :8090; "
        "needs the dashboard extra: pip install 'kai-scheduler[dashboard]'",
        "ADDR",
    )


def _run_period(p: Parser) -> None:
    _value(
        p,
        "--reconcile-period",
        "0.2s for the binder, 0.5s for the pod grouper and controllers",
        "time between reconciles of the binder, pod grouper and controllers",
        _GO_DURATION,
    )


# --- from flags to options ---


def _runner(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from prometheus_client import CollectorRegistry

        from kai_scheduler.admission import service as admission_service
        from kai_scheduler.api.clock import SystemClock
        from kai_scheduler.runtime import components as builders
        from kai_scheduler.runtime.process import Process, connect, stop_on_signals
        from kai_scheduler.store import collector

        names: tuple[str, ...] = builders.NAMES if name == "run" else (name,)
        if name == "run" and _boolean(args, "node_scale_adjuster", False):
            names = (*names, "node-scale-adjuster")
        process_options = _process_options(args)
        registry = CollectorRegistry()
        clock = SystemClock()
        scheduler_options = _scheduler_options(args) if hasattr(args, "scheduler_conf") else None
        binder_options = _binder_options(args) if name in ("binder", "run") else None
        grouper_options = _grouper_options(args) if name not in ("scheduler", "binder", "node-scale-adjuster") else None
        scale_options = _scale_adjuster_options(args, name) if "node-scale-adjuster" in names else None
        store = connect(process_options)
        try:
            components = builders.build(
                names,
                store,
                clock,
                registry,
                scheduler_options=scheduler_options,
                binder_options=binder_options,
                grouper_options=grouper_options,
                scale_adjuster_options=scale_options,
            )
            stop = threading.Event()
            process = Process(components, store, process_options, registry, clock, stop)
            webhooks = None
            if name == "run" and _boolean(args, "admission", False):
                webhooks = admission_service.Service(
                    admission_service.Options(
                        namespace=process_options.leader_elect_namespace,
                        webhook_port=_number(args, "webhook_port", 9443, int),
                        pod=_run_pod_settings(args, scheduler_options, binder_options),
                    ),
                    store,
                    registry,
                )
                webhooks.start()
                process.server.add_readiness("admission", webhooks.is_ready)
            try:
                with stop_on_signals(stop), _dashboard(args, scheduler_options):
                    if "scheduler" not in names:
                        # Not under a scheduler: its collections follow its cycles (`Scheduler.run_once`), and with
                        # the start-up heap frozen its first full collections came sooner, over its whole cache
                        # (bench/README.md, "A second pass").
                        collector.freeze_startup()
                    return process.run()
            finally:
                if webhooks is not None:
                    webhooks.stop()
        finally:
            store.close()

    return run


def _run_pod_settings(
    args: argparse.Namespace, scheduler: SchedulerOptions | None, binder: BinderOptions | None
) -> admission_pod.PodSettings:
    """`kai run --admission`: the webhooks take the scheduler's names and the binder's runtime class and
    `--hami-core-enabled`, so that what the webhook wires and what the binder writes agree."""
    from kai_scheduler.admission import pod as admission_pod
    from kai_scheduler.runtime import components as builders

    sharing = _boolean(args, "gpu_sharing_enabled", False)
    hami_core = binder.hami_core_enabled if binder else False
    if scheduler is None:
        return admission_pod.PodSettings(gpu_sharing_enabled=sharing, hami_core_enabled=hami_core)
    flags = builders.scheduler_config(scheduler).flags
    return admission_pod.PodSettings(
        scheduler_name=flags.scheduler_name,
        queue_access_control=flags.queue_access_control,
        queue_label_key=flags.queue_label_key,
        gpu_sharing_enabled=sharing,
        hami_core_enabled=hami_core,
        runtime_class_name=binder.runtime_class_name if binder else constants.DEFAULT_RUNTIME_CLASS_NAME,
    )


@contextlib.contextmanager
def _dashboard(args: argparse.Namespace, options: SchedulerOptions | None) -> Iterator[None]:
    """With --dashboard-address, the dashboard of this process's cluster while inside (imported only then)."""
    address = getattr(args, "dashboard_address", None)
    if not address or options is None:
        yield
        return
    from kai_scheduler.runtime import components as builders
    from kai_scheduler.runtime.http import parse_address

    host, port = parse_address(address)
    try:
        from kai_scheduler.dashboard import serve
    except ImportError as err:
        raise UserError(
            f"--dashboard-address: the dashboard needs its extra: pip install 'kai-scheduler[dashboard]' ({err.name})"
        ) from None
    conn = _process_options(args)
    config = builders.scheduler_config(options)
    with serve.attach(conn.kubeconfig, conn.context, conn.qps, conn.burst, config) as target:
        server = serve.listen(target, host, port, flag="--dashboard-address")
        try:
            yield
        finally:
            server.stop()


def _process_options(args: argparse.Namespace) -> ProcessOptions:
    defaults = ProcessOptions()
    leader = LeaderConfig(
        lease_duration=_duration(args, "leader_elect_lease_duration", LeaderConfig().lease_duration),
        renew_deadline=_duration(args, "leader_elect_renew_deadline", LeaderConfig().renew_deadline),
        retry_period=_duration(args, "leader_elect_retry_period", LeaderConfig().retry_period),
    )
    conn = connection.parse(args, qps=defaults.qps, burst=defaults.burst)
    options = ProcessOptions(
        kubeconfig=conn.kubeconfig,
        context=conn.context,
        qps=conn.qps,
        burst=conn.burst,
        listen_address=args.listen_address or defaults.listen_address,
        leader_elect=_boolean(args, "leader_elect", False),
        leader_elect_namespace=args.leader_elect_namespace or in_cluster_namespace(),
        leader=leader,
    )
    if options.leader_elect:
        options.leader.validate()
    return options


def _scheduler_options(args: argparse.Namespace) -> SchedulerOptions:
    flags: dict[str, Any] = {}
    for field in dataclasses.fields(Flags):
        if getattr(args, field.name, None) is None:
            continue
        default = getattr(Flags(), field.name)
        if isinstance(default, bool):
            flags[field.name] = _boolean(args, field.name, default)
        elif isinstance(default, float):
            flags[field.name] = _duration(args, field.name, default)
        elif isinstance(default, int):
            flags[field.name] = _number(args, field.name, default, int)
        else:
            flags[field.name] = getattr(args, field.name)
    try:
        check_supported(dataclasses.replace(Flags(), **flags), spelling="--{}")
    except ConfigError as err:
        raise UserError(str(err)) from None
    namespace = _text(args, "metrics_namespace", "kai")
    try:
        check_namespace(namespace)
    except ValueError as err:
        raise UserError(f"--metrics-namespace: {err}") from None
    port = _number(args, "plugin_server_port", PLUGIN_SERVER_PORT, int)
    if not 0 <= port <= 65535:
        raise UserError(f"--plugin-server-port: want 0 (off) to 65535, got {port}")
    return SchedulerOptions(
        scheduler_conf=args.scheduler_conf,
        flags=flags,
        metrics_namespace=namespace,
        plugin_server_port=port,
    )


def _binder_options(args: argparse.Namespace) -> BinderOptions:
    defaults = BinderOptions()
    return BinderOptions(
        reconcile_period=_duration(args, "reconcile_period", defaults.reconcile_period),
        max_concurrent_reconciles=_number(args, "max_concurrent_reconciles", defaults.max_concurrent_reconciles, int),
        resource_reservation_namespace=args.resource_reservation_namespace or defaults.resource_reservation_namespace,
        resource_reservation_pod_image=args.resource_reservation_pod_image or defaults.resource_reservation_pod_image,
        resource_reservation_allocation_timeout=_duration(
            args, "resource_reservation_allocation_timeout", defaults.resource_reservation_allocation_timeout
        ),
        runtime_class_name=defaults.runtime_class_name if args.runtime_class_name is None else args.runtime_class_name,
        hami_core_enabled=_boolean(args, "hami_core_enabled", defaults.hami_core_enabled),
    )


def _grouper_options(args: argparse.Namespace) -> GrouperOptions:
    from kai_scheduler.runtime.components import queue_metric_labels

    defaults = GrouperOptions()
    options = GrouperOptions(
        reconcile_period=_duration(args, "reconcile_period", defaults.reconcile_period),
        scheduler_name=args.scheduler_name or defaults.scheduler_name,
        queue_label_key=args.queue_label_key or defaults.queue_label_key,
        node_pool_label_key=args.nodepool_label_key or defaults.node_pool_label_key,
        migrate_from=_migrate_from(getattr(args, "migrate_from", None)),
        queue_map=_queue_map(getattr(args, "queue_map", None)),
        create_default_queues=_boolean(args, "create_default_queues", defaults.create_default_queues),
        knative_gang_schedule=_boolean(args, "knative_gang_schedule", defaults.knative_gang_schedule),
        pod_label_selector=_match_labels(args, "pod_label_selector"),
        namespace_label_selector=_match_labels(args, "namespace_label_selector"),
        metrics_namespace=_text(args, "metrics_namespace", defaults.metrics_namespace),
        queue_label_to_metric_label=_string_map(args, "queue_label_to_metric_label"),
        queue_label_to_default_metric_value=_string_map(args, "queue_label_to_default_metric_value"),
    )
    queue_metric_labels(options)  # a bad label fails here, before connecting
    return options


def _scale_adjuster_options(args: argparse.Namespace, name: str) -> ScaleAdjusterOptions:
    from kai_scheduler.nodescaleadjuster.pods import Settings

    defaults = ScaleAdjusterOptions()
    settings = Settings(
        scheduler_name=args.scheduler_name or defaults.settings.scheduler_name,
        namespace=args.scaling_pod_namespace or defaults.settings.namespace,
        image=args.scaling_pod_image or defaults.settings.image,
        gpu_memory_to_fraction_ratio=_number(
            args, "gpu_memory_to_fraction_ratio", defaults.settings.gpu_memory_to_fraction_ratio, float
        ),
        cool_down_seconds=_number(args, "cool_down_seconds", defaults.settings.cool_down_seconds, float),
    )
    try:
        settings.check()
    except ValueError as err:
        raise UserError(str(err)) from None
    # `kai run` shares one --reconcile-period: the adjuster keeps its own default there.
    period = defaults.reconcile_period if name == "run" else _duration(args, "reconcile_period", 1.0)
    return ScaleAdjusterOptions(reconcile_period=period, settings=settings)


def _migrate_from(text: str | None) -> frozenset[str]:
    from kai_scheduler.podgrouper.foreign import SOURCES

    names = frozenset(n.strip() for n in (text or "").split(",") if n.strip())
    unknown = sorted(names - set(SOURCES))
    if unknown:
        raise UserError(f"--migrate-from: unknown scheduler {unknown[0]!r}; want {', '.join(SOURCES)}")
    return names


def _queue_map(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(f"--queue-map {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise UserError(f"--queue-map {path}: not YAML: {getattr(err, 'problem', None) or err}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in raw.items()):
        raise UserError(f"--queue-map {path}: want a map of their queue name to a KAI Queue name")
    return dict(raw)


def _string_map(args: argparse.Namespace, dest: str) -> dict[str, str]:
    """`key=value,key=value` given once or more (as Go's map flag of KAI's components: later keys win)."""
    out: dict[str, str] = {}
    for text in getattr(args, dest, None) or ():
        for item in text.split(",") if text else ():
            key, sep, value = item.partition("=")
            if not sep:
                raise UserError(f"{_flag(dest)}: invalid map item {item!r}: want key=value")
            out[key] = value
    return out


def _match_labels(args: argparse.Namespace, dest: str) -> dict[str, str]:
    """KAI's selector flags: `key=value,key=value` (absent or "": none)."""
    from kai_scheduler.api.selectors import parse_match_labels

    try:
        return parse_match_labels(getattr(args, dest, None) or "")
    except ValueError as err:
        raise UserError(f"{_flag(dest)}: {err}") from None


def _text(args: argparse.Namespace, dest: str, default: str) -> str:
    """The flag's value, "" included; the default when not given."""
    text = getattr(args, dest, None)
    return default if text is None else str(text)


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _duration(args: argparse.Namespace, dest: str, default: float) -> float:
    text = getattr(args, dest, None)
    if text is None:
        return default
    try:
        return parse_duration(text)
    except DurationError as err:
        raise UserError(f"{_flag(dest)}: {err}") from None


def _boolean(args: argparse.Namespace, dest: str, default: bool) -> bool:
    text = getattr(args, dest, None)
    if text is None:
        return default
    return connection.boolean(_flag(dest), text)


def _number(args: argparse.Namespace, dest: str, default: Any, kind: type[int] | type[float]) -> Any:
    text = getattr(args, dest, None)
    if text is None:
        return default
    return connection.number(_flag(dest), text, kind)


# Shared with the other long-running commands (`kai operator`).
process_flags = _process_flags
value_flag = _value
bool_flag = _bool
process_options = _process_options
duration_flag = _duration
boolean_flag = _boolean
