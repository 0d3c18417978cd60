"""The API server's refusals reach the user as one log line naming the object, and the component goes on.

Each component runs its step (through the loop's Runner, as in a process) over HTTP against the mock API server,
which refuses one write with 403 (RBAC), 409, 422 (with field causes), 429 (with Retry-After, past the retries)
or 500. The step is run again while the refusal lasts, then once after: the write goes through.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cli.logs import TextFormatter
from kai_scheduler.runtime import components
from kai_scheduler.runtime.loop import Runner
from kai_scheduler.runtime.options import BinderOptions, GrouperOptions, SchedulerOptions
from kai_scheduler.store.interface import JSON
from kai_scheduler.store.kube import KubeOptions, KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NAMESPACE, NOW, bind_request, node, pod, podgroup, queue
from tests.loopback import write_kubeconfig
from tests.store.mock_apiserver import MockApiServer

FORBIDDEN = (
    '{what} is forbidden: User "system:serviceaccount:kai-scheduler:kai-x" cannot {verb} resource '
    '"{resource}" in API group "{group}" in the namespace "ns"'
)


@dataclass(frozen=True)
class Refusal:
    code: int
    reason: str
    message: str
    details: JSON | None = None
    headers: dict[str, str] | None = None
    shows: tuple[str, ...] = ()  # what the log line must say besides the object


REFUSALS = {
    "403": Refusal(403, "Forbidden", FORBIDDEN, shows=("Forbidden", "is forbidden", "cannot")),
    "409": Refusal(
        409,
        "Conflict",
        "Operation cannot be fulfilled: the object has been modified",
        shows=("Conflict", "has been modified"),
    ),
    "422": Refusal(
        422,
        "Invalid",
        "the object is invalid",
        details={
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "field": "spec.minMember",
                    "message": "Invalid value: -1: must be at least 0",
                }
            ]
        },
        shows=("Invalid", "spec.minMember: Invalid value: -1"),
    ),
    "429": Refusal(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        details={"retryAfterSeconds": 0},
        headers={"Retry-After": "0"},
        shows=("TooManyRequests", "gave up after"),
    ),
    "500": Refusal(
        500,
        "InternalError",
        "Internal error occurred: etcdserver: request timed out",
        shows=("InternalError", "etcdserver"),
    ),
}


@dataclass(frozen=True)
class Case:
    objects: Callable[[], list[JSON]]
    build: Callable[[KubeStore, ManualClock], components.Component]
    method: str
    path: str  # the refused request's path (a regular expression)
    what: dict[str, str]  # for FORBIDDEN
    names: str  # the object as the log line names it
    more: Callable[[], list[JSON]]  # objects added once the refusal ends: the component handles them
    written: Callable[[MemoryStore], bool]
    retried: Callable[[MemoryStore], bool] | None  # the refused write itself, done again after its backoff


def _controllers(store: KubeStore, clock: ManualClock) -> components.Component:
    return components.controllers(store, GrouperOptions(create_default_queues=False), CollectorRegistry(), clock)


def _podgrouper(store: KubeStore, clock: ManualClock) -> components.Component:
    return components.podgrouper(store, GrouperOptions(), clock)


def _binder(store: KubeStore, clock: ManualClock) -> components.Component:
    return components.binder(store, BinderOptions(max_concurrent_reconciles=1), clock)


def _scheduler(store: KubeStore, clock: ManualClock) -> components.Component:
    return components.scheduler(store, SchedulerOptions(), CollectorRegistry(), clock)


def _status_written(memory: MemoryStore) -> bool:
    return bool((memory.get("podgroups", "pg2", NAMESPACE).get("status") or {}).get("resourcesStatus"))


def _grouped(memory: MemoryStore) -> bool:
    pods = [p for p in memory.list("pods", NAMESPACE)[0] if p["metadata"]["name"] == "p2"]
    return bool(pods and (pods[0]["metadata"].get("annotations") or {}).get("pod-group-name"))


def _bound(memory: MemoryStore) -> bool:
    return bool(memory.get("pods", "p2", NAMESPACE)["spec"].get("nodeName"))


def _requested(memory: MemoryStore) -> bool:
    return "p2" in {br["metadata"]["name"] for br in memory.list("bindrequests", NAMESPACE)[0]}


def _plain_pod(name: str = "p") -> JSON:
    raw = pod(name, gpus=1)
    raw["metadata"]["annotations"] = {}
    raw["metadata"]["labels"] = {"kai.scheduler/queue": "q"}
    return raw


CASES = {
    "controllers": Case(
        lambda: [queue("q"), podgroup("pg"), pod("p", group="pg", gpus=1)],
        _controllers,
        "PATCH",
        r"/podgroups/pg/status$",
        {
            "what": 'podgroups.scheduling.run.ai "pg"',
            "verb": "patch",
            "resource": "podgroups/status",
            "group": "scheduling.run.ai",
        },
        f"patch PodGroup {NAMESPACE}/pg status",
        lambda: [podgroup("pg2"), pod("p2", group="pg2", gpus=1)],
        _status_written,
        lambda m: bool((m.get("podgroups", "pg", NAMESPACE).get("status") or {}).get("resourcesStatus")),
    ),
    "podgrouper": Case(
        lambda: [queue("q"), _plain_pod()],
        _podgrouper,
        "POST",
        r"/podgroups$",
        {
            "what": "podgroups.scheduling.run.ai",
            "verb": "create",
            "resource": "podgroups",
            "group": "scheduling.run.ai",
        },
        f"create PodGroup {NAMESPACE}/pg-p-",
        lambda: [_plain_pod("p2")],
        _grouped,
        lambda m: "pod-group-name" in (m.get("pods", "p", NAMESPACE)["metadata"].get("annotations") or {}),
    ),
    "binder": Case(
        lambda: [node("n1"), pod("p", gpus=1), bind_request("p", "n1")],
        _binder,
        "POST",
        r"/pods/p/binding$",
        {"what": 'pods "p"', "verb": "create", "resource": "pods/binding", "group": ""},
        f"bind Pod {NAMESPACE}/p to node n1",
        lambda: [pod("p2", gpus=1), bind_request("p2", "n1")],
        _bound,
        None,
    ),  # a failed BindRequest is the scheduler's to replace (its backoffLimit), not retried
    "scheduler": Case(
        lambda: [node("n1"), queue("q"), podgroup("p"), pod("p", gpus=1)],
        _scheduler,
        "POST",
        r"/bindrequests$",
        {
            "what": "bindrequests.scheduling.run.ai",
            "verb": "create",
            "resource": "bindrequests",
            "group": "scheduling.run.ai",
        },
        f"create BindRequest {NAMESPACE}/p",
        lambda: [podgroup("p2"), pod("p2", gpus=1)],
        _requested,
        lambda m: "p" in {br["metadata"]["name"] for br in m.list("bindrequests", NAMESPACE)[0]},
    ),
}


@pytest.fixture
def mock() -> Iterator[MockApiServer]:
    with MockApiServer(MemoryStore(ManualClock(NOW))) as server:
        yield server


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
@pytest.mark.parametrize("component", sorted(CASES))
def test_a_refused_write_is_one_line_naming_the_object_and_the_component_goes_on(
    component: str, refusal: str, mock: MockApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    case, answer = CASES[component], REFUSALS[refusal]
    mock.reset(MemoryStore(ManualClock(NOW)))
    mock.memory.add_many(case.objects())
    message = answer.message.format(**case.what)
    refused = mock.refuse(
        case.method, case.path, answer.code, answer.reason, message, details=answer.details, headers=answer.headers
    )
    clock = ManualClock(NOW)
    options = KubeOptions(qps=0, max_retries=2, watch_settle=0.2)
    with KubeStore.connect(write_kubeconfig(tmp_path / "config", mock.url), None, options) as store:
        built = case.build(store, clock)
        runner = Runner(built.name, built.step, built.period, threading.Event())
        with caplog.at_level(logging.WARNING):
            runner.tick()
        assert refused.answered >= 1, f"the {component} did not try the write"
        lines = [TextFormatter().format(r) for r in caplog.records if r.levelno >= logging.WARNING]  # as printed
        said = [line for line in lines if case.names in line]
        assert len(said) == 1, lines
        assert all(text in said[0] for text in answer.shows), said[0]
        assert "\n" not in said[0]
        with caplog.at_level(logging.WARNING):
            runner.tick()  # still refused: not said again, or said once more
        again = [
            TextFormatter().format(r)
            for r in caplog.records
            if case.names in r.getMessage() or case.names in str(r.__dict__.get("reason", ""))
        ]
        assert len(again) <= 2, again
        refused.count = 0  # the refusal ends: the component was not stuck
        for obj in case.more():
            mock.memory.create(obj)
        clock.advance(60)

        def done() -> bool:
            return case.written(mock.memory) and (case.retried is None or case.retried(mock.memory))

        for _ in range(40):  # watch events arrive over the network; a refused write is due after 1 s
            runner.tick()
            if done():
                break
            time.sleep(0.1)
        assert case.written(mock.memory), f"the {component} did not go on once the server accepted writes"
        assert case.retried is None or case.retried(mock.memory), f"the {component} did not write the refused one"


def test_the_refusal_fixture_matches_what_it_says(mock: MockApiServer, tmp_path: Path) -> None:
    """The mock answers exactly the refused request, with the Status the test gave (and Retry-After)."""
    refused = mock.refuse(
        "POST", r"/queues$", 429, "TooManyRequests", "slow down", headers={"Retry-After": "0"}, count=1
    )
    options = KubeOptions(qps=0)
    with KubeStore.connect(write_kubeconfig(tmp_path / "config", mock.url), None, options) as store:
        store.create(queue("q"))  # retried after Retry-After 0, then created
    assert refused.answered == 1 and mock.memory.get("queues", "q")
