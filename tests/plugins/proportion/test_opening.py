"""The proportion plugin's opening, kept in the carried snapshot's plugin memo: reused while the queues and their
sums are the very objects it was made from, made again when one changes, never changed by a session."""

from __future__ import annotations

import numpy as np

from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.cluster import snapshot
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins.proportion import opening
from kai_scheduler.plugins.proportion.plugin import Proportion
from kai_scheduler.plugins.proportion.queue_order import QueueState
from tests.plugins.proportion.test_plugin import GPU, pod, podgroup, queue

NODE = Node.from_dict(
    {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8}}}
)
QUEUES = [queue("org", gpu_quota=6), queue("team-a", parent="org", gpu_quota=2), queue("team-b", parent="org")]
GROUPS = [podgroup("run", "team-a"), podgroup("wait", "team-b")]


def opened(pods: list[Pod], memo: snapshot.Memo, groups: list[PodGroup] = GROUPS) -> Session:
    objects = snapshot.ClusterObjects(nodes=[NODE], queues=QUEUES, podgroups=groups, pods=pods)
    ssn = Session(snapshot.build(objects, snapshot.SnapshotParams(now=0.0), memo), SchedulerConfig(), [Proportion()])
    ssn.open()
    return ssn


def shares(ssn: Session) -> dict[str, tuple[float, float, float]]:
    out = {}
    for name in ("org", "team-a", "team-b"):
        share = ssn.queue_share(name)
        assert share is not None
        out[name] = (float(share.allocated[GPU]), float(share.request[GPU]), float(share.fair_share[GPU]))
    return out


def test_an_unchanged_cluster_reuses_the_opening_as_a_copy() -> None:
    memo, pods = snapshot.Memo(), [pod("run-0", "run", gpus=2, node="n1"), pod("wait-0", "wait", gpus=3)]
    first = opened(pods, memo)
    kept = memo.plugins[opening.MEMO_KEY]
    before = shares(first)
    first.release()
    del first  # as a cycle ends: the next build updates the carried model in place
    again = opened(pods, memo)
    assert memo.plugins[opening.MEMO_KEY] is kept  # reused, not made again
    assert shares(again) == before
    again.statement().allocate(again.snapshot.tasks["wait-0"], "n1")  # the session changes its copy only
    assert shares(again)["team-b"][0] == 3
    assert isinstance(kept, opening.Opening)
    assert float(kept.shares["team-b"].allocated[GPU]) == 0
    assert kept.states["team-b"].allocated[GPU] == 0


def test_a_new_pod_makes_the_opening_again() -> None:
    memo = snapshot.Memo()
    first = opened([pod("run-0", "run", gpus=2, node="n1")], memo)
    kept = memo.plugins[opening.MEMO_KEY]
    more = opened([pod("run-0", "run", gpus=2, node="n1"), pod("wait-0", "wait", gpus=3)], memo)
    assert memo.plugins[opening.MEMO_KEY] is not kept
    assert shares(first)["team-b"][1] == 0
    assert shares(more)["team-b"][1] == 3
    assert shares(more)["org"][1] == 5
    fresh = opened([pod("run-0", "run", gpus=2, node="n1"), pod("wait-0", "wait", gpus=3)], snapshot.Memo())
    assert shares(more) == shares(fresh)  # the same as an opening without a memo


def test_a_podgroup_status_written_keeps_the_opening() -> None:
    """A new PodGroup object whose job holds and asks the same (its status written) rebuilds the job, not the
    queue's sums: the last opening is reused."""
    memo, pods = snapshot.Memo(), [pod("run-0", "run", gpus=2, node="n1"), pod("wait-0", "wait", gpus=3)]
    first = opened(pods, memo)
    kept, before = memo.plugins[opening.MEMO_KEY], shares(first)
    first.release()
    del first
    written = PodGroup.from_dict(
        {
            "metadata": {"name": "run", "namespace": "ns", "uid": "run", "resourceVersion": "2"},
            "spec": {"queue": "team-a", "minMember": 1},
            "status": {"phase": "Running"},
        }
    )
    again = opened(pods, memo, [written, GROUPS[1]])
    assert again.snapshot.jobs["run"].podgroup is written  # the job was made again from the new object
    assert memo.plugins[opening.MEMO_KEY] is kept
    assert shares(again) == before


def everything(ssn: Session) -> dict[str, tuple[object, ...]]:
    """Every number of every queue's share and state, bit for bit."""
    out: dict[str, tuple[object, ...]] = {}
    plugin = ssn.plugins[0]
    assert isinstance(plugin, Proportion)
    for name in ssn.snapshot.queues:
        share, state = ssn.queue_share(name), plugin.order_state(name)
        assert share is not None
        vectors = (share.deserved, share.limit, share.allocated, share.allocated_non_preemptible, share.request)
        out[name] = (
            *(v.tobytes() for v in (*vectors, share.fair_share)),
            state.deserved,
            state.fair_share,
            state.allocatable,
            tuple(state.allocated),
        )
    return out


def test_a_queue_whose_sums_changed_brings_the_opening_up_to_date_queue_by_queue() -> None:
    """Two departments; a new pending pod under `org` changes the sums of `team-b` alone. The opening is made
    from the last one (what it holds is what an opening from nothing holds) and the queues under `lab`, whose
    department's share did not move, keep their last share and state objects."""
    queues = [*QUEUES, queue("lab", gpu_quota=2), queue("lab-a", parent="lab", gpu_quota=2)]
    groups = [*GROUPS, podgroup("lab-run", "lab-a")]
    node = Node.from_dict(
        {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": 16}}}
    )

    def session(pods: list[Pod], memo: snapshot.Memo) -> Session:
        objects = snapshot.ClusterObjects(nodes=[node], queues=queues, podgroups=groups, pods=pods)
        built = snapshot.build(objects, snapshot.SnapshotParams(now=0.0), memo)
        ssn = Session(built, SchedulerConfig(), [Proportion()])
        ssn.open()
        return ssn

    memo = snapshot.Memo()
    running = [pod("run-0", "run", gpus=2, node="n1"), pod("lab-0", "lab-run", gpus=1, node="n1")]
    first = session([*running, pod("wait-0", "wait", gpus=3)], memo)
    kept = memo.plugins[opening.MEMO_KEY]
    assert isinstance(kept, opening.Opening)
    first.release()
    del first
    pods = [*running, pod("wait-0", "wait", gpus=3), pod("wait-1", "wait", gpus=4)]
    again = session(pods, memo)
    made = memo.plugins[opening.MEMO_KEY]
    assert isinstance(made, opening.Opening) and made is not kept
    assert everything(again) == everything(session(pods, snapshot.Memo()))  # as an opening from nothing
    assert float(made.shares["team-b"].request[GPU]) == 7 and float(made.shares["org"].request[GPU]) == 9
    assert made.shares["lab-a"] is kept.shares["lab-a"] and made.states["lab-a"] is kept.states["lab-a"]
    for name in ("team-b", "org"):
        assert made.shares[name] is not kept.shares[name] and made.states[name] is not kept.states[name]
    assert float(kept.shares["team-b"].request[GPU]) == 3  # the last opening was not changed


def test_a_session_makes_the_chains_of_the_queues_it_charges_alone() -> None:
    """The (share, state) chain of a leaf is made when a charge first reaches it, not for every leaf at the
    opening: a session that places one job makes its queue's chain alone, and the charge reaches the leaf and
    every ancestor as before."""
    memo, pods = snapshot.Memo(), [pod("run-0", "run", gpus=2, node="n1"), pod("wait-0", "wait", gpus=3)]
    first = opened(pods, memo)
    first.release()
    del first
    for ssn in (opened(pods, snapshot.Memo()), opened(pods, memo)):  # from nothing, and reopened from the memo
        (plugin,) = (p for p in ssn.plugins if isinstance(p, Proportion))
        assert plugin._leaf_chains == {}
        ssn.statement().allocate(ssn.snapshot.tasks["wait-0"], "n1")
        assert list(plugin._leaf_chains) == ["team-b"]
        assert [share.name for share, _ in plugin._leaf_chains["team-b"]] == ["team-b", "org"]
        assert shares(ssn)["team-b"][0] == 3
        assert shares(ssn)["org"][0] == 5


def test_a_state_made_by_the_opening_is_queue_states_own() -> None:
    """`opening.state_of` makes what `QueueState.of` makes of the share's vectors, float for float, whatever
    their dtype (a pure speed-up: the same state either way)."""
    q = QueueInfo.from_queue(QUEUES[1])
    share = QueueShare(
        name=q.name,
        deserved=np.array([-1, -1, 8]),  # integers: converted to floats as `QueueState.of` converts them
        limit=np.array([-1.0, -1.0, 12.0]),
        over_quota_weight=np.ones(3),
        allocated=np.array([5.9e4, 3.4e11, 10.0]),
        allocated_non_preemptible=np.zeros(3),
        request=np.array([1.0, 2.0, 3.0]),
        fair_share=np.array([100.0, 2e11, 12.5]),
        usage=np.zeros(3),
    )
    total = [96000.0, 824633720832.0, 24.0]
    made = opening.state_of(q, share, total)
    expected = QueueState.of(
        name=q.name,
        priority=q.priority,
        creation=q.creation,
        deserved=share.deserved,
        fair_share=share.fair_share,
        limit=share.limit,
        total=total,
        allocated=share.allocated,
    )
    for field in ("deserved", "fair_share", "allocatable", "allocated"):
        assert getattr(made, field) == getattr(expected, field)
        assert {type(x) for x in getattr(made, field)} == {float}
    assert (made.name, made.priority, made.creation) == (expected.name, expected.priority, expected.creation)
