"""An HTTPS client for the webhook server tests: verifies the chain against a CA and the service's DNS name."""

from __future__ import annotations

import http.client
import socket
import ssl

SERVICE_HOST = "kai-admission.kai-scheduler.svc"


class _Connection(http.client.HTTPSConnection):
    """Connects to 127.0.0.1 but checks the certificate for `SERVICE_HOST`, as the API server would."""

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        super().__init__("127.0.0.1", port, context=context, timeout=10)
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=SERVICE_HOST)


def post(port: int, ca_pem: bytes, path: str, body: bytes) -> tuple[int, bytes, dict[str, str]]:
    """POST `body`; return status, body and the server certificate's subject/serial."""
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    conn = _Connection(port, ctx)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        assert conn.sock is not None
        cert = conn.sock.getpeercert() or {}
        return resp.status, data, {"serial": str(cert.get("serialNumber"))}
    finally:
        conn.close()
