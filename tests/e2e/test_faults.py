"""Processes that die mid-work: the scheduler alone, the whole stack, and the leader of two schedulers.

Nothing submitted may be lost (every pod ends bound) and nothing double-booked (no node over its GPUs, one
successful BindRequest per pod)."""

from __future__ import annotations

import contextlib
import time

import pytest

from kai_scheduler.store.interface import NotFound
from tests.e2e import invariants
from tests.e2e.checks import bound_once, never_over_committed
from tests.e2e.harness import COMPONENTS, Cluster, pod

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

LEASE_NAMESPACE = "kai-scheduler"  # the components' default --leader-elect-namespace outside a pod
LEASE_DURATION = 4.0
ELECTION = (
    "--leader-elect",
    f"--leader-elect-lease-duration={LEASE_DURATION:.0f}s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
)


def test_a_scheduler_killed_mid_work_double_books_nothing_and_loses_nothing(clean: Cluster) -> None:
    for i in range(24):
        clean.create(pod(f"restart-{i}", gpus=1, labels={"app": "restart"}))
    time.sleep(1.0)
    clean.processes.kill("scheduler")
    never_over_committed(clean)
    clean.processes.start_component("scheduler")
    clean.wait("all 24 pods bound", lambda: len(clean.bound("app=restart")) == 24)
    never_over_committed(clean)
    bound_once(clean, "restart-", 24)
    invariants.settled(clean)


def test_the_whole_stack_killed_mid_work_loses_nothing_and_double_books_nothing(clean: Cluster) -> None:
    """SIGKILL to every component while a gang and single pods are being grouped, placed and bound; restarted,
    they finish the work from what the API server holds."""
    for i in range(16):
        clean.create(pod(f"stack-{i}", gpus=1, labels={"app": "stack"}))
    for i in range(8):
        clean.create(pod(f"stack-wide-{i}", gpus=2, labels={"app": "stack"}))
    time.sleep(1.0)
    for component in COMPONENTS:
        clean.processes.kill(component)
    never_over_committed(clean)
    for component in COMPONENTS:
        clean.processes.start_component(component)
    clean.wait("all 24 pods bound", lambda: len(clean.bound("app=stack")) == 24)
    never_over_committed(clean)
    bound_once(clean, "stack-", 24)
    invariants.settled(clean)


def test_leader_election_the_other_scheduler_takes_over_when_the_leader_is_killed(clean: Cluster) -> None:
    """Two schedulers with leader election: one leads; SIGKILLed, the other leads within the lease duration and
    places what was submitted since; no pod is bound twice and no node over-committed."""
    processes = clean.processes
    processes.kill("scheduler")
    try:
        for name in ("scheduler-1", "scheduler-2"):
            processes.start_component("scheduler", *ELECTION, name=name)
        leaders: list[str] = []

        def one_leader() -> bool:
            leaders[:] = [n for n in ("scheduler-1", "scheduler-2") if "became leader" in processes.log_of(n)]
            return len(leaders) == 1

        clean.wait("one scheduler leading", one_leader, timeout=60)
        for i in range(8):
            clean.create(pod(f"elect-a-{i}", gpus=2, labels={"app": "elect"}))
        clean.wait("the leader's 8 pods bound", lambda: len(clean.bound("app=elect")) == 8)
        leader = leaders[0]
        other = "scheduler-2" if leader == "scheduler-1" else "scheduler-1"
        processes.kill(leader)
        killed = time.monotonic()
        for i in range(8):
            clean.create(pod(f"elect-b-{i}", gpus=2, labels={"app": "elect"}))
        clean.wait(
            "the other scheduler leading",
            lambda: "became leader" in processes.log_of(other),
            timeout=LEASE_DURATION + 10,
        )
        took_over = time.monotonic() - killed
        # the lease expires LEASE_DURATION after the dead leader's last renewal; one retry period of slack
        assert took_over <= LEASE_DURATION + 2.0, f"took over after {took_over:.1f} s"
        clean.wait("all 16 pods bound", lambda: len(clean.bound("app=elect")) == 16)
        never_over_committed(clean)
        bound_once(clean, "elect-", 16)
    finally:
        for name in ("scheduler-1", "scheduler-2"):
            if name in processes.running:
                processes.kill(name)
        with contextlib.suppress(NotFound):
            clean.store.delete("leases", "kai-scheduler", LEASE_NAMESPACE)
        processes.start_component("scheduler")
