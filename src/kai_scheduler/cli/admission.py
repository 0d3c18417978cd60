"""`kai admission`: serve the admission webhooks (BEHAVIOR.md §8.3) and the health/metrics endpoints."""

from __future__ import annotations

import argparse
import logging
import threading
from typing import TYPE_CHECKING

from kai_scheduler.admission import defaults
from kai_scheduler.api import constants
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import connection

if TYPE_CHECKING:
    from kai_scheduler.admission import service
    from kai_scheduler.runtime import options

log = logging.getLogger(__name__)


_QPS, _BURST = 50.0, 300  # the components' defaults (runtime.options.ProcessOptions)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "admission",
        help="serve the admission webhooks (pods, queues, podgroups, topologies)",
        description="Serve KAI's mutating and validating admission webhooks over HTTPS. Without --cert-dir the "
        "serving certificate is self-managed: kept in a Secret, rotated 30 days before expiry, and its "
        "CA written into the webhook configurations.",
    )
    connection.add_flags(p, qps=_QPS, burst=_BURST)
    p.add_argument(
        "--listen-address", default=":8080", metavar="ADDR", help="health and metrics address (default :8080)"
    )
    p.add_argument(
        "--webhook-port",
        default=str(defaults.DEFAULT_PORT),
        metavar="PORT",
        help=f"HTTPS port of the webhooks (default {defaults.DEFAULT_PORT})",
    )
    p.add_argument(
        "--cert-dir",
        metavar="DIR",
        default="",
        help="directory with tls.crt and tls.key to serve (default: self-managed certificates)",
    )
    p.add_argument(
        "--namespace",
        default=None,
        metavar="NS",
        help="namespace of the service and Secret (default: the pod's, else kai-scheduler)",
    )
    p.add_argument(
        "--service-name",
        metavar="NAME",
        default=defaults.DEFAULT_SERVICE_NAME,
        help=f"webhook Service name (default {defaults.DEFAULT_SERVICE_NAME})",
    )
    p.add_argument(
        "--secret-name",
        metavar="NAME",
        default=defaults.DEFAULT_SECRET_NAME,
        help=f"Secret holding the self-managed certificate (default {defaults.DEFAULT_SECRET_NAME})",
    )
    p.add_argument(
        "--webhook-configuration-name",
        metavar="NAME",
        default=defaults.DEFAULT_WEBHOOK_CONFIGURATION_NAME,
        help="name of the Validating/MutatingWebhookConfiguration to inject the CA into "
        f"(default {defaults.DEFAULT_WEBHOOK_CONFIGURATION_NAME})",
    )
    p.add_argument(
        "--scheduler-name",
        metavar="NAME",
        default=constants.DEFAULT_SCHEDULER_NAME,
        help=f"only pods with this schedulerName are handled (default {constants.DEFAULT_SCHEDULER_NAME})",
    )
    p.add_argument(
        "--gpu-sharing-enabled",
        nargs="?",
        const="true",
        default="false",
        metavar="BOOL",
        help="accept fractional GPU requests (default false, as KAI's)",
    )
    p.add_argument(
        "--hami-core-enabled",
        nargs="?",
        const="true",
        default="false",
        metavar="BOOL",
        help="give a fractional pod's GPU container CUDA_DEVICE_MEMORY_LIMIT from its shared-GPU ConfigMap, for "
        "HAMi-core to enforce (the binder's --hami-core-enabled writes it; default false, as KAI's)",
    )
    p.add_argument(
        "--block-nvidia-visible-devices",
        nargs="?",
        const="true",
        default="false",
        metavar="BOOL",
        help="set NVIDIA_VISIBLE_DEVICES=void on containers that ask for no GPU (default false)",
    )
    p.add_argument(
        "--runtime-class-name",
        metavar="NAME",
        default=defaults.DEFAULT_RUNTIME_CLASS_NAME,
        help="runtime class set on fractional pods that have none; empty = off (default nvidia)",
    )
    p.add_argument(
        "--queue-label-key",
        metavar="KEY",
        default=constants.DEFAULT_QUEUE_LABEL_KEY,
        help=f"label naming a pod's queue (default {constants.DEFAULT_QUEUE_LABEL_KEY})",
    )
    p.add_argument(
        "--queue-access-control",
        nargs="?",
        const="true",
        default="false",
        metavar="BOOL",
        help="refuse a pod or PodGroup whose queue does not admit its namespace (spec.allowedNamespaces, "
        "spec.allowedNamespaceSelector; not KAI's, default false)",
    )
    ignored = p.add_argument_group(
        "leader election",
        "accepted so every component takes the same command line, and ignored: every replica "
        "serves the webhooks (replicas that rotate the certificate at once agree through the Secret)",
    )
    ignored.add_argument("--leader-elect", nargs="?", const="true", metavar="BOOL")
    ignored.add_argument("--leader-elect-namespace", metavar="NS")
    for flag in ("--leader-elect-lease-duration", "--leader-elect-renew-deadline", "--leader-elect-retry-period"):
        ignored.add_argument(flag, metavar="DURATION")
    p.set_defaults(run=run)


_boolean = connection.boolean
_number = connection.number


def process_options(args: argparse.Namespace) -> options.ProcessOptions:
    from kai_scheduler.runtime import options

    conn = connection.parse(args, qps=_QPS, burst=_BURST)
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

    port = int(_number("--webhook-port", args.webhook_port, int))
    if not 0 <= port <= 65535:
        raise UserError(f"--webhook-port: want 0 to 65535, got {port}")
    return service.Options(
        webhook_port=port,
        cert_dir=args.cert_dir,
        namespace=args.namespace or options.in_cluster_namespace(),
        service_name=args.service_name,
        secret_name=args.secret_name,
        webhook_configuration_name=args.webhook_configuration_name,
        pod=pod.PodSettings(
            scheduler_name=args.scheduler_name,
            gpu_sharing_enabled=_boolean("--gpu-sharing-enabled", args.gpu_sharing_enabled),
            hami_core_enabled=_boolean("--hami-core-enabled", args.hami_core_enabled),
            block_nvidia_visible_devices=_boolean("--block-nvidia-visible-devices", args.block_nvidia_visible_devices),
            runtime_class_name=args.runtime_class_name,
            queue_access_control=_boolean("--queue-access-control", args.queue_access_control),
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
            raise UserError(f"--listen-address {args.listen_address}: {err.strerror or err}") from None
        log.info("admission webhooks serving", extra={"port": opts.webhook_port, "namespace": opts.namespace})
        with process.stop_on_signals(stop):
            stop.wait()
    finally:
        health.stop()
        admission.stop()
        store.close()
    return 0
