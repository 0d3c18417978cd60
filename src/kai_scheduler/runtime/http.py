"""Health, readiness and Prometheus endpoints of a long-running component, on one address.

- `/healthz`: 200 "ok" while every liveness check passes; otherwise 500 naming the failing checks.
- `/readyz`: 200 "ok" while every readiness check passes; otherwise 503 listing the failing checks.
- `/metrics`: the registry in the Prometheus text format (`store.exposition`: KAI's Go counter names kept).

A check that raises counts as failing. The server answers from a daemon thread, one thread per request.
`PluginServer` is the scheduler's other server (`--plugin-server-port`), for the endpoints of its plugins.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from kai_scheduler.api.errors import UserError
from kai_scheduler.store import exposition

log = logging.getLogger(__name__)

Check = Callable[[], bool]


def parse_address(address: str) -> tuple[str, int]:
    """ ":8080" → ("", 8080) (every interface); "127.0.0.1:0" → ("127.0.0.1", 0). ValueError if malformed."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UserError(f'listen address {address!r}: want HOST:PORT or :PORT, such as ":8080"')
    return host.strip("[]"), int(port)


class _Served:
    """A server answering from a daemon thread, one thread per request: bound by `start`, closed by `stop`."""

    _thread_name = "http-server"

    def __init__(self, bind: tuple[str, int]) -> None:
        self._bind = bind
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def _started(self) -> None:
        """Say what is served, once bound."""

    def start(self) -> None:
        """Bind and serve in a daemon thread; OSError if the address cannot be bound."""
        if self._server is not None:
            return
        server_class = _IPv6Server if ":" in self._bind[0] else ThreadingHTTPServer
        server = server_class(self._bind, self._handler())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=self._thread_name, daemon=True)
        self._thread.start()
        self._started()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    @property
    def port(self) -> int:
        """The bound port (the one chosen by the system when the address asked for port 0)."""
        return self._bind[1] if self._server is None else int(self._server.server_address[1])


class HealthServer(_Served):
    _thread_name = "health-server"

    def __init__(self, address: str, registry: CollectorRegistry) -> None:
        super().__init__(parse_address(address))
        self.registry = registry
        self._readiness: dict[str, Check] = {}
        self._liveness: dict[str, Check] = {}
        self._lock = threading.Lock()

    def add_readiness(self, name: str, check: Check) -> None:
        with self._lock:
            self._readiness[name] = check

    def add_liveness(self, name: str, check: Check) -> None:
        with self._lock:
            self._liveness[name] = check

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler(self)

    def _started(self) -> None:
        log.info("serving health and metrics", extra={"address": f"{self._bind[0]}:{self.port}"})

    def failing(self, kind: str) -> list[str]:
        """The names of the failing "readiness" or "liveness" checks, sorted."""
        with self._lock:
            checks = dict(self._readiness if kind == "readiness" else self._liveness)
        return sorted(name for name, check in checks.items() if not _passes(name, check))

    def metrics(self) -> bytes:
        return exposition.text(self.registry)


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _passes(name: str, check: Check) -> bool:
    try:
        return bool(check())
    except Exception:  # a broken check reports failure, never takes the endpoint down
        log.debug("health check raised", exc_info=True, extra={"check": name})
        return False


def _handler(owner: HealthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http " + format, *args)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._checks("liveness", 500)
            elif path == "/readyz":
                self._checks("readiness", 503)
            elif path == "/metrics":
                self._send(200, owner.metrics(), CONTENT_TYPE_LATEST)
            else:
                self._send(404, b"not found\n")

        def _checks(self, kind: str, failure: int) -> None:
            failing = owner.failing(kind)
            if failing:
                self._send(failure, f"{kind} check failed: {', '.join(failing)}\n".encode())
            else:
                self._send(200, b"ok")

        def _send(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@dataclass(frozen=True, slots=True)
class Reply:
    """What an endpoint of a `PluginServer` answers."""

    code: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


Endpoint = Callable[[], Reply]


class PluginServer(_Served):
    """KAI's plugin server (`--plugin-server-port`): the GET endpoints plugins register (the `snapshot` plugin's
    `/get-snapshot`), each answered from a daemon thread, one thread per request; any other path is 404. An
    endpoint that raises answers 500 with the error in one line (and the traceback at debug level)."""

    _thread_name = "plugin-server"

    def __init__(self, host: str, port: int, endpoints: Mapping[str, Endpoint]) -> None:
        super().__init__((host, port))
        self.endpoints = dict(endpoints)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _plugin_handler(self)

    def _started(self) -> None:
        log.info(
            "serving plugin endpoints",
            extra={"address": f"{self._bind[0]}:{self.port}", "paths": sorted(self.endpoints)},
        )


def _plugin_handler(owner: PluginServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http " + format, *args)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            endpoint = owner.endpoints.get(path)
            if endpoint is None:
                reply = Reply(404, b"404 page not found\n")
            else:
                try:
                    reply = endpoint()
                except Exception as err:  # one bad request never takes the server (or the scheduler) down
                    log.debug("plugin endpoint raised", exc_info=True, extra={"path": path})
                    log.error(f"{path}: {type(err).__name__}: {err}", extra={"path": path})
                    reply = Reply(500, f"{path}: {type(err).__name__}: {err}\n".encode())
            self.send_response(reply.code)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

    return Handler
