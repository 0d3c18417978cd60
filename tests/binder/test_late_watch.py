"""The binder's retry when its watch of BindRequests falls behind the API server (a slow Failed status).

A failed bind writes phase Failed; with no backoffLimit (the scheduler sets none, as KAI's) that failure is final,
and the scheduler, which may see it before the binder's own watch brings it back, deletes the request and gives
the node to another pod. A retry must act on the request as the server holds it then, not on the copy the binder
took before its own failure: else the first pod is bound to a node whose GPU went to the second, and both run
there (an over-commit)."""

from __future__ import annotations

from collections.abc import Iterator

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder.binder import Binder
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.interface import JSON, Selector, StoreError, WatchEvent
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


class LateView:
    """The binder's connection to `memory`: one binding of `fail_pod` fails (a server error), and while `held`
    its BindRequest watches bring nothing (they are behind; what happened meanwhile comes once released).
    Reads other than watches, and all writes, reach the server at once. Counts requests by verb and resource."""

    def __init__(self, memory: MemoryStore, fail_pod: str = "") -> None:
        self.memory = memory
        self.fail_pod = fail_pod
        self.held = False
        self.requests: list[tuple[str, str]] = []

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        self.requests.append(("get", resource))
        return self.memory.get(resource, name, namespace)

    def list(
        self, resource: str, namespace: str | None = None, selector: Selector = None, *, cached: bool = False
    ) -> tuple[list[JSON], str]:
        self.requests.append(("list", resource))
        return self.memory.list(resource, namespace, selector, cached=cached)

    def watch(self, resource: str, resource_version: str, timeout: float = 0.0) -> Iterator[WatchEvent]:
        if resource == "bindrequests" and self.held:
            return iter(())
        return self.memory.watch(resource, resource_version, timeout)

    def create(self, obj: JSON) -> JSON:
        self.requests.append(("create", str(obj.get("kind"))))
        return self.memory.create(obj)

    def update(self, obj: JSON) -> JSON:
        self.requests.append(("update", str(obj.get("kind"))))
        return self.memory.update(obj)

    def update_status(self, obj: JSON) -> JSON:
        self.requests.append(("update_status", str(obj.get("kind"))))
        return self.memory.update_status(obj)

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        self.requests.append(("patch", resource))
        return self.memory.patch(resource, name, namespace, patch, subresource, strategic=strategic)

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        self.requests.append(("delete", resource))
        self.memory.delete(resource, name, namespace, grace_period_seconds)

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self.requests.append(("bind", "pods"))
        if pod_name == self.fail_pod:
            self.fail_pod = ""
            raise StoreError(f"bind pod {namespace}/{pod_name}: etcdserver: request timed out")
        self.memory.bind(namespace, pod_name, node_name, uid)

    def evict(self, namespace: str, pod_name: str, uid: str = "") -> None:
        self.requests.append(("evict", "pods"))
        self.memory.evict(namespace, pod_name, uid)


def _gpus_on(memory: MemoryStore, node: str) -> int:
    pods, _ = memory.list("pods")
    return sum(
        int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
        for p in pods
        if p["spec"].get("nodeName") == node
        for c in p["spec"]["containers"]
    )


def _node_of(memory: MemoryStore, pod: str) -> str:
    return str(memory.get("pods", pod, b.NAMESPACE)["spec"].get("nodeName", ""))


def _bind_requests(memory: MemoryStore) -> dict[str, tuple[str, str]]:
    """Each BindRequest's (selected node, phase), by name."""
    items, _ = memory.list("bindrequests")
    return {br["metadata"]["name"]: (br["spec"]["selectedNode"], br.get("status", {}).get("phase", "")) for br in items}


def _one_gpu_cluster() -> tuple[ManualClock, MemoryStore]:
    clock = ManualClock(b.NOW + 60)
    memory = MemoryStore(clock)
    memory.add_many([b.queue("q"), b.node("n1", gpus=1), b.podgroup("p", created=b.NOW), b.pod("p", gpus=1)])
    return clock, memory


def test_a_retry_after_a_late_failed_status_does_not_take_the_gpu_the_scheduler_gave_away() -> None:
    clock, memory = _one_gpu_cluster()
    scheduler = Scheduler(memory, load_config(None), clock)
    view = LateView(memory, fail_pod="p")
    binder = Binder(view, clock)  # type: ignore[arg-type]  # LateView has every ClusterStore method
    scheduler.run_once()
    assert _bind_requests(memory) == {"p": ("n1", "")}
    assert binder.reconcile().failed, "the first binding fails"
    view.held = True  # from here the binder's watch is behind: its own Failed status has not come back
    # An older pod q arrives; the scheduler sees p's final failure, deletes its request, and q gets the one GPU.
    memory.add_many([b.podgroup("q", created=b.NOW - 30), b.pod("q", gpus=1, created=b.NOW - 30)])
    scheduler.run_once()
    assert _bind_requests(memory) == {"q": ("n1", "")}, "the scheduler gave n1's GPU to q"
    clock.advance(1.5)  # past the binder's backoff of 2^0 s
    binder.reconcile()
    view.held = False
    binder.reconcile()
    assert _gpus_on(memory, "n1") <= 1, "n1 over-committed: p bound from the binder's copy of a deleted request"
    assert _node_of(memory, "q") == "n1" and _node_of(memory, "p") == ""
    assert _bind_requests(memory) == {"q": ("n1", "Succeeded")}


def test_a_final_failure_is_not_retried_while_the_watch_has_not_brought_it_back() -> None:
    """No backoffLimit: one failure is the end of that request, whether or not the binder's watch has shown the
    Failed status yet; the scheduler decides what happens to the pod next."""
    clock, memory = _one_gpu_cluster()
    memory.add_many([b.bind_request("p", "n1")])
    view = LateView(memory, fail_pod="p")
    binder = Binder(view, clock)  # type: ignore[arg-type]
    assert binder.reconcile().failed
    view.held = True
    for _ in range(3):
        clock.advance(2)
        outcome = binder.reconcile()
        assert outcome.bound == [] and outcome.failed == []
    assert _node_of(memory, "p") == ""
    assert _bind_requests(memory) == {"p": ("n1", "Failed")}


def _count(view: LateView, verb: str, resource: str) -> int:
    return sum(1 for request in view.requests if request == (verb, resource))


def test_a_bind_costs_no_read_of_its_request_and_a_retry_costs_one() -> None:
    """The re-read is the retry's price alone: a first attempt acts on the watched copy."""
    clock, memory = _one_gpu_cluster()
    memory.add_many([b.node("n2", gpus=1), b.pod("r", gpus=1), b.bind_request("r", "n2")])
    memory.add_many([b.bind_request("p", "n1", backoff_limit=3)])
    view = LateView(memory, fail_pod="p")
    binder = Binder(view, clock)  # type: ignore[arg-type]
    outcome = binder.reconcile()
    assert outcome.bound == ["ns/r"] and [key for key, _ in outcome.failed] == ["ns/p"]
    assert _count(view, "get", "bindrequests") == 0
    view.held = True
    clock.advance(1.5)
    assert binder.reconcile().bound == ["ns/p"]
    assert _count(view, "get", "bindrequests") == 1
    assert _bind_requests(memory) == {"p": ("n1", "Succeeded"), "r": ("n2", "Succeeded")}
    assert memory.get("bindrequests", "p", b.NAMESPACE)["status"]["failedAttempts"] == 1


def test_a_retry_of_a_request_the_scheduler_replaced_binds_the_new_one() -> None:
    """The scheduler deleted the failed request and wrote a new one of the same name for another node: the retry
    binds the pod where the new one says."""
    clock, memory = _one_gpu_cluster()
    memory.add_many([b.node("n2", gpus=1), b.bind_request("p", "n1")])
    view = LateView(memory, fail_pod="p")
    binder = Binder(view, clock)  # type: ignore[arg-type]
    assert binder.reconcile().failed
    view.held = True
    memory.delete("bindrequests", "p", b.NAMESPACE)
    memory.create(b.bind_request("p", "n2"))
    clock.advance(1.5)
    assert binder.reconcile().bound == ["ns/p"]
    assert _node_of(memory, "p") == "n2"
    view.held = False
    assert binder.reconcile().bound == []
    assert _bind_requests(memory) == {"p": ("n2", "Succeeded")}
