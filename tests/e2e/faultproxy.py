"""A loopback HTTP proxy in front of a real kube-apiserver that, on command, answers chosen requests with an error
of its own instead of forwarding them (a burst of 500s and 503s, 429s with Retry-After: what a server under
stress answers, and what a real one cannot be made to answer on demand), and records every request it sees.

Clients reach it over plain HTTP on 127.0.0.1, with a kubeconfig from `kubeconfig` whose server is
`http://127.0.0.1:<port>/<client>`: the first path segment names the client (the components all send the same
User-Agent), and the client library keeps a server's path as the prefix of every request. The proxy forwards to
the API server over HTTPS, verified with the kubeconfig's CA (or over HTTP, the project's mock API server), with
the client's headers (its bearer token: a client certificate cannot pass through). Answers without a length
(watches) are streamed chunk by chunk.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import urllib3
import yaml

WRITES = frozenset({"create", "update", "patch", "delete"})  # verbs, as `verb` names them
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host"})
REASONS = {410: "Expired", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
MESSAGES = {
    410: "too old resource version",
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: etcdserver: leader changed",
    503: "the server is currently unable to handle the request",
}


def verb(method: str, path: str, query: str) -> str:
    """The Kubernetes verb of a request (as the API server's request info names it): a GET of a collection is a
    list, or a watch with `watch=true`; of one object (or its subresource) a get."""
    if method != "GET":
        return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
    if parse_qs(query).get("watch", [""])[0] in ("true", "1"):
        return "watch"
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]  # after /api/v1 or /apis/<group>/<version>
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return "list" if len(rest) == 1 else "get"


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the proxy saw it and what it answered."""

    at: float  # time.monotonic() when it arrived
    client: str
    method: str
    verb: str
    target: str  # path and query, without the client's prefix
    body: str  # a digest: a retry of the same request sends the same body
    status: int
    injected: bool = False  # answered by the proxy, not forwarded
    retry_after: int | None = None  # the Retry-After the proxy answered, seconds

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What a retry of this request repeats."""
        return self.client, self.method, self.target, self.body


@dataclass(frozen=True, slots=True)
class Fault:
    """Answer the requests of these verbs with this status (and Retry-After), as the API server words it. With
    `every` n, one attempt in n of each request (the first, the n+1-th, … of the same client, method, target and
    body), the others forwarded: a server refusing part of its load, where each write is refused once and goes
    through when retried."""

    status: int
    verbs: frozenset[str]
    retry_after: int | None = None
    every: int = 1

    def answer(self) -> tuple[bytes, dict[str, str]]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": MESSAGES.get(self.status, "injected by the fault proxy"),
            "reason": REASONS.get(self.status, ""),
            "code": self.status,
        }
        headers = {"Content-Type": "application/json"}
        if self.retry_after is not None:
            status["details"] = {"retryAfterSeconds": self.retry_after}
            headers["Retry-After"] = str(self.retry_after)
        return json.dumps(status).encode(), headers


class FaultProxy:
    def __init__(self, kubeconfig: str) -> None:
        self._doc: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text(encoding="utf-8"))
        cluster = _current_cluster(self._doc)
        url = urlsplit(cluster["server"])
        assert url.hostname in ("127.0.0.1", "localhost"), f"not a loopback API server: {cluster['server']}"
        tls: dict[str, Any] = {}
        if url.scheme == "https":
            ca = cluster.get("certificate-authority-data")
            tls = {
                "ca_certs": cluster.get("certificate-authority"),
                "ca_cert_data": base64.b64decode(ca).decode() if ca else None,
            }
        # maxsize: a watch holds its connection, one per stream of every client
        self._upstream = urllib3.connection_from_url(cluster["server"], maxsize=64, retries=False, **tls)
        self._lock = threading.Lock()
        self._faults: tuple[Fault, ...] = ()
        self._matched: dict[tuple[Fault, tuple[str, str, str, str]], int] = {}  # attempts each fault matched
        self._streams: set[urllib3.BaseHTTPResponse] = set()
        self._seen: list[Seen] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True).start()

    def inject(self, *faults: Fault) -> None:
        """From now on answer each request of a fault's verbs as it says (the first that matches) instead of
        forwarding it, in place of the faults before; the requests in flight and the open watches go on."""
        with self._lock:
            self._faults, self._matched = faults, {}

    def forward(self) -> None:
        """Forward everything again."""
        self.inject()

    def end_watches(self) -> int:
        """Cut the watches in flight, as a server going away does (their clients see the connection break and
        watch again); how many."""
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            # a watch that ended since (its connection back in the pool: RuntimeError) has nothing left to cut
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                stream.shutdown()
        return len(streams)

    def requests(self, since: float = 0.0, until: float = float("inf")) -> list[Seen]:
        """The requests that arrived in [since, until] (time.monotonic()), in order."""
        with self._lock:
            return sorted((s for s in self._seen if since <= s.at <= until), key=lambda s: s.at)

    def kubeconfig(self, client: str, directory: Path) -> str:
        """A copy of the proxied kubeconfig whose server is this proxy, the requests tagged as `client`'s."""
        doc = json.loads(json.dumps(self._doc))  # a deep copy
        cluster = _current_cluster(doc)
        cluster.pop("certificate-authority", None)
        cluster.pop("certificate-authority-data", None)
        cluster["server"] = f"http://127.0.0.1:{self.port}/{client}"
        path = directory / f"{client}-through-fault-proxy.kubeconfig"
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
        return str(path)

    def close(self) -> None:
        """Stop serving; cut the watches in flight (their clients see the connection end)."""
        self._server.shutdown()
        self._server.server_close()
        self.end_watches()
        self._upstream.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, and chunked answers

            def do_request(self) -> None:
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_request

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the requests are in `requests()`

        return Handler

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        arrived = time.monotonic()
        client, _, rest = handler.path.lstrip("/").partition("/")
        target = "/" + rest
        url = urlsplit(target)
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        digest = hashlib.sha256(body).hexdigest()[:16]
        seen = Seen(arrived, client, handler.command, verb(handler.command, url.path, url.query), target, digest, 0)
        with self._lock:
            fault = next((f for f in self._faults if seen.verb in f.verbs), None)
            if fault is not None:
                matched = self._matched[fault, seen.key] = self._matched.get((fault, seen.key), 0) + 1
                fault = fault if (matched - 1) % fault.every == 0 else None
        if fault is not None:
            self._record(replace(seen, status=fault.status, injected=True, retry_after=fault.retry_after))
            data, headers = fault.answer()
            _answer(handler, fault.status, headers, [data], len(data))
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            upstream = self._upstream.urlopen(
                handler.command,
                target,
                body=body or None,
                headers=headers,
                preload_content=False,
                decode_content=False,
                timeout=urllib3.Timeout(connect=5.0, read=None),  # a watch waits as long as its server does
                assert_same_host=False,
            )
        except urllib3.exceptions.HTTPError:
            self._record(replace(seen, status=502))
            handler.close_connection = True
            _answer(handler, 502, {}, [], 0)
            return
        self._record(replace(seen, status=upstream.status))
        self._relay(handler, upstream)

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    def _relay(self, handler: BaseHTTPRequestHandler, upstream: urllib3.BaseHTTPResponse) -> None:
        """The server's answer to the client: whole when it has a length, else (a watch) chunk by chunk."""
        length = upstream.headers.get("Content-Length")
        headers = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
        complete = False
        try:
            if length is not None:
                _answer(handler, upstream.status, headers, [upstream.read(decode_content=False)], int(length))
            else:
                with self._lock:
                    self._streams.add(upstream)
                _answer(handler, upstream.status, headers, _chunks(upstream), None)
            complete = True
        except (OSError, urllib3.exceptions.HTTPError):  # the client went away, or the stream was cut
            handler.close_connection = True
        finally:
            with self._lock:
                self._streams.discard(upstream)
            if not complete:
                upstream.close()  # not back to the pool with half an answer unread
            upstream.release_conn()


def _chunks(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    if response.chunked:
        yield from response.read_chunked(decode_content=False)
    else:
        yield from iter(lambda: response.read1(65536), b"")


def _answer(
    handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: Iterable[bytes], length: int | None
) -> None:
    """Send status, headers and body: with a Content-Length when known, else chunk by chunk as it comes."""
    handler.send_response_only(status)
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.send_header(
        "Content-Length" if length is not None else "Transfer-Encoding",
        str(length) if length is not None else "chunked",
    )
    handler.end_headers()
    for chunk in body:
        if length is not None:
            handler.wfile.write(chunk)
        elif chunk:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            handler.wfile.flush()
    if length is None:
        handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def _current_cluster(doc: dict[str, Any]) -> dict[str, Any]:
    """The `cluster` entry of a kubeconfig's current context."""
    context = next(c for c in doc["contexts"] if c["name"] == doc["current-context"])["context"]
    cluster: dict[str, Any] = next(c for c in doc["clusters"] if c["name"] == context["cluster"])["cluster"]
    return cluster
