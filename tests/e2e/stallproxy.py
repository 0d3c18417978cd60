"""A loopback TCP proxy between one component and the API server whose client-to-server direction can be
stalled: connections stay open, what the component sends is held, what the server sends still arrives.

That is a partition the component cannot see (no reset, no refusal): its requests hang. On `resume` what each
connection held is sent on, except on a connection the component closed meanwhile: it gave up on those bytes,
and in a partition they would be lost with the connection. Loopback only (127.0.0.1), TLS passes through.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

CHUNK = 65536


@dataclass
class _Link:
    client: socket.socket
    server: socket.socket
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: list[bytes] = field(default_factory=list)
    abandoned: bool = False  # the client closed its end while stalled


class StallProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stalled = False
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._closed = False
        self.dropped = 0  # bytes held on connections their client closed while stalled, never sent
        threading.Thread(target=self._accept, name="stall-proxy", daemon=True).start()

    def stall(self) -> None:
        with self._lock:
            self._stalled = True

    def resume(self) -> None:
        """Send on what each open connection held; drop what the closed ones held."""
        with self._lock:
            self._stalled = False
            links = list(self._links)
        for link in links:
            with link.lock:
                held, link.held = b"".join(link.held), []
                if link.abandoned:
                    self.dropped += len(held)
                    _close(link.server)
                    continue
                with contextlib.suppress(OSError):
                    link.server.sendall(held)

    def close(self) -> None:
        self._closed = True
        _close(self._listener)
        with self._lock:
            links = list(self._links)
        for link in links:
            _close(link.client)
            _close(link.server)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            link = _Link(client, server)
            with self._lock:
                self._links.append(link)
            threading.Thread(target=self._upstream, args=(link,), daemon=True).start()
            threading.Thread(target=self._downstream, args=(link,), daemon=True).start()

    def _upstream(self, link: _Link) -> None:
        while True:
            try:
                data = link.client.recv(CHUNK)
            except OSError:
                data = b""
            with link.lock:
                with self._lock:
                    stalled = self._stalled
                if stalled:
                    if not data:
                        link.abandoned = True
                        return
                    link.held.append(data)
                    continue
                data, link.held = b"".join(link.held) + data, []  # what `resume` has not sent yet goes first
                try:
                    if data:
                        link.server.sendall(data)
                except OSError:
                    _close(link.client)
                    return
            if not data:
                _close(link.server)
                return

    def _downstream(self, link: _Link) -> None:
        while True:
            try:
                data = link.server.recv(CHUNK)
                if not data:
                    break
                link.client.sendall(data)
            except OSError:
                break
        _close(link.client)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def through(kubeconfig: str, directory: Path) -> tuple[str, StallProxy]:
    """A copy of `kubeconfig` whose current cluster is reached through a new StallProxy; its path and the proxy."""
    doc: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text(encoding="utf-8"))
    context = next(c for c in doc["contexts"] if c["name"] == doc["current-context"])["context"]
    cluster = next(c for c in doc["clusters"] if c["name"] == context["cluster"])["cluster"]
    url = urlsplit(cluster["server"])
    assert url.hostname in ("127.0.0.1", "localhost"), f"not a loopback API server: {cluster['server']}"
    port = url.port or (443 if url.scheme == "https" else 80)
    proxy = StallProxy((url.hostname, port))
    cluster["server"] = urlunsplit((url.scheme, f"{url.hostname}:{proxy.port}", url.path, "", ""))
    path = directory / f"through-proxy-{proxy.port}.kubeconfig"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(path), proxy
