"""`may_have_been_done`: which failed writes may have been carried out all the same (the binder and the scheduler
then read back what the server holds instead of taking the write as not made)."""

from __future__ import annotations

import pytest

from kai_scheduler.store.interface import AlreadyExists, Conflict, Invalid, NotFound, StoreError, may_have_been_done
from kai_scheduler.store.kube_http.errors import Unavailable, error_from_status


def _answered(code: int) -> StoreError:
    return error_from_status(code, {"message": f"HTTP {code}"}, "bind Pod ns/p to node n1")


@pytest.mark.parametrize(
    "err",
    [
        Unavailable("bind Pod ns/p: cannot reach the API server: Connection aborted (RemoteDisconnected)"),
        StoreError("bind Pod ns/p: connection reset by peer"),  # no answer: code 0
        _answered(500),
        _answered(503),
        _answered(504),
    ],
)
def test_a_write_without_an_answer_or_failed_by_the_server_may_have_been_done(err: StoreError) -> None:
    assert may_have_been_done(err)


@pytest.mark.parametrize(
    "err",
    [
        NotFound("pod ns/p"),
        AlreadyExists("bindrequests ns/p"),
        Conflict("pod p is already assigned"),
        Invalid("spec.selectedNode"),
        _answered(403),
        _answered(409),
        _answered(422),
        _answered(429),
    ],
)
def test_a_write_the_server_refused_was_not_done(err: StoreError) -> None:
    assert not may_have_been_done(err)
