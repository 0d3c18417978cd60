"""Assertions shared by the end-to-end tests: capacity never over-committed, one binding per pod, holding."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.e2e.harness import NAMESPACE, POLL, Cluster, gpus_by_node

CAPACITY = 8.0


def never_over_committed(cluster: Cluster) -> None:
    used = gpus_by_node(cluster.pods())
    assert all(v <= CAPACITY for v in used.values()), f"a node holds more GPUs than it has: {used}"


def hold(seconds: float, check: Callable[[], None]) -> None:
    """Run an assertion repeatedly for a while: for what must not happen, however long one waits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        check()
        time.sleep(0.5)


def at_most(cluster: Cluster, selector: str, count: int) -> None:
    bound = cluster.bound(selector)
    assert len(bound) <= count, f"{len(bound)} bound ({selector}), expected at most {count}"


def bound_once(cluster: Cluster, prefix: str, count: int, settle: float = 10.0) -> None:
    """Each of the `count` pods named `prefix…` was bound by exactly one successful BindRequest.

    The binder records Succeeded after the binding (in the background, with concurrency), so a pod seen bound
    may wait a moment for its status: up to `settle` seconds. A second success for one pod never goes away."""
    deadline = time.monotonic() + settle
    while True:
        requests, _ = cluster.store.list("bindrequests", NAMESPACE)
        per_pod: dict[str, int] = {}
        for r in requests:
            if r["spec"]["podName"].startswith(prefix) and r.get("status", {}).get("phase") == "Succeeded":
                per_pod[r["spec"]["podName"]] = per_pod.get(r["spec"]["podName"], 0) + 1
        if sorted(per_pod.values()) == [1] * count or any(n > 1 for n in per_pod.values()):
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    assert sorted(per_pod.values()) == [1] * count, f"successful BindRequests per pod: {per_pod}"
