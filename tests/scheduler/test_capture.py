"""The snapshot plugin's capture (`scheduler/capture.py`): the configuration written so it loads back equal, the
cache's objects in KAI's layout, and a consistent view while the scheduler's cache is being synced."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Iterator
from typing import Any

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scenario import snapshot_zip
from kai_scheduler.scheduler import capture
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.interface import WatchEvent
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


def contents(data: bytes | None) -> dict[str, Any]:
    assert data is not None
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        doc: dict[str, Any] = json.loads(archive.read("snapshot.json"))
    return doc


def names(doc: dict[str, Any], key: str) -> list[str]:
    return [o["metadata"]["name"] for o in doc["rawObjects"][key]]


def test_the_configuration_is_written_so_that_it_loads_back_equal() -> None:
    raw = {
        "actions": "allocate, reclaim",
        "tiers": [
            {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "podaffinity"}]},
            {"plugins": [{"name": "nodeplacement", "arguments": {"gpu": "spread"}}, {"name": "snapshot"}]},
        ],
        "queueDepthPerAction": {"allocate": 7},
        "scenarioSearchBudgets": {"maxActionSearchDuration": {"reclaim": "2s"}},
    }
    config = load_config(raw)
    written = capture.config_json(config)
    assert load_config(written) == config
    assert capture.enabled(config)
    assert not capture.enabled(load_config({"tiers": [{"plugins": [{"name": "predicates"}]}]}))
    assert capture.enabled(load_config(None)), "KAI's default configuration names the snapshot plugin"


def test_nothing_is_captured_before_a_cycle_then_every_kind_of_the_cache_in_key_order() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n2", gpus=0), b.node("n1", gpus=0), b.queue("q"), b.podgroup("j"), b.pod("j-0", group="j")])
    scheduler = Scheduler(store, load_config(None), clock)
    assert capture.snapshot_zip(scheduler) is None
    scheduler.run_once()
    doc = contents(capture.snapshot_zip(scheduler))
    assert list(doc) == ["config", "schedulerParams", "rawObjects"]
    assert set(doc["rawObjects"]) == {capture.RAW_KEYS[r] for r in scheduler.cache.resources}
    assert set(doc["rawObjects"]) <= set(snapshot_zip.RAW_OBJECTS)
    assert names(doc, "nodes") == ["n1", "n2"]
    # The BindRequest the cycle wrote, taken into the cache as the store answered it.
    assert [br["spec"]["podName"] for br in doc["rawObjects"]["bindRequests"]] == ["j-0"]
    assert doc["rawObjects"]["pods"][0]["kind"] == "Pod"
    assert doc["schedulerParams"]["schedulerName"] == "kai-scheduler"
    assert doc["config"]["tiers"][0]["plugins"][-3]["name"] == "snapshot"


class HeldWatch(MemoryStore):
    """A store whose watch of one resource waits, once armed, until released: a sync caught half way."""

    def __init__(self, clock: ManualClock, resource: str) -> None:
        super().__init__(clock)
        self.resource = resource
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, *, shared: bool = False
    ) -> Iterator[WatchEvent]:
        if self.armed and resource == self.resource:
            self.entered.set()
            self.release.wait(10)
        return super().watch(resource, resource_version, timeout, shared=shared)


def test_a_capture_during_a_sync_waits_for_it_and_never_sees_half_of_it() -> None:
    clock = ManualClock(b.NOW)
    store = HeldWatch(clock, "queues")  # synced after pods and podgroups
    store.add_many([b.node("n1", gpus=0), b.queue("q")])
    scheduler = Scheduler(store, load_config(None), clock)
    scheduler.snapshot()
    # One change of the cluster in three kinds: a queue, and a PodGroup and pod of that queue.
    store.add_many([b.queue("q2"), b.podgroup("j", queue="q2"), b.pod("j-0", group="j")])
    store.armed = True
    syncing = threading.Thread(target=scheduler.snapshot)
    syncing.start()
    assert store.entered.wait(10), "the sync did not reach the queues"
    captured: list[bytes | None] = []
    reader = threading.Thread(target=lambda: captured.append(capture.snapshot_zip(scheduler)))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive(), "the capture did not wait for the sync in progress"
    store.release.set()
    syncing.join(10)
    reader.join(10)
    doc = contents(captured[0])
    assert names(doc, "pods") == ["j-0"]
    assert names(doc, "queues") == ["q", "q2"], "the pod of the sync was captured without its queue"
