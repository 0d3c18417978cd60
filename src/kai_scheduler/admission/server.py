"""`WebhookServer`: the HTTPS transport of the webhooks (stdlib `http.server` + `ssl`), one thread per connection.

TLS comes from a certificate/key file pair. Each new connection first checks the files' size and mtime (two
`stat`s); when they changed, the pair is loaded into a fresh SSL context and later connections use it, so a
rotated certificate (by `certs.CertManager`, or a mounted Secret updated by the kubelet) is served without a
restart. A pair that fails to load (e.g. caught between the two renames) keeps the previous context and is
retried on the next connection. The TLS handshake runs in the connection's thread, never in the accept loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

from kai_scheduler.admission.defaults import DEFAULT_PORT as DEFAULT_PORT
from kai_scheduler.admission.webhooks import Answer, Dispatcher
from kai_scheduler.api.errors import UserError

log = logging.getLogger(__name__)

MAX_BODY: Final = 16 * 1024 * 1024  # larger than any object etcd stores (1.5 MiB) with room to spare
HANDSHAKE_TIMEOUT: Final = 10.0
REQUEST_TIMEOUT: Final = 30.0


class TlsFiles:
    """An SSL server context from a cert/key pair, reloaded when the files change."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._lock = threading.Lock()
        self._stamp: tuple[tuple[int, int], ...] = ()
        self._context: ssl.SSLContext | None = None
        self.context()  # a pair that cannot load at start is an error for the caller

    def context(self) -> ssl.SSLContext:
        with self._lock:
            stamp = self._file_stamp()
            if stamp != self._stamp or self._context is None:
                try:
                    self._context = self._load()
                    self._stamp = stamp
                    log.info("serving certificate loaded", extra={"cert": str(self.cert_file)})
                except (OSError, ssl.SSLError) as err:
                    if self._context is None:
                        raise UserError(f"{self.cert_file}, {self.key_file}: cannot load the TLS pair: {err}") from None
                    log.warning(
                        "serving certificate changed but cannot be loaded; keeping the previous one",
                        extra={"cert": str(self.cert_file), "error": str(err)},
                    )
            return self._context

    def _file_stamp(self) -> tuple[tuple[int, int], ...]:
        try:
            return tuple((s.st_mtime_ns, s.st_size) for s in (os.stat(self.cert_file), os.stat(self.key_file)))
        except OSError:
            return ()

    def _load(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], dispatcher: Dispatcher, tls: TlsFiles) -> None:
        self.dispatcher = dispatcher
        self.tls = tls
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Runs in the connection's thread: handshake, then serve."""
        sock: socket.socket = request
        sock.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls_sock = self.tls.context().wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError) as err:
            log.debug("TLS handshake failed", extra={"client": str(client_address), "error": str(err)})
            return
        tls_sock.settimeout(REQUEST_TIMEOUT)
        try:
            _Handler(tls_sock, client_address, self)
        finally:
            with contextlib.suppress(OSError):
                tls_sock.close()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._send(Answer(411, "text/plain", b"Content-Length required\n"))
            return
        if int(length) > MAX_BODY:
            self._send(Answer(413, "text/plain", f"body larger than {MAX_BODY} bytes\n".encode()))
            self.close_connection = True
            return
        body = self.rfile.read(int(length))
        self._send(self.server.dispatcher.handle(self.path, body))

    def do_GET(self) -> None:
        self._send(Answer(405, "text/plain", b"webhooks answer POST\n"))

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("webhook request", extra={"request": format % args})


class WebhookServer:
    """The HTTPS webhook server: `start()` serves in a background thread, `stop()` ends it."""

    def __init__(
        self, dispatcher: Dispatcher, cert_file: Path, key_file: Path, *, host: str = "", port: int = DEFAULT_PORT
    ) -> None:
        self.tls = TlsFiles(cert_file, key_file)
        try:
            self._server = _Server((host, port), dispatcher, self.tls)
        except OSError as err:
            raise UserError(f"webhook server: cannot listen on {host or '*'}:{port}: {err.strerror}") from None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def is_serving(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="kai-admission-webhooks", daemon=True)
        self._thread.start()
        log.info("webhook server listening", extra={"port": self.port})

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
