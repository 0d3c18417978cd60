"""Leader election over a Lease in a MemoryStore, on virtual time."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.runtime.leader import LeaderConfig, LeaderElector, format_micro_time
from kai_scheduler.runtime.process import LeaderStatus
from kai_scheduler.store.interface import JSON, ClusterStore
from kai_scheduler.store.kube_http.errors import Unavailable
from kai_scheduler.store.memory import MemoryStore

START = parse_time("2026-01-01T00:00:00Z")
NS, NAME = "kai-scheduler", "kai-scheduler"


class Partitioned:
    """A store that one candidate may lose contact with."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.down = False

    def __getattr__(self, name: str) -> Any:
        if self.down:
            raise Unavailable("connection refused")
        return getattr(self.store, name)


def lease(store: ClusterStore) -> JSON:
    spec: JSON = store.get("leases", NAME, NS)["spec"]
    return spec


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def store(clock: ManualClock) -> MemoryStore:
    return MemoryStore(clock)


def elector(store: Any, clock: ManualClock, identity: str) -> LeaderElector:
    return LeaderElector(store, NS, NAME, clock, identity=identity)


def test_the_first_candidate_creates_the_lease(store: MemoryStore, clock: ManualClock) -> None:
    a = elector(store, clock, "a")
    before = a.is_leader
    assert a.step()
    assert (before, a.is_leader) == (False, True)
    spec = lease(store)
    assert spec == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": format_micro_time(START),
        "renewTime": format_micro_time(START),
        "leaseTransitions": 0,
    }
    assert format_micro_time(START) == "2026-01-01T00:00:00.000000Z"


def test_the_leader_renews_and_keeps_acquire_time(store: MemoryStore, clock: ManualClock) -> None:
    a = elector(store, clock, "a")
    a.step()
    clock.advance(2)
    assert a.step()
    spec = lease(store)
    assert spec["renewTime"] == format_micro_time(START + 2)
    assert spec["acquireTime"] == format_micro_time(START)
    assert spec["leaseTransitions"] == 0


def test_a_held_lease_is_not_taken_until_it_expires_as_observed_locally(store: MemoryStore, clock: ManualClock) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    assert not b.step()  # observes a's record now
    assert b.holder == "a"
    clock.advance(14.9)
    assert not b.step()
    assert not a.is_leader  # a could not renew within its 10s deadline: it stepped down already
    clock.advance(0.1)  # 15s since b observed the record unchanged
    assert b.step() and b.is_leader
    spec = lease(store)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == format_micro_time(START + 15)
    assert not a.step()  # a comes back: b holds a valid lease


def test_a_standby_says_once_whose_lease_it_waits_for(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    with caplog.at_level("INFO", logger="kai_scheduler.runtime.leader"):
        for _ in range(3):
            b.step()
            clock.advance(2)
            a.step()
    waits = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting for the lease")]
    assert waits == ["waiting for the lease: a holds it; taken over if not renewed within 15s"]


def test_renewals_reset_the_observed_time(store: MemoryStore, clock: ManualClock) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    b.step()
    for _ in range(20):
        clock.advance(2)
        assert a.step()
        assert not b.step()
    assert a.is_leader and not b.is_leader


def test_a_leader_that_cannot_renew_steps_down_at_the_renew_deadline(store: MemoryStore, clock: ManualClock) -> None:
    link = Partitioned(store)
    a = elector(link, clock, "a")
    a.step()
    link.down = True
    clock.advance(9.9)
    assert a.step()  # failed, but still within the deadline
    assert not a.reachable
    clock.advance(0.1)
    assert not a.step()
    assert not a.is_leader


def test_a_leader_cut_off_for_longer_than_the_deadline_says_once_it_lost_then_that_it_leads_again(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The API server down for longer than the renew deadline: the deadline passes between two attempts (each
    fails), and the loss is said all the same, once; back, the leader says it leads again."""
    link = Partitioned(store)
    a = elector(link, clock, "a")
    a.step()
    link.down = True
    with caplog.at_level("INFO", logger="kai_scheduler.runtime.leader"):
        for _ in range(10):  # every retry period, 20 s in all
            clock.advance(2)
            a.step()
        assert not a.is_leader
        link.down = False
        clock.advance(2)
        assert a.step()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith(("lost", "became"))]
    assert said == ["lost leadership: the lease was not renewed within the renew deadline", "became leader"]


def test_a_conflicting_write_means_someone_else_won(store: MemoryStore, clock: ManualClock) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    clock.advance(20)
    b.step()  # observes the record at 20
    clock.advance(15)
    stale = store.get("leases", NAME, NS)
    assert a.step()  # a renews first (it still thinks the lease is its)

    real_get = store.get
    calls = []

    def get_stale(*args: Any, **kwargs: Any) -> JSON:
        calls.append(args)
        return stale  # b read before a's renewal, then writes: Conflict

    store.get = get_stale  # type: ignore[method-assign]
    try:
        assert not b.step()
    finally:
        store.get = real_get  # type: ignore[method-assign]
    assert calls and lease(store)["holderIdentity"] == "a"


def test_release_clears_the_holder_so_the_next_candidate_takes_over_at_once(
    store: MemoryStore, clock: ManualClock
) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    b.step()
    a.release()
    assert not a.is_leader
    assert lease(store)["holderIdentity"] == ""
    clock.advance(0.5)
    assert b.step()
    assert lease(store)["leaseTransitions"] == 1


def test_release_by_a_non_holder_changes_nothing(store: MemoryStore, clock: ManualClock) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    b.step()
    b.release()
    assert lease(store)["holderIdentity"] == "a"


def test_bad_timings_are_refused(store: MemoryStore, clock: ManualClock) -> None:
    with pytest.raises(ValueError, match="lease-duration"):
        LeaderElector(store, NS, NAME, clock, config=LeaderConfig(lease_duration=10, renew_deadline=10))
    with pytest.raises(ValueError, match="renew-deadline"):
        LeaderElector(store, NS, NAME, clock, config=LeaderConfig(renew_deadline=2, retry_period=2))


def test_the_default_identity_is_hostname_and_a_random_suffix(store: MemoryStore, clock: ManualClock) -> None:
    one, two = LeaderElector(store, NS, NAME, clock), LeaderElector(store, NS, NAME, clock)
    assert one.identity != two.identity
    assert one.identity.rsplit("_", 1)[0] == two.identity.rsplit("_", 1)[0]


# Each move: (candidate, what happens): a step, a partition toggle, a clock advance (tenths of a second),
# or a release.
MOVES = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from(["step", "step", "toggle", "advance", "advance", "release"]),
        st.integers(1, 120),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(MOVES)
def test_two_candidates_are_never_both_leader(moves: list[tuple[int, str, int]]) -> None:
    clock = ManualClock(START)
    store = MemoryStore(clock)
    links = [Partitioned(store) for _ in range(2)]
    candidates = [elector(link, clock, f"c{i}") for i, link in enumerate(links)]
    for who, move, amount in moves:
        if move == "step":
            candidates[who].step()
        elif move == "toggle":
            links[who].down = not links[who].down
        elif move == "advance":
            clock.advance(amount / 10)
        elif move == "release":
            candidates[who].release()
        leaders = [c.identity for c in candidates if c.is_leader]
        assert len(leaders) <= 1, leaders
        if leaders and not links[int(leaders[0][1:])].down:
            assert lease(store)["holderIdentity"] == leaders[0]


def test_the_leader_status_gauge_says_1_for_the_leader_and_0_for_a_standby(
    store: MemoryStore, clock: ManualClock
) -> None:
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    a.step()
    b.step()
    scraped = {}
    for who, candidate in (("a", a), ("b", b)):
        registry = CollectorRegistry()
        registry.register(LeaderStatus({"scheduler": candidate}))
        scraped[who] = generate_latest(registry).decode()
    assert f'leader_election_master_status{{name="{NAME}"}} 1.0' in scraped["a"]
    assert f'leader_election_master_status{{name="{NAME}"}} 0.0' in scraped["b"]


class Flaky:
    """A store whose reads raise an error no branch of the elector expects, `failures` times."""

    def __init__(self, store: ClusterStore, failures: int) -> None:
        self.store = store
        self.failures = failures

    def get(self, *args: Any) -> JSON:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("an unexpected error")
        return self.store.get(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_an_attempt_that_raises_what_nobody_expects_does_not_end_the_elections(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    flaky = Flaky(store, failures=3)
    candidate = LeaderElector(
        flaky,
        NS,
        NAME,
        clock,
        identity="a",
        config=LeaderConfig(lease_duration=0.3, renew_deadline=0.2, retry_period=0.01),
    )
    stop = threading.Event()
    thread = threading.Thread(target=candidate.run, args=(stop,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not candidate.is_leader and time.monotonic() < deadline:
            time.sleep(0.01)
        assert candidate.is_leader  # the run went on past the three failed attempts
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(5)
    unexpected = [r for r in caplog.records if "failed unexpectedly" in r.getMessage()]
    assert len([r for r in unexpected if r.exc_info]) == 1  # one traceback, then quiet while it repeats
