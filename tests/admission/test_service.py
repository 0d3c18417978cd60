"""The admission service end to end: self-managed certificates in a MemoryStore, webhooks over HTTPS."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
from prometheus_client import CollectorRegistry

from kai_scheduler.admission import certs, service, webhooks
from kai_scheduler.api.clock import SystemClock
from kai_scheduler.store.memory import MemoryStore
from tests.admission import builders, https


def store_with_configurations() -> MemoryStore:
    store = MemoryStore(SystemClock())
    store.create(builders.webhook_configuration("ValidatingWebhookConfiguration", "pod.kai"))
    store.create(builders.webhook_configuration("MutatingWebhookConfiguration", "pod.mutate.kai"))
    return store


def test_self_managed_service_serves_with_the_secrets_ca() -> None:
    store = store_with_configurations()
    registry = CollectorRegistry()
    svc = service.Service(service.Options(webhook_host="127.0.0.1", webhook_port=0), store, registry)
    svc.start()
    try:
        assert svc.is_ready()
        assert svc.server is not None and svc.certs is not None
        bundle = certs.from_secret(store.get("secrets", "kai-admission-cert", "kai-scheduler"))
        assert bundle is not None
        status, body, _ = https.post(
            svc.server.port,
            bundle.ca_pem,
            webhooks.PATH_VALIDATE_QUEUE,
            builders.body(builders.queue("a", parentQueue="a")),
        )
        assert status == 200
        assert orjson.loads(body)["response"]["allowed"] is False
        assert (
            registry.get_sample_value("kai_admission_requests_total", {"webhook": "validate-queue", "allowed": "false"})
            == 1.0
        )
        directory = svc.certs.directory
    finally:
        svc.stop()
    assert not svc.is_ready()
    assert not directory.exists()


def test_queue_webhook_sees_the_store() -> None:
    store = store_with_configurations()
    store.create(builders.queue("org", resources={"gpu": {"quota": 1, "limit": -1}}))
    svc = service.Service(service.Options(webhook_host="127.0.0.1", webhook_port=0), store, CollectorRegistry())
    req = builders.body(builders.queue("team", resources={"gpu": {"quota": 2, "limit": -1}}, parentQueue="org"))
    answer = svc.dispatcher.handle(webhooks.PATH_VALIDATE_QUEUE, req)
    assert "exceeds the parent queue org's quota 1" in orjson.loads(answer.body)["response"]["warnings"][0]


def test_cert_dir_is_served_as_is(tmp_path: Path) -> None:
    bundle = certs.generate("kai-admission", "kai-scheduler", time.time())
    certs.write_files(bundle, tmp_path)
    store = MemoryStore(SystemClock())
    opts = service.Options(webhook_host="127.0.0.1", webhook_port=0, cert_dir=str(tmp_path))
    svc = service.Service(opts, store, CollectorRegistry())
    svc.start()
    try:
        assert svc.server is not None
        assert https.post(svc.server.port, bundle.ca_pem, "/nowhere", b"{}")[0] == 404
        assert store.list("secrets")[0] == []
    finally:
        svc.stop()
    assert tmp_path.exists()


def test_run_serves_until_stopped() -> None:
    store = store_with_configurations()
    stop = threading.Event()
    opts = service.Options(webhook_host="127.0.0.1", webhook_port=0)
    thread = threading.Thread(target=service.run, args=(opts, stop, store, CollectorRegistry()))
    thread.start()
    deadline = time.monotonic() + 30
    while not store.list("secrets")[0] and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert store.list("secrets")[0]


def test_ca_bundle_is_injected_again_by_the_periodic_check() -> None:
    store = store_with_configurations()
    opts = service.Options(webhook_host="127.0.0.1", webhook_port=0, cert_check_interval=0.01)
    svc = service.Service(opts, store, CollectorRegistry())
    svc.start()
    try:
        vwc = store.get("validatingwebhookconfigurations", "kai-admission")
        injected = vwc["webhooks"][0]["clientConfig"]["caBundle"]
        vwc["webhooks"][0]["clientConfig"].pop("caBundle")  # e.g. a Helm upgrade reset it
        store.update(vwc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            hooks = store.get("validatingwebhookconfigurations", "kai-admission")["webhooks"]
            if hooks[0]["clientConfig"].get("caBundle"):
                break
            time.sleep(0.01)
        assert hooks[0]["clientConfig"].get("caBundle") == injected
    finally:
        svc.stop()
