"""The scheduler's step tells its runner when the API server refused some of its writes (runtime.loop)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.runtime import components
from kai_scheduler.runtime.loop import Outcome
from kai_scheduler.runtime.options import SchedulerOptions
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


class RefusingStore(MemoryStore):
    """Refuses BindRequest creates with 500 while `refusing`."""

    refusing = True

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.refusing and obj.get("kind") == "BindRequest":
            raise StoreError("create BindRequest: Internal error occurred: etcdserver: leader changed")
        return super().create(obj)


def test_a_cycle_whose_bind_request_was_refused_returns_writes_refused_and_one_that_wrote_all_does_not() -> None:
    clock = ManualClock(b.NOW)
    store = RefusingStore(clock)
    store.add_many([b.queue("q"), b.node("n1"), b.podgroup("j"), b.pod("j-0", group="j", gpus=1)])
    step = components.scheduler(store, SchedulerOptions(), CollectorRegistry(), clock).step
    assert step() is Outcome.WRITES_REFUSED
    store.refusing = False
    clock.advance(1)
    assert step() is None
    assert [br["spec"]["podName"] for br in store.list("bindrequests")[0]] == ["j-0"]
