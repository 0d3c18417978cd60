"""Requests with a whole answer through libcurl (pycurl): half the client CPU of urllib3's per request.

`CurlSender` sends a request on an easy handle taken from a small pool (one per thread sending at once; each
keeps its connection alive between requests), with the settings the client library gives its own urllib3 pools:
the CA (file, data or the system's), verification, the client certificate and key files, the TLS server name,
the socket options. Its answer is read whole. Like the urllib3 connections (`connection`):

- right before the request goes out (after its connection is open and its TLS handshake done), it is asked
  whether it may still go, as `send_check` asks urllib3's (a cancel since it started, the fence's leadership:
  the handle is given the request's name and start itself, so the transport sets no context for it); a refusal
  aborts it unsent and is raised as it is (Cancelled, NotLeading);
- each socket is known to the store's `Cancellation` from its creation until it closes, so `cancel()` cuts it;
- a request that got no answer is tried again, up to 3 more times, as urllib3's `Retry(total=3)` did: any
  request whose bytes did not go out, an idempotent one whose answer did not come;
- the read timeout is the longest wait for the next byte (libcurl's low-speed limit of 1 byte/s over it, whole
  seconds), not a bound on the whole answer: a long LIST is not cut.
"""

from __future__ import annotations

import math
import os
import socket
import ssl
import threading
import time
from typing import Any, Final, NamedTuple

import pycurl
import urllib3

from kai_scheduler.store import interface
from kai_scheduler.store.kube_http.cancellation import Cancellation
from kai_scheduler.store.kube_http.errors import NoAnswer

# The pool settings (the `kubernetes` client's, as its PoolManager has them) this sender carries over; a pool
# with any other TLS setting is left to urllib3 (`supports`).
_SETTINGS: Final = frozenset(
    {
        "cert_reqs",
        "ca_certs",
        "ca_cert_data",
        "cert_file",
        "key_file",
        "assert_hostname",
        "server_hostname",
        "socket_options",
        "maxsize",
        "retries",  # the client's own retries of urllib3's requests; ours are `_RETRIES`
    }
)
_RETRIES: Final = 3  # urllib3.Retry(total=3): the transport's retries of a request that got no answer
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})  # urllib3's for read errors
_TLS_ERRORS: Final = frozenset(
    {
        pycurl.E_SSL_CONNECT_ERROR,
        pycurl.E_PEER_FAILED_VERIFICATION,
        pycurl.E_SSL_CERTPROBLEM,
        pycurl.E_SSL_CIPHER,
        pycurl.E_SSL_CACERT_BADFILE,
        pycurl.E_SSL_ENGINE_NOTFOUND,
        pycurl.E_SSL_ENGINE_SETFAILED,
        pycurl.E_SSL_SHUTDOWN_FAILED,
        pycurl.E_SSL_CRL_BADFILE,
        pycurl.E_SSL_ISSUER_ERROR,
    }
)


class Answer(NamedTuple):
    """An HTTP answer read whole: its status, body and Retry-After header (looked for in an error's answer only:
    a success's is never read); `elapsed`: seconds from the start of the request (its retries included) to the
    answer's first byte. A tuple: one is made for every request, and a frozen dataclass's `__init__` sets each
    field through `object.__setattr__`."""

    status: int
    body: bytes
    retry_after: str | None
    elapsed: float

    def read(self) -> bytes:
        return self.body


def supports(settings: dict[str, Any]) -> bool:
    """Whether a pool with these settings (a PoolManager's `connection_pool_kw`) can be sent through libcurl: an
    `assert_hostname` naming another host than the URL's is urllib3's alone (the client library's is a bool)."""
    return all(value is None or key in _SETTINGS for key, value in settings.items()) and isinstance(
        settings.get("assert_hostname", False), bool
    )


class CurlSender:
    """Requests to one origin through reused libcurl handles (see the module docstring); thread-safe."""

    def __init__(self, origin: str, settings: dict[str, Any], cancellation: Cancellation) -> None:
        self.cancellation = cancellation
        self._settings = settings
        url = urllib3.util.parse_url(origin)
        # A TLS server name other than the host (the kubeconfig's tls-server-name): the URL names it, for SNI and
        # the certificate's check, libcurl connects to the host, and the Host header stays the host's.
        server_name = settings.get("server_hostname")
        if server_name and url.scheme == "https" and url.host:
            port = url.port or 443
            self._base = f"https://{server_name}:{port}"
            self._connect_to: list[str] = [f"{server_name}:{port}:{url.host}:{port}"]
            self._host_header: list[str] = [f"Host: {url.netloc}"]
        else:
            self._base, self._connect_to, self._host_header = origin, [], []
        self._idle: list[_Handle] = []
        self._max_idle = int(settings.get("maxsize") or 10)
        self._lock = threading.Lock()
        self._closed = False

    def send(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        data: bytes | None,
        timeouts: tuple[float, float],
        what: str,
        since: int,
    ) -> Answer:
        """Send and read the answer whole, trying again as urllib3 would (no answer, nothing sent or the method
        idempotent); NoAnswer when none came. A refusal right before sending is raised as it is."""
        handle = self._take()
        try:
            handle.prepare(method, self._base + target, headers, data, timeouts, self._host_header)
            handle.sending = (what, since)
            started = attempt_started = time.perf_counter()
            attempt = 0
            while True:
                failure = handle.perform()
                if failure is None:
                    return handle.answer(attempt_started - started)
                if handle.refused is not None:
                    raise handle.refused
                status = handle.status()
                sent = handle.sent
                if status or attempt >= _RETRIES or (sent and method not in _IDEMPOTENT):
                    text = describe(failure, handle, timeouts)
                    raise NoAnswer(text, status, time.perf_counter() - started)
                self.cancellation.check(what, since)  # a cut request is not tried again
                attempt += 1
                attempt_started = time.perf_counter()
        finally:
            self._give_back(handle)

    def close(self) -> None:
        """Close the idle handles and their connections; a handle in use closes when its request ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for handle in idle:
            handle.close()

    def _take(self) -> _Handle:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return _Handle(self._settings, self.cancellation, self._connect_to)

    def _give_back(self, handle: _Handle) -> None:
        handle.chunks.clear()  # the answer let go; the handle keeps its options and connection
        handle.head.clear()
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(handle)
                return
        handle.close()


class _Handle:
    """One libcurl easy handle, its connection, and what its callbacks collect about the current request."""

    def __init__(self, settings: dict[str, Any], cancellation: Cancellation, connect_to: list[str]) -> None:
        self.cancellation = cancellation
        self.chunks: list[bytes] = []
        self.head: list[bytes] = []  # the answer's header lines, status lines included
        self.sent = False  # the request passed its last check and goes out
        self.refused: BaseException | None = None  # what that check raised
        self.sending: tuple[str, int] = ("", cancellation.cuts)  # the request's name and the `cuts` it saw
        self._timeouts: tuple[float, float] | None = None  # as last set on the handle
        self._socket_options: list[tuple[int, int, int]] = list(settings.get("socket_options") or ())
        c = self.curl = pycurl.Curl()
        c.setopt(pycurl.NOSIGNAL, 1)  # threads: no SIGALRM for timeouts
        c.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        # No proxy, whatever the environment says: the client library decided (through a proxy the transport
        # sends with urllib3), and libcurl would read $https_proxy and $no_proxy its own way.
        c.setopt(pycurl.PROXY, "")
        c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)  # as urllib3: one request per connection
        c.setopt(pycurl.MAXCONNECTS, 1)
        c.setopt(pycurl.LOW_SPEED_LIMIT, 1)
        c.setopt(pycurl.WRITEFUNCTION, self.chunks.append)
        c.setopt(pycurl.HEADERFUNCTION, self.head.append)
        c.setopt(pycurl.PREREQFUNCTION, self._before_sending)
        c.setopt(pycurl.SOCKOPTFUNCTION, self._opened)
        c.setopt(pycurl.CLOSESOCKETFUNCTION, self._closing)
        if connect_to:
            c.setopt(pycurl.CONNECT_TO, connect_to)
        _set_tls(c, settings)

    def prepare(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        data: bytes | None,
        timeouts: tuple[float, float],
        extra: list[str],
    ) -> None:
        c = self.curl
        c.setopt(pycurl.URL, url)
        lines = [f"{key}: {value}" for key, value in headers.items()]
        if data is None:
            c.setopt(pycurl.HTTPGET, 1)  # also drops the previous request's body
        else:
            c.setopt(pycurl.POSTFIELDSIZE, len(data))
            c.setopt(pycurl.POSTFIELDS, data)
            lines.append("Expect:")  # the body goes with the head, without waiting for 100 Continue
        c.setopt(pycurl.CUSTOMREQUEST, method)
        c.setopt(pycurl.HTTPHEADER, lines + extra if extra else lines)
        if timeouts != self._timeouts:  # a transport's are the same for each of its requests
            connect, read = timeouts
            c.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, round(connect * 1000)))
            c.setopt(pycurl.LOW_SPEED_TIME, max(1, math.ceil(read)))
            self._timeouts = timeouts

    def perform(self) -> pycurl.error | None:
        """One attempt; the error when it got no whole answer."""
        self.chunks.clear()
        self.head.clear()
        self.sent, self.refused = False, None
        try:
            self.curl.perform()
        except pycurl.error as err:
            return err
        return None

    def status(self) -> int:
        return int(self.curl.getinfo(pycurl.RESPONSE_CODE))

    def answer(self, before: float) -> Answer:
        c = self.curl
        status = int(c.getinfo(pycurl.RESPONSE_CODE))
        return Answer(
            status,
            b"".join(self.chunks),
            _header(self.head, b"retry-after:") if status >= 300 else None,
            before + c.getinfo(pycurl.STARTTRANSFER_TIME),
        )

    def close(self) -> None:
        self.curl.close()

    # libcurl's callbacks: an exception must not escape them (pycurl would print it and fail the transfer).

    def _before_sending(self, *_addresses: object) -> int:
        try:
            what, since = self.sending
            self.cancellation.check(what, since)
            interface.check_before_sending()
        except BaseException as err:  # Cancelled, NotLeading: the caller's to see
            self.refused = err
            return pycurl.PREREQFUNC_ABORT
        self.sent = True
        return pycurl.PREREQFUNC_OK

    def _opened(self, fd: int, purpose: int) -> int:
        if not self.cancellation.add_descriptor(fd):
            return pycurl.SOCKOPT_ERROR  # cancelled: no new connection
        try:
            if self._socket_options:
                with socket.socket(fileno=os.dup(fd)) as dup:  # the same socket; ours to close
                    for level, name, value in self._socket_options:
                        dup.setsockopt(level, name, value)
        except OSError:
            return pycurl.SOCKOPT_ERROR
        return pycurl.SOCKOPT_OK

    def _closing(self, fd: int) -> int:
        self.cancellation.drop_descriptor(fd)
        try:
            os.close(fd)
        except OSError:
            return 1
        return 0


def _set_tls(c: pycurl.Curl, settings: dict[str, Any]) -> None:
    """Verification, CA and client certificate as urllib3 makes them from the same settings."""
    verify = urllib3.util.resolve_cert_reqs(settings.get("cert_reqs")) != ssl.CERT_NONE
    c.setopt(pycurl.SSL_VERIFYPEER, 1 if verify else 0)
    c.setopt(pycurl.SSL_VERIFYHOST, 2 if verify and settings.get("assert_hostname") is not False else 0)
    ca_file, ca_data = settings.get("ca_certs"), settings.get("ca_cert_data")
    if ca_file:
        c.setopt(pycurl.CAINFO, ca_file)
    if ca_data:
        c.setopt(pycurl.CAINFO_BLOB, ca_data.encode() if isinstance(ca_data, str) else ca_data)
    if verify and not ca_file and not ca_data:  # the system's, as Python's `load_default_certs` finds them
        defaults = ssl.get_default_verify_paths()
        if defaults.cafile:
            c.setopt(pycurl.CAINFO, defaults.cafile)
        if defaults.capath:
            c.setopt(pycurl.CAPATH, defaults.capath)
    if settings.get("cert_file"):
        c.setopt(pycurl.SSLCERT, settings["cert_file"])
    if settings.get("key_file"):
        c.setopt(pycurl.SSLKEY, settings["key_file"])


def _header(lines: list[bytes], name: bytes) -> str | None:
    """The value of a header (`name` lower-case with its colon) in the last head (after a 100 Continue's)."""
    size = len(name)
    for line in reversed(lines):
        if line[:size].lower() == name:
            return line[size:].strip().decode("latin-1")
        if line.startswith(b"HTTP/"):
            break
    return None


def describe(err: pycurl.error, handle: _Handle, timeouts: tuple[float, float]) -> str:
    """One short line for a request that got no (whole) answer, of the kinds urllib3's errors were said in."""
    code = err.args[0] if err.args else -1
    message = str(err.args[1]) if len(err.args) > 1 else str(err)
    if code == pycurl.E_COULDNT_CONNECT:
        errno = int(handle.curl.getinfo(pycurl.OS_ERRNO))
        return os.strerror(errno) if errno else message
    if code == pycurl.E_OPERATION_TIMEDOUT:
        if handle.sent:
            return f"read timed out (no byte for {math.ceil(timeouts[1])}s)"
        return "connection timed out"
    if code in _TLS_ERRORS:
        return f"TLS failed: {message}"
    return message
