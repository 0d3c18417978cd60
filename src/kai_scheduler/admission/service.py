"""The admission service: certificates, webhooks and the HTTPS server together (`kai admission`, `kai run`).

With a `cert_dir` the pair `tls.crt`/`tls.key` there is served as is (and reloaded when it changes). Without
one the service manages its own (`certs.CertManager`): the pair lives in a Secret and a private temporary
directory, the CA goes into the webhook configurations, and `ensure` runs again every `cert_check_interval`
seconds to re-inject the caBundle and rotate the pair before it expires.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from prometheus_client import CollectorRegistry

from kai_scheduler.admission import certs, pod, server, webhooks
from kai_scheduler.admission.defaults import (
    DEFAULT_NAMESPACE,
    DEFAULT_SECRET_NAME,
    DEFAULT_SERVICE_NAME,
    DEFAULT_WEBHOOK_CONFIGURATION_NAME,
)
from kai_scheduler.api.clock import Clock, SystemClock
from kai_scheduler.store.interface import ClusterStore

log = logging.getLogger(__name__)

ROTATOR_JOIN: Final = 1.0  # seconds `stop` waits for a certificate check in flight

DEFAULT_CERT_CHECK_INTERVAL: Final = 600.0


@dataclass(frozen=True, slots=True)
class Options:
    """What `kai admission` is told; the defaults are its flags' defaults."""

    webhook_host: str = ""
    webhook_port: int = server.DEFAULT_PORT
    cert_dir: str = ""  # "" = self-managed certificates
    namespace: str = DEFAULT_NAMESPACE
    service_name: str = DEFAULT_SERVICE_NAME
    secret_name: str = DEFAULT_SECRET_NAME
    webhook_configuration_name: str = DEFAULT_WEBHOOK_CONFIGURATION_NAME
    pod: pod.PodSettings = field(default_factory=pod.PodSettings)
    cert_check_interval: float = DEFAULT_CERT_CHECK_INTERVAL


class Service:
    """Start with `start()` (raises ValueError on a bad certificate or port), stop with `stop()`."""

    def __init__(
        self,
        options: Options,
        store: ClusterStore,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.options = options
        self.store = store
        self.clock = clock or SystemClock()
        self.dispatcher = webhooks.Dispatcher(webhooks.build(options.pod, store), registry)
        self.certs: certs.CertManager | None = None
        self._temp_dir: Path | None = None
        self._stop = threading.Event()
        self._rotator: threading.Thread | None = None
        self.server: server.WebhookServer | None = None

    def start(self) -> None:
        if self.options.cert_dir:
            directory = Path(self.options.cert_dir)
        else:
            self._temp_dir = directory = Path(tempfile.mkdtemp(prefix="kai-admission-certs-"))
            self.certs = certs.CertManager(
                self.store,
                self.clock,
                namespace=self.options.namespace,
                service_name=self.options.service_name,
                secret_name=self.options.secret_name,
                webhook_configuration_name=self.options.webhook_configuration_name,
                directory=directory,
            )
            self.certs.ensure()
            self._rotator = threading.Thread(target=self._rotate, name="kai-admission-certs", daemon=True)
            self._rotator.start()
        self.server = server.WebhookServer(
            self.dispatcher,
            directory / certs.KEY_CERT,
            directory / certs.KEY_KEY,
            host=self.options.webhook_host,
            port=self.options.webhook_port,
        )
        self.server.start()

    def is_ready(self) -> bool:
        return self.server is not None and self.server.is_serving

    def stop(self) -> None:
        self._stop.set()
        if self.server is not None:
            self.server.stop()
        if self._rotator is not None:
            # A certificate check may be waiting on the API server: it is left to end when the store closes.
            self._rotator.join(ROTATOR_JOIN)
            if self._rotator.is_alive():
                log.warning("shutdown: the certificate check in flight was abandoned")
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    def _rotate(self) -> None:
        assert self.certs is not None
        while not self._stop.wait(self.options.cert_check_interval):
            try:
                self.certs.ensure()
            except Exception:  # the API server may be briefly away: keep serving, try again next time
                log.exception("certificate check failed")


def run(
    options: Options, stop: threading.Event, store: ClusterStore, registry: CollectorRegistry | None = None
) -> None:
    """Serve the webhooks until `stop` is set (for `kai admission` and the combined `kai run`)."""
    service = Service(options, store, registry)
    service.start()
    try:
        stop.wait()
    finally:
        service.stop()
