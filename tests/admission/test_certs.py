"""Self-managed serving certificates: generation, Secret reuse and rotation, caBundle injection."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography import x509

from kai_scheduler.admission import certs
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store.interface import JSON, Conflict
from kai_scheduler.store.memory import MemoryStore
from tests.admission import builders

NOW = 1_800_000_000.0
NS = "kai-scheduler"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def store(clock: ManualClock) -> MemoryStore:
    s = MemoryStore(clock)
    s.create(builders.webhook_configuration("ValidatingWebhookConfiguration", "pod.kai", "queue.kai"))
    s.create(builders.webhook_configuration("MutatingWebhookConfiguration", "pod.mutate.kai"))
    return s


@pytest.fixture
def manager(store: MemoryStore, clock: ManualClock, tmp_path: Path) -> certs.CertManager:
    return certs.CertManager(
        store,
        clock,
        namespace=NS,
        service_name="kai-admission",
        secret_name="kai-admission-cert",
        webhook_configuration_name="kai-admission",
        directory=tmp_path / "certs",
    )


def secret_bundle(store: MemoryStore) -> certs.Bundle:
    bundle = certs.from_secret(store.get("secrets", "kai-admission-cert", NS))
    assert bundle is not None
    return bundle


def test_generated_bundle_serves_the_service() -> None:
    bundle = certs.generate("svc", "ns", NOW)
    assert certs.problem(bundle, "svc", "ns", NOW) is None
    cert = x509.load_pem_x509_certificate(bundle.cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert sans == ["svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"]
    assert bundle.not_after() == pytest.approx(NOW - 3600 + certs.CERT_VALIDITY)


@pytest.mark.parametrize(
    "mangle, want",
    [
        pytest.param(
            lambda b: certs.Bundle(b.ca_pem, b.cert_pem, certs.generate("s", "n", NOW).key_pem),
            "the key does not match",
            id="foreign key",
        ),
        pytest.param(
            lambda b: certs.Bundle(certs.generate("s", "n", NOW).ca_pem, b.cert_pem, b.key_pem),
            "not signed by its CA",
            id="foreign CA",
        ),
        pytest.param(lambda b: certs.Bundle(b.ca_pem, b"garbage", b.key_pem), "unreadable", id="garbage"),
    ],
)
def test_problems_are_found(mangle: object, want: str) -> None:
    bundle = mangle(certs.generate("svc", "ns", NOW))  # type: ignore[operator]
    assert want in (certs.problem(bundle, "svc", "ns", NOW) or "")


def test_wrong_service_name_is_a_problem() -> None:
    assert "does not name other.ns.svc" in (certs.problem(certs.generate("svc", "ns", NOW), "other", "ns", NOW) or "")


def test_expiry_within_30_days_is_a_problem() -> None:
    bundle = certs.generate("svc", "ns", NOW)
    assert certs.problem(bundle, "svc", "ns", bundle.not_after() - 31 * certs.DAY) is None
    assert "expires in 29 days" in (certs.problem(bundle, "svc", "ns", bundle.not_after() - 29 * certs.DAY) or "")


def test_first_ensure_creates_the_secret_files_and_ca_bundle(manager: certs.CertManager, store: MemoryStore) -> None:
    bundle = manager.ensure()
    secret = store.get("secrets", "kai-admission-cert", NS)
    assert secret["type"] == "kubernetes.io/tls"
    assert secret_bundle(store) == bundle
    assert manager.cert_file.read_bytes() == bundle.cert_pem
    assert manager.key_file.read_bytes() == bundle.key_pem
    assert manager.key_file.stat().st_mode & 0o077 == 0
    ca = base64.b64encode(bundle.ca_pem).decode()
    for resource in certs.WEBHOOK_CONFIGURATION_RESOURCES:
        hooks = store.get(resource, "kai-admission")["webhooks"]
        assert [h["clientConfig"]["caBundle"] for h in hooks] == [ca] * len(hooks)
        assert all(h["clientConfig"]["service"]["name"] == "kai-admission" for h in hooks)


def test_valid_secret_is_reused(manager: certs.CertManager, store: MemoryStore, clock: ManualClock) -> None:
    first = manager.ensure()
    version = store.get("secrets", "kai-admission-cert", NS)["metadata"]["resourceVersion"]
    clock.advance(300 * certs.DAY)
    assert manager.ensure() == first
    assert store.get("secrets", "kai-admission-cert", NS)["metadata"]["resourceVersion"] == version


def test_secret_is_rotated_30_days_before_expiry(
    manager: certs.CertManager, store: MemoryStore, clock: ManualClock
) -> None:
    first = manager.ensure()
    clock.set(first.not_after() - 29 * certs.DAY)
    second = manager.ensure()
    assert second != first
    assert secret_bundle(store) == second
    assert manager.cert_file.read_bytes() == second.cert_pem
    ca = base64.b64encode(second.ca_pem).decode()
    assert (
        store.get("validatingwebhookconfigurations", "kai-admission")["webhooks"][0]["clientConfig"]["caBundle"] == ca
    )


def test_garbled_secret_is_replaced(manager: certs.CertManager, store: MemoryStore) -> None:
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "kai-admission-cert", "namespace": NS},
            "data": {"tls.crt": "bm90IGEgY2VydA=="},
        }
    )
    bundle = manager.ensure()
    assert secret_bundle(store) == bundle


def test_secret_of_another_service_is_replaced(manager: certs.CertManager, store: MemoryStore) -> None:
    other = certs.generate("other", NS, NOW)
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "kai-admission-cert", "namespace": NS},
            "data": certs.to_secret_data(other),
        }
    )
    assert manager.ensure() != other


def test_write_race_takes_the_winners_pair(manager: certs.CertManager, store: MemoryStore) -> None:
    winner = certs.generate("kai-admission", NS, NOW)
    real_create = store.create

    def racing_create(obj: JSON) -> JSON:
        if obj.get("kind") == "Secret":
            store.create = real_create  # type: ignore[method-assign]
            real_create({**obj, "data": certs.to_secret_data(winner)})  # the other replica's write lands first
        return real_create(obj)

    store.create = racing_create  # type: ignore[method-assign]
    assert manager.ensure() == winner


def test_conflicting_webhook_configuration_update_is_retried(store: MemoryStore) -> None:
    real_update = store.update
    calls = []

    def flaky(obj: JSON) -> JSON:
        calls.append(obj["kind"])
        if len(calls) == 1:
            raise Conflict("changed")
        return real_update(obj)

    store.update = flaky  # type: ignore[method-assign]
    assert certs.inject_ca_bundle(store, "kai-admission", b"CA") == 2
    assert calls == ["ValidatingWebhookConfiguration", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"]


def test_unchanged_ca_bundle_is_not_rewritten(store: MemoryStore) -> None:
    assert certs.inject_ca_bundle(store, "kai-admission", b"CA") == 2
    assert certs.inject_ca_bundle(store, "kai-admission", b"CA") == 0


def test_missing_webhook_configurations_are_skipped(clock: ManualClock, tmp_path: Path) -> None:
    store = MemoryStore(clock)
    manager = certs.CertManager(
        store,
        clock,
        namespace=NS,
        service_name="kai-admission",
        secret_name="kai-admission-cert",
        webhook_configuration_name="kai-admission",
        directory=tmp_path,
    )
    manager.ensure()
    assert certs.inject_ca_bundle(store, "kai-admission", b"CA") == 0


def test_files_are_rewritten_only_when_changed(tmp_path: Path) -> None:
    bundle = certs.generate("svc", "ns", NOW)
    assert certs.write_files(bundle, tmp_path)
    assert not certs.write_files(bundle, tmp_path)
