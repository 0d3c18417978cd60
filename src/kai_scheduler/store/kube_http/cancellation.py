"""Cutting a store's requests in flight, for a process that stops while the API server does not answer.

A read waits up to the read timeout, and an idempotent request whose answer did not come is tried three more
times: a stopping process cannot wait for that. The store's `Cancellation` knows the sockets of its connections
(libcurl's and urllib3's): `cancel()` shuts them down, so every request in flight fails at once (Unavailable), and
refuses new requests (and wakes the rate limiter's and Retry-After's sleeps) until `resume()`. Through an HTTP
proxy the connections are the proxy manager's and cannot be cut; a request there ends by its own timeouts.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading

from kai_scheduler.store.kube_http.errors import Cancelled


class Cancellation:
    """The live sockets of one store, and whether its requests are cancelled.

    A connection's socket is registered as soon as it exists (a TLS socket before its handshake) and dropped
    before it closes; `cancel` shuts every registered socket down (both directions), which ends a read or a TLS
    handshake waiting on it at once, and makes new requests and new connections fail until `resume`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # A Python socket (urllib3's) or a descriptor (libcurl's) → its descriptor.
        self._sockets: dict[socket.socket | int, int] = {}
        self.cancelled = threading.Event()  # also what the transport's sleeps wait on
        # The same as `cancelled.is_set()`, read by `check` (three times a request) without a call.
        self._refusing = False
        self.cuts = 0  # how many times `cancel` was called: a request that saw another number was cut

    def add(self, sock: socket.socket) -> None:
        fd = sock.fileno()
        with self._lock:
            self._sockets[sock] = fd
            cut = self.cancelled.is_set()
        if cut:  # cancelled while it was connecting
            _shut(fd)

    def drop(self, sock: socket.socket) -> None:
        """Before the socket closes: its descriptor is no longer ours to shut down."""
        with self._lock:
            self._sockets.pop(sock, None)

    def add_descriptor(self, fd: int) -> bool:
        """A socket libcurl made, before it connects: False (not added) when cancelled, as a refused connection.
        A cancel before it connects cannot cut it (a socket shuts down once connected): the request's last check
        (`send_check`) refuses it then."""
        with self._lock:
            if self.cancelled.is_set():
                return False
            self._sockets[fd] = fd
        return True

    def drop_descriptor(self, fd: int) -> None:
        """Before libcurl's socket closes."""
        with self._lock:
            self._sockets.pop(fd, None)

    def check(self, what: str, since: int) -> None:
        """Raise Cancelled (an Unavailable) when cancelled, or when a cancel came since the request started (its
        `since`, the `cuts` it saw then): a stopping process may resume its store (for the Lease releases) before
        a request it cut, or refused a connection, looks at why it failed."""
        if self._refusing or self.cuts != since:
            raise Cancelled(f"{what}: cancelled: the client is shutting down")

    def cancel(self) -> int:
        """Refuse new requests and cut the connections; return how many were cut."""
        with self._lock:
            self.cuts += 1
            self._refusing = True
            self.cancelled.set()
            fds = list(self._sockets.values())
            # Shut down under the lock: a socket that closes meanwhile waits in `drop`, so its descriptor cannot
            # be reused by another socket before it is shut down.
            for fd in fds:
                _shut(fd)
        return len(fds)

    def resume(self) -> None:
        with self._lock:  # as `cancel` sets both: the flag and the event never disagree once it returns
            self.cancelled.clear()
            self._refusing = False

    @property
    def live(self) -> int:
        with self._lock:
            return len(self._sockets)


def _shut(fd: int) -> None:
    """Shut a socket down by descriptor (a duplicate shares the connection; an SSL socket's own `shutdown` would
    drop its TLS state under a thread reading it)."""
    try:
        dup = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    with dup, contextlib.suppress(OSError):
        dup.shutdown(socket.SHUT_RDWR)
