"""The last check of a request, right before its bytes go out on a connection.

A request may wait for a connection (opening it, its TLS handshake) after the transport and its caller last
looked. A lease lapse meanwhile cuts the requests in flight and resumes the store at once, and the fence refuses
the leader's writes from then on; the write that was waiting must not go out late on the fresh connection. So
the connection asks again when it writes: whether a cancel came since the request started, and the caller's own
check (`interface.checked_when_sent`: the fence's leadership). This module asks it for urllib3's connections; a
libcurl handle (`curl`) is given the request's name and start and asks the same itself.
"""

from __future__ import annotations

from contextvars import ContextVar

from kai_scheduler.store import interface
from kai_scheduler.store.kube_http.cancellation import Cancellation

# The request the current thread is sending: its store's cancellation, the `cuts` it saw when it started, and its
# name. A tuple: one is made for every request.
Sending = tuple[Cancellation, int, str]

# Set by the transport around handing a request to its pool; read by the connection that writes it.
SENDING: ContextVar[Sending | None] = ContextVar("sending", default=None)


def check_before_writing() -> None:
    """Raise if the request the current thread is sending may no longer go out (Cancelled, or the caller's
    refusal, e.g. the fence's NotLeading)."""
    sending = SENDING.get()
    if sending is not None:
        cancellation, since, what = sending
        cancellation.check(what, since)
    interface.check_before_sending()
