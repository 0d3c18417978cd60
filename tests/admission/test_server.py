"""The HTTPS webhook server over loopback, with certificates from the certs module."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.admission import certs, pod, server, webhooks
from tests.admission import builders, https

NOW = time.time()


@pytest.fixture
def bundle(tmp_path: Path) -> certs.Bundle:
    b = certs.generate("kai-admission", "kai-scheduler", NOW)
    certs.write_files(b, tmp_path)
    return b


@pytest.fixture
def running(tmp_path: Path, bundle: certs.Bundle) -> Iterator[server.WebhookServer]:
    dispatcher = webhooks.Dispatcher(webhooks.build(pod.PodSettings()), CollectorRegistry())
    srv = server.WebhookServer(dispatcher, tmp_path / "tls.crt", tmp_path / "tls.key", host="127.0.0.1", port=0)
    srv.start()
    yield srv
    srv.stop()


def test_review_over_https(running: server.WebhookServer, bundle: certs.Bundle) -> None:
    status, body, _ = https.post(
        running.port,
        bundle.ca_pem,
        webhooks.PATH_VALIDATE_POD,
        builders.body(builders.pod(annotations={"gpu-memory": "0"})),
    )
    assert status == 200
    out = orjson.loads(body)["response"]
    assert out["allowed"] is False
    assert "gpu-memory" in out["status"]["message"]


def test_malformed_body_over_https_is_400(running: server.WebhookServer, bundle: certs.Bundle) -> None:
    status, body, _ = https.post(running.port, bundle.ca_pem, webhooks.PATH_VALIDATE_QUEUE, b"{nope")
    assert status == 400
    assert b"not JSON" in body


def test_unknown_path_over_https_is_404(running: server.WebhookServer, bundle: certs.Bundle) -> None:
    assert https.post(running.port, bundle.ca_pem, "/other", b"{}")[0] == 404


def test_other_ca_is_refused(running: server.WebhookServer) -> None:
    other = certs.generate("kai-admission", "kai-scheduler", NOW)
    with pytest.raises(ssl.SSLCertVerificationError):
        https.post(running.port, other.ca_pem, webhooks.PATH_VALIDATE_POD, b"{}")


def test_plain_http_does_not_break_the_server(running: server.WebhookServer, bundle: certs.Bundle) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=5)
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        conn.request("POST", "/x", body=b"{}")
        conn.getresponse().read()
    conn.close()
    assert https.post(running.port, bundle.ca_pem, "/other", b"{}")[0] == 404


def test_rotated_pair_is_served_without_restart(
    running: server.WebhookServer, bundle: certs.Bundle, tmp_path: Path
) -> None:
    first = https.post(running.port, bundle.ca_pem, "/other", b"{}")[2]["serial"]
    rotated = certs.generate("kai-admission", "kai-scheduler", NOW)
    certs.write_files(rotated, tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        https.post(running.port, bundle.ca_pem, "/other", b"{}")
    second = https.post(running.port, rotated.ca_pem, "/other", b"{}")[2]["serial"]
    assert second != first


def test_broken_pair_keeps_the_previous_one(
    running: server.WebhookServer, bundle: certs.Bundle, tmp_path: Path
) -> None:
    (tmp_path / "tls.crt").write_bytes(b"half written")
    assert https.post(running.port, bundle.ca_pem, "/other", b"{}")[0] == 404


def test_unloadable_pair_at_start_is_a_user_error(tmp_path: Path) -> None:
    dispatcher = webhooks.Dispatcher({}, CollectorRegistry())
    with pytest.raises(ValueError, match="cannot load the TLS pair"):
        server.WebhookServer(dispatcher, tmp_path / "missing.crt", tmp_path / "missing.key", port=0)
