"""An API server that stops answering is said in two lines per process, not one per request and watch
(kube_http.reachability): a warning when the first request reaches no answer, a warning when one is answered again."""

from __future__ import annotations

import pytest

from kai_scheduler.store.kube_http.curl import CurlSender
from kai_scheduler.store.kube_http.errors import Unavailable
from tests.loopback import free_port
from tests.store.conftest import FakeTiming, MakeStore
from tests.store.mock_apiserver import MockApiServer

LOGGER = "kai_scheduler.store.kube_http.reachability"


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelname == "WARNING"]


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(
    kube_server: MockApiServer, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    timing = FakeTiming()
    store = make_store(timing)
    assert store.list("pods")[0] == []
    # The server goes away: every connection is refused (a sender to a port nothing listens on).
    refused = CurlSender(f"http://127.0.0.1:{free_port()}", {}, store.cancellation)
    monkeypatch.setattr(store.transport.connections, "curl", lambda: refused)
    with caplog.at_level("INFO", logger=LOGGER):
        for _ in range(3):
            with pytest.raises(Unavailable, match="cannot reach the API server"):
                store.list("pods")
        assert store.reachability.down
        [down] = said(caplog)
        assert down.startswith("API server unreachable: cannot reach the API server ") and "\n" not in down
        timing.t += 32.5
        monkeypatch.undo()  # it answers again
        assert store.list("pods")[0] == []
        store.list("nodes")
    assert not store.reachability.down
    assert said(caplog)[1:] == [
        "API server reachable again after 32.5s unreachable; 3 requests failed meanwhile (the watches resume or relist)"
    ]


def test_a_refusal_is_an_answer_not_an_outage(
    kube_server: MockApiServer, make_store: MakeStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store()
    with caplog.at_level("INFO", logger=LOGGER), pytest.raises(Exception, match="not found"):
        store.get("pods", "nobody", "ns")
    assert not store.reachability.down and said(caplog) == []
