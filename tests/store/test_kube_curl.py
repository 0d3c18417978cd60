"""The store's libcurl sender (`kube_http.curl`): TLS from the client library's configuration, connections kept per
sending thread, urllib3's retries of a request without answer, the read timeout as the longest silence, one-line
failures, and the last check before sending on a reused connection."""

from __future__ import annotations

import datetime as dt
import http.server
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.runtime.fence import NotLeading
from kai_scheduler.store import interface
from kai_scheduler.store.kube import KubeStore
from kai_scheduler.store.kube_http.errors import NoAnswer, Unavailable
from kai_scheduler.store.kube_http.rate_limit import RateLimiter
from kai_scheduler.store.kube_http.timing import RealTiming
from kai_scheduler.store.kube_http.transport import Limits, Transport
from tests.loopback import free_port
from tests.store.conftest import KUBE_TEST_OPTIONS, MakeStore
from tests.store.mock_apiserver import MockApiServer


def transport(configuration: Configuration, read_timeout: float = 5.0) -> Transport:
    return Transport(
        ApiClient(configuration), RateLimiter(0, 0, RealTiming()), RealTiming(), Limits(0, 0, 5, read_timeout)
    )


# --- TLS ---


@dataclass
class Pki:
    """PEM files: a CA, a server certificate it signed (for `names`), a client certificate it signed."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_pki(directory: Path, names: list[x509.GeneralName]) -> Pki:
    start = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"test-ca-{directory.name}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(cn: str, usage: x509.ObjectIdentifier, san: list[x509.GeneralName]) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)

    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "ca": ca.public_bytes(serialization.Encoding.PEM),
        **dict(
            zip(("server_cert", "server_key"), leaf("apiserver", ExtendedKeyUsageOID.SERVER_AUTH, names), strict=True)
        ),
        **dict(
            zip(("client_cert", "client_key"), leaf("kai-client", ExtendedKeyUsageOID.CLIENT_AUTH, []), strict=True)
        ),
    }
    paths = {}
    for name, pem in files.items():
        paths[name] = directory / f"{name}.pem"
        paths[name].write_bytes(pem)
    return Pki(**paths)


class _TlsHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        subject = dict(item for rdn in (peer or {}).get("subject", ()) for item in rdn)
        data = orjson.dumps({"client": subject.get("commonName", ""), "host": self.headers.get("Host")})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[Callable[[list[x509.GeneralName]], tuple[str, Pki]]]:
    """Start HTTPS servers (the certificate for the given names, a client certificate asked for and checked)."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(names: list[x509.GeneralName]) -> tuple[str, Pki]:
        pki = make_pki(tmp_path / f"pki-{len(servers)}", names)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.server_cert, pki.server_key)
        context.load_verify_locations(pki.ca)
        context.verify_mode = ssl.CERT_OPTIONAL
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TlsHandler)
        httpd.daemon_threads = True
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return f"https://127.0.0.1:{httpd.server_address[1]}", pki

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


LOOPBACK: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]


def test_tls_with_the_configurations_ca_and_client_certificate(
    tls_server: Callable[[list[x509.GeneralName]], tuple[str, Pki]],
) -> None:
    url, pki = tls_server(LOOPBACK)
    configuration = Configuration(host=url)
    configuration.ssl_ca_cert = str(pki.ca)
    configuration.cert_file, configuration.key_file = str(pki.client_cert), str(pki.client_key)
    t = transport(configuration)
    try:
        assert t.connections.curl() is not None  # sent through libcurl
        assert t.call("GET", "/api") == {"client": "kai-client", "host": url.removeprefix("https://")}
        configuration.cert_file = configuration.key_file = None  # a client of no certificate: none presented
        assert transport(configuration).call("GET", "/api")["client"] == ""
    finally:
        t.close()


def test_a_server_certificate_of_another_ca_is_a_tls_failure_naming_the_cause(
    tls_server: Callable[[list[x509.GeneralName]], tuple[str, Pki]], tmp_path: Path
) -> None:
    url, _ = tls_server(LOOPBACK)
    other = make_pki(tmp_path / "other", LOOPBACK)
    configuration = Configuration(host=url)
    configuration.ssl_ca_cert = str(other.ca)
    with pytest.raises(Unavailable) as err:
        transport(configuration).call("GET", "/api", what="get the API")
    assert str(err.value).startswith(f"get the API: cannot reach the API server {url}: TLS failed: "), str(err.value)
    assert "certificate" in str(err.value) and "\n" not in str(err.value)
    configuration.verify_ssl = False  # insecure-skip-tls-verify
    assert transport(configuration).call("GET", "/api")["client"] == ""


def test_the_tls_server_name_is_the_one_checked_and_the_host_header_stays_the_hosts(
    tls_server: Callable[[list[x509.GeneralName]], tuple[str, Pki]],
) -> None:
    url, pki = tls_server([x509.DNSName("api.test")])  # not valid for 127.0.0.1
    configuration = Configuration(host=url)
    configuration.ssl_ca_cert = str(pki.ca)
    with pytest.raises(Unavailable, match="TLS failed: "):
        transport(configuration).call("GET", "/api")
    configuration.tls_server_name = "api.test"
    assert transport(configuration).call("GET", "/api")["host"] == url.removeprefix("https://")


# --- a plain server that answers as a test says ---


class RawServer:
    """A loopback HTTP server: reads each request (head and Content-Length body) and hands its connection to
    `answer`; counts the requests it read."""

    def __init__(self, answer: Callable[[socket.socket], bool]) -> None:
        self.answer = answer  # False: close the connection
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.requests.append(head.split(b"\r\n")[0])
                if not self.answer(conn):
                    return

    def close(self) -> None:
        self.listener.close()


def _hang_up(conn: socket.socket) -> bool:
    return False


@pytest.mark.parametrize(("method", "attempts"), [("GET", 4), ("PUT", 4), ("POST", 1), ("PATCH", 1)])
def test_a_request_without_answer_is_tried_again_as_urllib3_did(method: str, attempts: int) -> None:
    """urllib3's Retry(total=3): a request that went out and got no answer is sent again only if idempotent."""
    server = RawServer(_hang_up)
    try:
        body = None if method == "GET" else {"a": 1}
        with pytest.raises(Unavailable, match=f"^{method} /x: cannot reach the API server {server.url}: "):
            transport(Configuration(host=server.url)).call(method, "/x", body=body)
        assert len(server.requests) == attempts
    finally:
        server.close()


def test_a_refused_connection_is_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(Unavailable) as err:
        transport(Configuration(host=url)).call("GET", "/api/v1/nodes", what="list Node")
    assert str(err.value) == f"list Node: cannot reach the API server {url}: Connection refused"


def _silent(conn: socket.socket) -> bool:
    time.sleep(5)
    return False


def test_the_read_timeout_ends_a_silent_answer() -> None:
    server = RawServer(_silent)
    try:
        started = time.monotonic()
        with pytest.raises(
            Unavailable, match=r"POST /x: cannot reach the API server .*: read timed out \(no byte for 1s\)"
        ):
            transport(Configuration(host=server.url), read_timeout=1).call("POST", "/x", body={})
        assert time.monotonic() - started < 4
    finally:
        server.close()


def _trickle(conn: socket.socket) -> bool:
    """A 2.5 s answer, a byte every 0.25 s: never silent for a second."""
    body = b'{"items": []}'
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    for i in range(len(body)):
        time.sleep(2.5 / len(body))
        conn.sendall(body[i : i + 1])
    return True


def test_the_read_timeout_is_the_longest_silence_not_a_bound_on_the_answer() -> None:
    """A long LIST answer that keeps coming is read whole, however long it takes."""
    server = RawServer(_trickle)
    try:
        started = time.monotonic()
        assert transport(Configuration(host=server.url), read_timeout=1).call("GET", "/x") == {"items": []}
        assert time.monotonic() - started > 2
    finally:
        server.close()


# --- on the mock API server ---


def test_each_sending_thread_keeps_its_connection(kube_server: MockApiServer, make_store: MakeStore) -> None:
    store = make_store()
    for _ in range(5):
        store.list("pods")
    assert store.cancellation.live == 1  # one connection, kept alive
    barrier = threading.Barrier(3)

    def send() -> None:
        barrier.wait(5)
        for _ in range(20):
            store.list("pods")

    threads = [threading.Thread(target=send) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert 1 <= store.cancellation.live <= 3
    store.transport.close()
    assert store.cancellation.live == 0  # libcurl closed them through the callback: none left for a cut to hit


def test_a_refusal_right_before_sending_on_a_kept_connection_sends_nothing(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    store = make_store()
    store.list("pods")  # the connection the write would go out on

    def not_leading() -> None:
        raise NotLeading("create ConfigMap a/c: not sent: this process no longer leads")

    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}
    sent = len(kube_server.requests)
    with interface.checked_when_sent(not_leading), pytest.raises(NotLeading, match="no longer leads"):
        store.create(config_map)
    assert len(kube_server.requests) == sent and not kube_server.memory.list("configmaps")[0]
    assert store.create(config_map)["metadata"]["name"] == "c"  # the next request goes out


def test_the_environments_proxy_is_the_client_librarys_to_decide_not_libcurls(
    kube_server: MockApiServer, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The configuration was made with no proxy: a proxy the environment names later (libcurl reads it at every
    request) is not used."""
    store = make_store()
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert store.transport.connections.curl() is not None
    assert store.list("pods")[0] == []


def test_through_a_proxy_the_client_librarys_manager_sends(kube_server: MockApiServer) -> None:
    """A configured proxy: libcurl is not used; urllib3's proxy manager sends (the mock server takes the proxy's
    part: it reads the absolute request target as its path)."""
    configuration = Configuration(host="http://kube.invalid:6443")
    configuration.proxy = kube_server.url
    store = KubeStore(ApiClient(configuration), KUBE_TEST_OPTIONS)
    try:
        assert store.transport.connections.curl() is None
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}})
        assert store.get("configmaps", "c", "a")["metadata"]["name"] == "c"
        assert kube_server.requests[-1].headers["host"] == "kube.invalid:6443"
    finally:
        store.close()


def test_a_tls_setting_libcurl_is_not_given_leaves_the_requests_to_urllib3(kube_server: MockApiServer) -> None:
    configuration = Configuration(host=kube_server.url)
    configuration.assert_hostname = "apiserver.example"  # a name to check the certificate for: urllib3's setting
    store = KubeStore(ApiClient(configuration), KUBE_TEST_OPTIONS)
    try:
        assert store.transport.connections.curl() is None
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}})
        assert store.get("configmaps", "c", "a")["metadata"]["name"] == "c"
        assert store.transport.connections.pool() is not None
    finally:
        store.close()


def _answers_with_retry_after(status: bytes) -> Callable[[socket.socket], bool]:
    def answer(conn: socket.socket) -> bool:
        body = b"{}"
        conn.sendall(
            b"HTTP/1.1 %s\r\nRetry-After: 7\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (status, len(body), body)
        )
        return True

    return answer


@pytest.mark.parametrize(("status", "retry_after"), [(b"503 Service Unavailable", "7"), (b"200 OK", None)])
def test_the_retry_after_of_an_error_answer_is_read_a_successs_is_not(status: bytes, retry_after: str | None) -> None:
    """Retry-After decides an error's retry and goes with its error; a success's is never used, so not looked for."""
    from kai_scheduler.store.kube_http.cancellation import Cancellation
    from kai_scheduler.store.kube_http.curl import CurlSender

    server = RawServer(_answers_with_retry_after(status))
    sender = CurlSender(server.url, {}, Cancellation())
    try:
        answer = sender.send("GET", "/x", {}, None, (5.0, 5.0), "get x", 0)
        assert (answer.status, answer.retry_after) == (int(status[:3]), retry_after)
    finally:
        sender.close()
        server.close()


def _answers_then_falls_silent() -> Callable[[socket.socket], bool]:
    """The first request answered at once, the next one never (the server holds it 5 s, then hangs up)."""
    answered: list[bool] = []

    def answer(conn: socket.socket) -> bool:
        if answered:
            time.sleep(5)
            return False
        answered.append(True)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        return True

    return answer


def test_a_handle_takes_each_requests_read_timeout_though_it_keeps_the_last_ones() -> None:
    """A handle sets its timeouts again only when a request's differ from those it has: a request with a shorter
    read timeout than the one before, on the same handle and connection, still ends at its own."""
    from kai_scheduler.store.kube_http.cancellation import Cancellation
    from kai_scheduler.store.kube_http.curl import CurlSender

    server = RawServer(_answers_then_falls_silent())
    sender = CurlSender(server.url, {}, Cancellation())
    try:
        assert sender.send("GET", "/x", {}, None, (5.0, 30.0), "get x", 0).status == 200
        started = time.monotonic()
        with pytest.raises(NoAnswer, match=r"read timed out \(no byte for 1s\)"):  # a POST: not tried again
            sender.send("POST", "/x", {}, b"{}", (5.0, 1.0), "create x", 0)
        assert time.monotonic() - started < 4
        assert len(server.requests) == 2
    finally:
        sender.close()
        server.close()
