"""`kai scheduler|binder|podgrouper|controllers|node-scale-adjuster|run`: the components as long-running
processes against an API server (see docs/components.md).

Their flags are `api.flags`' (KAI's names), each command stating its default: durations in Go syntax ("1s",
"500ms"), booleans as Go reads them (`--flag`, `--flag=false`, `--flag=1`). What a value means together with the
others (a metric name, a label map, a port's range) is checked here, after parsing: one line and exit 2 too.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kai_scheduler.admission import defaults as admission_defaults
from kai_scheduler.api import constants, flags, reservation_pod
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import arguments, process_flags
from kai_scheduler.framework.config import FIXED_FLAGS, ConfigError, Flags, check_supported
from kai_scheduler.runtime.options import (
    PLUGIN_SERVER_PORT,
    BinderOptions,
    GrouperOptions,
    ScaleAdjusterOptions,
    SchedulerOptions,
)
from kai_scheduler.store.metric_names import check_namespace

if TYPE_CHECKING:
    from kai_scheduler.admission import pod as admission_pod

Parser = argparse.ArgumentParser

_MANY_RECONCILERS = "0.2s for the binder, 0.5s for the pod grouper and controllers"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _component(
        sub,
        "scheduler",
        "run the scheduler: a scheduling cycle every --schedule-period",
        [_scheduler_flags, _dashboard_flag],
    )
    _component(
        sub, "binder", "run the binder: bind the pods of BindRequests", [_binder_flags, _period(BinderOptions())]
    )
    _component(
        sub,
        "podgrouper",
        "run the pod grouper: PodGroups for the pods of the KAI scheduler",
        [_period(GrouperOptions()), _grouper_flags, _grouper_concurrency_flag, _selector_flags],
    )
    _component(
        sub,
        "controllers",
        "run the PodGroup and Queue status controllers (and create the default queues)",
        [_period(GrouperOptions()), _grouper_flags, _controller_flags, _concurrency_flag, _metrics_namespace_flag],
    )
    _component(
        sub,
        "node-scale-adjuster",
        "run the node-scale-adjuster: whole-GPU scaling pods for unschedulable fractional-GPU pods, "
        "so that a cluster autoscaler sees their demand",
        [_period(ScaleAdjusterOptions()), _scheduler_name_flag, _scale_adjuster_flags],
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
            _grouping_flags,
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
    process_flags.add(p, p)
    for group in groups:
        group(p)
    p.set_defaults(run=_runner(name), component=name)


def _scheduler_flags(p: Parser) -> None:
    arguments.add(p, flags.SCHEDULER_CONF, None, shown="KAI's defaults")
    arguments.add(p, flags.METRICS_NAMESPACE, SchedulerOptions().metrics_namespace)
    arguments.add(p, flags.PLUGIN_SERVER_PORT, PLUGIN_SERVER_PORT)
    # Not given, a flag leaves the configuration file's value: its default is the configuration's.
    defaults = Flags()
    for flag in flags.SCHEDULING:
        default = getattr(defaults, flag.dest)
        shown = flag.kind.show(default)
        if flag.dest in FIXED_FLAGS:
            shown += f"; only {shown} is supported"
        arguments.add(p, flag, None, shown=shown)


def _binder_flags(p: Parser) -> None:
    defaults = BinderOptions()
    _concurrency_flag(p)
    arguments.add(p, flags.RESOURCE_RESERVATION_NAMESPACE, defaults.resource_reservation_namespace)
    arguments.add(p, flags.RESOURCE_RESERVATION_SERVICE_ACCOUNT, defaults.resource_reservation_service_account)
    arguments.add(p, flags.RESOURCE_RESERVATION_POD_IMAGE, defaults.resource_reservation_pod_image)
    arguments.add(p, flags.RESOURCE_RESERVATION_POD_RESOURCES, None, shown="none")
    arguments.add(p, flags.RESOURCE_RESERVATION_POD_SECURITY_CONTEXT, None, shown="none")
    arguments.add(p, flags.RESOURCE_RESERVATION_CONTAINER_SECURITY_CONTEXT, None, shown="none")
    arguments.add(p, flags.RESOURCE_RESERVATION_ALLOCATION_TIMEOUT, defaults.resource_reservation_allocation_timeout)
    arguments.add(p, flags.RUNTIME_CLASS_NAME, defaults.runtime_class_name)
    arguments.add(p, flags.HAMI_CORE_ENABLED, defaults.hami_core_enabled)


def _concurrency_flag(p: Parser) -> None:
    """`kai binder`, `kai controllers` and `kai run` (where it sets both): one default."""
    arguments.add(p, flags.MAX_CONCURRENT_RECONCILES, BinderOptions().max_concurrent_reconciles)


def _grouper_concurrency_flag(p: Parser) -> None:
    """`kai podgrouper`'s: its own default (`kai run`'s flag leaves the grouper's writers at that default)."""
    arguments.add(p, flags.MAX_CONCURRENT_RECONCILES, GrouperOptions().grouper_writers)


def _period(defaults: BinderOptions | GrouperOptions | ScaleAdjusterOptions) -> Callable[[Parser], None]:
    def add(p: Parser) -> None:
        arguments.add(p, flags.RECONCILE_PERIOD, defaults.reconcile_period)

    return add


def _run_period(p: Parser) -> None:
    arguments.add(p, flags.RECONCILE_PERIOD, None, shown=_MANY_RECONCILERS)


def _grouper_flags(p: Parser) -> None:
    defaults = GrouperOptions()
    arguments.add(p, flags.SCHEDULER_NAME, defaults.scheduler_name)
    arguments.add(p, flags.QUEUE_LABEL_KEY, defaults.queue_label_key)
    arguments.add(p, flags.NODEPOOL_LABEL_KEY, defaults.node_pool_label_key)
    _migration_flags(p)
    _grouping_flags(p)


def _grouping_flags(p: Parser) -> None:
    arguments.add(p, flags.KNATIVE_GANG_SCHEDULE, GrouperOptions().knative_gang_schedule)
    arguments.add(p, flags.DEFAULT_PRIORITIES_CONFIGMAP_NAME, None, shown="none")
    arguments.add(p, flags.DEFAULT_PRIORITIES_CONFIGMAP_NAMESPACE, None, shown="none")


def _selector_flags(p: Parser) -> None:
    arguments.add(p, flags.POD_LABEL_SELECTOR, None, shown="all")
    arguments.add(p, flags.NAMESPACE_LABEL_SELECTOR, None, shown="all")


def _migration_flags(p: Parser) -> None:
    arguments.add(p, flags.MIGRATE_FROM, None, shown="none")
    arguments.add(p, flags.QUEUE_MAP, None, shown="the name itself")


def _controller_flags(p: Parser) -> None:
    arguments.add(p, flags.CREATE_DEFAULT_QUEUES, GrouperOptions().create_default_queues)
    arguments.add(p, flags.QUEUE_LABEL_TO_METRIC_LABEL, None, shown="none")
    arguments.add(p, flags.QUEUE_LABEL_TO_DEFAULT_METRIC_VALUE, None, shown='""')


def _metrics_namespace_flag(p: Parser) -> None:
    arguments.add(p, flags.METRICS_NAMESPACE, GrouperOptions().metrics_namespace)


def _scheduler_name_flag(p: Parser) -> None:
    arguments.add(p, flags.SCHEDULER_NAME, ScaleAdjusterOptions().settings.scheduler_name)


def _scale_adjuster_flags(p: Parser) -> None:
    defaults = ScaleAdjusterOptions().settings
    arguments.add(p, flags.SCALE_ADJUST_NAMESPACE, defaults.namespace)
    arguments.add(p, flags.SCALING_POD_IMAGE, defaults.image)
    arguments.add(p, flags.GPU_MEMORY_TO_FRACTION_RATIO, defaults.gpu_memory_to_fraction_ratio)
    arguments.add(p, flags.COOL_DOWN_SECONDS, float(defaults.cool_down_seconds))


def _run_scale_adjuster_flags(p: Parser) -> None:
    arguments.add(p, flags.NODE_SCALE_ADJUSTER, False)
    _scale_adjuster_flags(p)


def _admission_flag(p: Parser) -> None:
    arguments.add(p, flags.ADMISSION, False)
    arguments.add(p, flags.WEBHOOK_ADDR, admission_defaults.DEFAULT_PORT)
    arguments.add(p, flags.GPU_SHARING_ENABLED, False)
    # Its alias --runtime-class-name is the binder's flag here (the reservation pods').
    arguments.add(p, flags.GPU_FRACTION_RUNTIME_CLASS_NAME, constants.DEFAULT_RUNTIME_CLASS_NAME, aliases=False)


def _dashboard_flag(p: Parser) -> None:
    arguments.add(p, flags.DASHBOARD_ADDRESS, None, shown='"", off')


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
        if name == "run" and args.node_scale_adjuster:
            names = (*names, "node-scale-adjuster")
        process_options = process_flags.options(args)
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
            if name == "run" and args.admission:
                webhooks = admission_service.Service(
                    admission_service.Options(
                        namespace=process_options.leader_elect_namespace,
                        webhook_port=args.webhook_addr,
                        pod=_run_pod_settings(args, scheduler_options, binder_options),
                    ),
                    store,
                    registry,
                )
                webhooks.start()
                process.server.add_readiness("admission", webhooks.is_ready)
            try:
                with stop_on_signals(stop), _dashboard(args, scheduler_options):
                    collector.tune_for_service()
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
    """`kai run --admission`: the webhooks take the scheduler's names and the binder's `--hami-core-enabled`, so
    that what the webhook wires and what the binder writes agree."""
    from kai_scheduler.admission import pod as admission_pod
    from kai_scheduler.runtime import components as builders

    sharing = args.gpu_sharing_enabled
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
        runtime_class_name=args.gpu_fraction_runtime_class_name,
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
    conn = process_flags.options(args)
    config = builders.scheduler_config(options)
    with serve.attach(conn.kubeconfig, conn.context, conn.qps, conn.burst, config) as target:
        server = serve.listen(target, host, port, flag="--dashboard-address")
        try:
            yield
        finally:
            server.stop()


def _scheduler_options(args: argparse.Namespace) -> SchedulerOptions:
    given = {flag.dest: value for flag in flags.SCHEDULING if (value := getattr(args, flag.dest)) is not None}
    try:
        check_supported(dataclasses.replace(Flags(), **given), spelling="--{}")
    except ConfigError as err:
        raise UserError(str(err)) from None
    try:
        check_namespace(args.metrics_namespace)
    except ValueError as err:
        raise UserError(f"{flags.METRICS_NAMESPACE.option}: {err}") from None
    if not 0 <= args.plugin_server_port <= 65535:
        raise UserError(f"{flags.PLUGIN_SERVER_PORT.option}: want 0 (off) to 65535, got {args.plugin_server_port}")
    return SchedulerOptions(
        scheduler_conf=args.scheduler_conf,
        flags=given,
        metrics_namespace=args.metrics_namespace,
        plugin_server_port=args.plugin_server_port,
    )


def _binder_options(args: argparse.Namespace) -> BinderOptions:
    defaults = BinderOptions()
    return BinderOptions(
        reconcile_period=arguments.given(args.reconcile_period, defaults.reconcile_period),
        max_concurrent_reconciles=args.max_concurrent_reconciles,
        resource_reservation_namespace=args.resource_reservation_namespace or defaults.resource_reservation_namespace,
        resource_reservation_service_account=args.resource_reservation_service_account,
        resource_reservation_pod_image=args.resource_reservation_pod_image or defaults.resource_reservation_pod_image,
        resource_reservation_pod_resources=reservation_pod.resources(
            flags.RESOURCE_RESERVATION_POD_RESOURCES.option,
            _json_flag(args, flags.RESOURCE_RESERVATION_POD_RESOURCES),
        ),
        resource_reservation_pod_security_context=_json_flag(args, flags.RESOURCE_RESERVATION_POD_SECURITY_CONTEXT),
        resource_reservation_container_security_context=_json_flag(
            args, flags.RESOURCE_RESERVATION_CONTAINER_SECURITY_CONTEXT
        ),
        resource_reservation_allocation_timeout=args.resource_reservation_allocation_timeout,
        runtime_class_name=args.runtime_class_name,
        hami_core_enabled=args.hami_core_enabled,
    )


def _grouper_options(args: argparse.Namespace) -> GrouperOptions:
    from kai_scheduler.runtime.components import queue_metric_labels

    defaults = GrouperOptions()
    configmap_namespace, configmap_name = _defaults_configmap(args)
    concurrency = getattr(args, flags.MAX_CONCURRENT_RECONCILES.dest, None)
    grouper = getattr(args, "component", "") == "podgrouper"
    options = GrouperOptions(
        reconcile_period=arguments.given(args.reconcile_period, defaults.reconcile_period),
        scheduler_name=args.scheduler_name or defaults.scheduler_name,
        queue_label_key=args.queue_label_key or defaults.queue_label_key,
        node_pool_label_key=args.nodepool_label_key or defaults.node_pool_label_key,
        migrate_from=_migrate_from(getattr(args, flags.MIGRATE_FROM.dest, None)),
        queue_map=_queue_map(getattr(args, flags.QUEUE_MAP.dest, None)),
        create_default_queues=getattr(args, flags.CREATE_DEFAULT_QUEUES.dest, defaults.create_default_queues),
        max_concurrent_reconciles=(
            concurrency if concurrency is not None and not grouper else defaults.max_concurrent_reconciles
        ),
        grouper_writers=concurrency if concurrency is not None and grouper else defaults.grouper_writers,
        knative_gang_schedule=args.knative_gang_schedule,
        defaults_configmap_namespace=configmap_namespace,
        defaults_configmap_name=configmap_name,
        pod_label_selector=_match_labels(args, flags.POD_LABEL_SELECTOR),
        namespace_label_selector=_match_labels(args, flags.NAMESPACE_LABEL_SELECTOR),
        metrics_namespace=getattr(args, flags.METRICS_NAMESPACE.dest, defaults.metrics_namespace),
        queue_label_to_metric_label=_string_map(args, flags.QUEUE_LABEL_TO_METRIC_LABEL),
        queue_label_to_default_metric_value=_string_map(args, flags.QUEUE_LABEL_TO_DEFAULT_METRIC_VALUE),
    )
    queue_metric_labels(options)  # a bad label fails here, before connecting
    return options


def _scale_adjuster_options(args: argparse.Namespace, name: str) -> ScaleAdjusterOptions:
    from kai_scheduler.nodescaleadjuster.pods import Settings

    defaults = ScaleAdjusterOptions()
    settings = Settings(
        scheduler_name=args.scheduler_name or defaults.settings.scheduler_name,
        namespace=args.scale_adjust_namespace or defaults.settings.namespace,
        image=args.scaling_pod_image or defaults.settings.image,
        gpu_memory_to_fraction_ratio=args.gpu_memory_to_fraction_ratio,
        cool_down_seconds=args.cool_down_seconds,
    )
    try:
        settings.check()
    except ValueError as err:
        raise UserError(str(err)) from None
    # `kai run` shares one --reconcile-period: the adjuster keeps its own default there.
    period = defaults.reconcile_period if name == "run" else args.reconcile_period
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


def _string_map(args: argparse.Namespace, flag: flags.Flag[str]) -> dict[str, str]:
    """`key=value,key=value` given once or more (as Go's map flag of KAI's components: later keys win)."""
    out: dict[str, str] = {}
    for text in getattr(args, flag.dest, None) or ():
        for item in text.split(",") if text else ():
            key, sep, value = item.partition("=")
            if not sep:
                raise UserError(f"{flag.option}: invalid map item {item!r}: want key=value")
            out[key] = value
    return out


def _json_flag(args: argparse.Namespace, flag: flags.Flag[str]) -> dict[str, Any]:
    return reservation_pod.from_flag(flag.option, getattr(args, flag.dest, None) or "")


def _defaults_configmap(args: argparse.Namespace) -> tuple[str, str]:
    """(namespace, name) of the default priorities ConfigMap; both or neither."""
    name = getattr(args, flags.DEFAULT_PRIORITIES_CONFIGMAP_NAME.dest, None) or ""
    namespace = getattr(args, flags.DEFAULT_PRIORITIES_CONFIGMAP_NAMESPACE.dest, None) or ""
    if bool(name) != bool(namespace):
        given, missing = (
            (flags.DEFAULT_PRIORITIES_CONFIGMAP_NAME, flags.DEFAULT_PRIORITIES_CONFIGMAP_NAMESPACE)
            if name
            else (flags.DEFAULT_PRIORITIES_CONFIGMAP_NAMESPACE, flags.DEFAULT_PRIORITIES_CONFIGMAP_NAME)
        )
        raise UserError(f"{given.option} needs {missing.option} too")
    return namespace, name


def _match_labels(args: argparse.Namespace, flag: flags.Flag[str]) -> dict[str, str]:
    """KAI's selector flags: `key=value,key=value` (absent or "": none)."""
    from kai_scheduler.api.selectors import parse_match_labels

    try:
        return parse_match_labels(getattr(args, flag.dest, None) or "")
    except ValueError as err:
        raise UserError(f"{flag.option}: {err}") from None
