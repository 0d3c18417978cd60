"""`kai admission`: serve the admission webhooks (BEHAVIOR.md §8.3) and the health/metrics endpoints."""

from __future__ import annotations

import argparse
import logging
import threading
from typing import TYPE_CHECKING

from kai_scheduler.admission import defaults
from kai_scheduler.api import constants, flags
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import arguments, connection, process_flags

if TYPE_CHECKING:
    from kai_scheduler.admission import service
    from kai_scheduler.runtime import options

log = logging.getLogger(__name__)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "admission",
        help="serve the admission webhooks (pods, queues, podgroups, topologies)",
        description="Serve KAI's mutating and validating admission webhooks over HTTPS. Without --cert-dir the "
        "serving certificate is self-managed: kept in a Secret, rotated 30 days before expiry, and its "
        "CA written into the webhook configurations.",
    )
    ignored = p.add_argument_group(
        "leader election",
        "accepted so every component takes the same command line, and ignored: every replica "
        "serves the webhooks (replicas that rotate the certificate at once agree through the Secret)",
    )
    process_flags.add(p, ignored)
    arguments.add(p, flags.WEBHOOK_ADDR, defaults.DEFAULT_PORT)
    arguments.add(p, flags.CERT_DIR, "", shown="self-managed certificates")
    arguments.add(p, flags.NAMESPACE, None, shown=process_flags.NAMESPACE_DEFAULT)
    arguments.add(p, flags.SERVICE_NAME, defaults.DEFAULT_SERVICE_NAME)
    arguments.add(p, flags.SECRET_NAME, defaults.DEFAULT_SECRET_NAME)
    arguments.add(p, flags.WEBHOOK_CONFIGURATION_NAME, defaults.DEFAULT_WEBHOOK_CONFIGURATION_NAME)
    arguments.add(p, flags.SCHEDULER_NAME, constants.DEFAULT_SCHEDULER_NAME)
    arguments.add(p, flags.GPU_SHARING_ENABLED, False, shown="false, as KAI's")
    arguments.add(p, flags.HAMI_CORE_ENABLED, False, shown="false, as KAI's")
    arguments.add(p, flags.BLOCK_NVIDIA_VISIBLE_DEVICES, False)
    arguments.add(p, flags.GPU_FRACTION_RUNTIME_CLASS_NAME, defaults.DEFAULT_RUNTIME_CLASS_NAME)
    arguments.add(p, flags.QUEUE_LABEL_KEY, constants.DEFAULT_QUEUE_LABEL_KEY)
    arguments.add(p, flags.QUEUE_ACCESS_CONTROL, False)
    p.set_defaults(run=run)


def process_options(args: argparse.Namespace) -> options.ProcessOptions:
    """The connection and the health and metrics address (leader election is not the webhooks')."""
    from kai_scheduler.runtime import options

    conn = connection.parse(args)
    return options.ProcessOptions(
        kubeconfig=conn.kubeconfig,
        context=conn.context,
        qps=conn.qps,
        burst=conn.burst,
        listen_address=args.listen_address,
    )


def service_options(args: argparse.Namespace) -> service.Options:
    from kai_scheduler.admission import pod, service
    from kai_scheduler.runtime import options

    port = args.webhook_addr
    if not 0 <= port <= 65535:
        raise UserError(f"{flags.WEBHOOK_ADDR.option}: want 0 to 65535, got {port}")
    return service.Options(
        webhook_port=port,
        cert_dir=args.cert_dir,
        namespace=args.namespace or options.in_cluster_namespace(),
        service_name=args.service_name,
        secret_name=args.secret_name,
        webhook_configuration_name=args.webhook_configuration_name,
        pod=pod.PodSettings(
            scheduler_name=args.scheduler_name,
            gpu_sharing_enabled=args.gpu_sharing_enabled,
            hami_core_enabled=args.hami_core_enabled,
            block_nvidia_visible_devices=args.block_nvidia_visible_devices,
            runtime_class_name=args.gpu_fraction_runtime_class_name,
            queue_access_control=args.queue_access_control,
            queue_label_key=args.queue_label_key,
        ),
    )


def run(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from kai_scheduler.admission import service
    from kai_scheduler.runtime import http, process
    from kai_scheduler.store.interface import StoreError

    opts = service_options(args)
    store = process.connect(process_options(args))
    registry = CollectorRegistry()
    health = http.HealthServer(args.listen_address, registry)
    admission = service.Service(opts, store, registry)
    stop = threading.Event()
    try:
        try:
            admission.start()
        except StoreError as err:
            raise UserError(f"kai admission: cannot set up the serving certificate: {err}") from None
        health.add_readiness("webhooks", admission.is_ready)
        health.add_liveness("webhooks", admission.is_ready)
        try:
            health.start()
        except OSError as err:
            raise UserError(f"{flags.LISTEN_ADDRESS.option} {args.listen_address}: {err.strerror or err}") from None
        log.info("admission webhooks serving", extra={"port": opts.webhook_port, "namespace": opts.namespace})
        with process.stop_on_signals(stop):
            stop.wait()
    finally:
        health.stop()
        admission.stop()
        store.close()
    return 0
