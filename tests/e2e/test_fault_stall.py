"""A scheduler that stops answering without dying: its leader's connection to the API server stalled past the
lease (a partition, not a crash), and the scheduler process stopped (SIGSTOP) for several cycles.

Nothing submitted may be lost, nothing double-booked, and a leader that lost its lease writes nothing after it
lapsed, not even what it decided before (docs/reliability.md)."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.store.interface import JSON, NotFound
from tests.e2e import invariants, stallproxy
from tests.e2e.checks import bound_once, never_over_committed
from tests.e2e.harness import NAMESPACE, Cluster, pod
from tests.e2e.test_faults import ELECTION, LEASE_DURATION, LEASE_NAMESPACE

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

# Names of their own: a log is appended to per name, and test_faults.py's leader test reads "scheduler-1"'s.
SCHEDULERS = LEADER, OTHER = ("stalled-scheduler", "other-scheduler")
RENEW_DEADLINE = 3.0  # ELECTION's --leader-elect-renew-deadline
STOPPED_FOR = 6.0  # seconds of SIGSTOP: several of the scheduler's 1 s cycles


def _writes_of_schedulers(cluster: Cluster, selector: str) -> dict[str, Any]:
    """What a scheduler writes, as the server holds it now: every BindRequest (name and pod), each pod's
    resourceVersion (a status, a condition, an eviction's deletion), each PodGroup's annotations and conditions."""
    requests, _ = cluster.store.list("bindrequests", NAMESPACE)
    groups, _ = cluster.store.list("podgroups", NAMESPACE)
    return {
        "bindrequests": sorted((r["metadata"]["name"], r["spec"]["podName"]) for r in requests),
        "pods": {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in cluster.pods(selector)},
        "podgroups": {
            g["metadata"]["name"]: (
                g["metadata"].get("annotations"),
                (g.get("status") or {}).get("schedulingConditions"),
            )
            for g in groups
        },
    }


def _conditions(group: JSON) -> Any:
    return (group.get("status") or {}).get("schedulingConditions")


def _no_traceback(cluster: Cluster, *names: str) -> None:
    for name in names:
        assert "Traceback" not in cluster.processes.log_of(name), f"a traceback in {name}'s log"


def _lines_after(log: str, mark: str) -> list[str]:
    at = log.find(mark)
    return log[at:].splitlines() if at >= 0 else []


def test_a_leader_whose_connection_stalls_writes_nothing_after_its_lease_lapsed(clean: Cluster, tmp_path: Path) -> None:
    """scheduler-1 reaches the API server through a proxy, and leads; the proxy stalls what it sends (the answers
    still arrive, so it sees the pods submitted next and decides on them). Its requests hang: at the renew
    deadline it stops writing and cuts them, before scheduler-2 may take the lease; scheduler-2 places the pods.
    Once the proxy sends on what it held, no BindRequest, eviction or status of scheduler-1 lands, and it finds
    the lease taken."""
    processes = clean.processes
    admin_or_own = processes.kubeconfigs.get("scheduler") or processes.kubeconfig
    proxied, proxy = stallproxy.through(admin_or_own, tmp_path)
    processes.kill("scheduler")
    try:
        processes.start_component("scheduler", *ELECTION, name=LEADER, kubeconfig=proxied)
        clean.wait("scheduler-1 leading", lambda: "became leader" in processes.log_of(LEADER), timeout=30)
        processes.start_component("scheduler", *ELECTION, name=OTHER)
        clean.wait("scheduler-2 standing by", lambda: "waiting for the lease" in processes.log_of(OTHER))
        for i in range(4):
            clean.create(pod(f"stall-a-{i}", gpus=2, labels={"app": "stall"}))
        clean.wait("the leader's 4 pods bound", lambda: len(clean.bound("app=stall")) == 4)

        proxy.stall()
        stalled = time.monotonic()
        for i in range(8):
            clean.create(pod(f"stall-b-{i}", gpus=2, labels={"app": "stall"}))
        clean.wait(
            "scheduler-2 leading",
            lambda: "became leader" in processes.log_of(OTHER),
            timeout=LEASE_DURATION + 10,
        )
        took_over = time.monotonic() - stalled
        lapsed = _lines_after(processes.log_of(LEADER), "lost leadership")
        assert lapsed, "scheduler-1 never said it lost the lease"
        clean.wait("all 12 pods bound by scheduler-2", lambda: len(clean.bound("app=stall")) == 12)
        invariants.settled(clean)
        before = _writes_of_schedulers(clean, "app=stall")

        proxy.resume()

        def log_of_1() -> str:
            return processes.log_of(LEADER)

        clean.wait(
            "scheduler-1 seeing scheduler-2 hold the lease",
            lambda: any(
                "waiting for the lease" in line for line in _lines_after(processes.log_of(LEADER), "lost leadership")
            ),
            timeout=15,
        )
        time.sleep(2.0)  # two of its retry periods: what it still held or would write has had time to land
        after = _writes_of_schedulers(clean, "app=stall")
        assert after == before, f"written after scheduler-1's lease lapsed:\nbefore {before}\nafter  {after}"
        assert took_over >= RENEW_DEADLINE, f"scheduler-2 led {took_over:.1f} s into the stall"
        never_over_committed(clean)
        bound_once(clean, "stall-", 12)
        invariants.settled(clean)
        _no_traceback(clean, *SCHEDULERS)
        print(f"stall: taken over after {took_over:.1f} s; {proxy.dropped} bytes of scheduler-1 dropped")
    finally:
        proxy.resume()
        for name in SCHEDULERS:
            if name in processes.running:
                processes.kill(name)
        proxy.close()
        with contextlib.suppress(NotFound):
            clean.store.delete("leases", "kai-scheduler", LEASE_NAMESPACE)
        processes.start_component("scheduler")


def test_a_scheduler_stopped_for_several_cycles_resumes_without_double_binding(clean: Cluster) -> None:
    """SIGSTOP to the scheduler for at least 6 s (it cycles every second) while pods are submitted and the 16 that
    fill the GPUs finish; after SIGCONT it places the new ones on the freed GPUs from a fresh snapshot: nothing
    lost, nothing bound twice, no node over its GPUs."""
    processes = clean.processes
    for i in range(16):
        clean.create(pod(f"sigstop-a-{i}", gpus=2, labels={"app": "sigstop"}, duration="3s"))
    clean.wait("16 pods bound", lambda: len(clean.bound("app=sigstop")) == 16)
    scheduler = processes.running["scheduler"]
    scheduler.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        for i in range(16):
            clean.create(pod(f"sigstop-b-{i}", gpus=2, labels={"app": "sigstop"}))
        clean.wait("the first 16 pods finished", lambda: _finished(clean.pods("app=sigstop")) == 16, timeout=30)
        time.sleep(max(0.0, STOPPED_FOR - (time.monotonic() - stopped)))
        assert scheduler.poll() is None
        assert _bound_b(clean) == 0, "pods bound while the scheduler was stopped"
    finally:
        scheduler.send_signal(signal.SIGCONT)
    clean.wait("the 16 pods submitted while it was stopped bound", lambda: _bound_b(clean) == 16, timeout=30)
    never_over_committed(clean)
    bound_once(clean, "sigstop-b-", 16)
    invariants.settled(clean)
    _no_traceback(clean, "scheduler")


def _finished(pods: list[JSON]) -> int:
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")


def _bound_b(cluster: Cluster) -> int:
    return sum(1 for p in cluster.bound("app=sigstop") if p["metadata"]["name"].startswith("sigstop-b-"))
