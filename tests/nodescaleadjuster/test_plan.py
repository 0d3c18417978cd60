"""The planning rules of the node-scale-adjuster, over plain records."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.nodescaleadjuster.plan import Constraints, Demand, ScalingPod, gpus_requested, plan

ANY = Constraints()
ZONE_A = Constraints(node_selector={"zone": "a"})


def demand(name: str, portion: float, devices: int = 1, constraints: Constraints = ANY) -> Demand:
    return Demand(uid=f"u-{name}", key=f"ns/{name}", portion=portion, num_devices=devices, constraints=constraints)


def by_uid(*demands: Demand) -> dict[str, Demand]:
    return {d.uid: d for d in demands}


def test_fractions_are_summed_into_whole_gpus() -> None:
    out = plan(by_uid(demand("a", 0.5), demand("b", 0.25), demand("c", 0.25), demand("d", 0.5)), [])
    # first-fit decreasing: the halves fill one GPU, the quarters half of another
    assert [sorted(m.key for m in sp.members) for sp in out.create] == [["ns/a", "ns/d"], ["ns/b", "ns/c"]]
    assert gpus_requested(out.create) == 2
    assert all(sp.num_devices == 1 for sp in out.create)


def test_a_placeholder_holds_at_most_one_gpu_of_portions() -> None:
    out = plan(by_uid(demand("a", 0.6), demand("b", 0.6), demand("c", 0.3)), [])
    assert gpus_requested(out.create) == 2
    for sp in out.create:
        assert sum(m.portion for m in sp.members) <= 1.0


def test_different_constraints_never_share_a_scaling_pod() -> None:
    out = plan(by_uid(demand("a", 0.25), demand("b", 0.25, constraints=ZONE_A)), [])
    assert len(out.create) == 2
    assert {sp.constraints.canonical() for sp in out.create} == {ANY.canonical(), ZONE_A.canonical()}


def test_multi_device_pods_get_that_many_gpus_and_group_by_device_count() -> None:
    out = plan(by_uid(demand("a", 0.5, devices=2), demand("b", 0.5, devices=2), demand("c", 0.5)), [])
    two = [sp for sp in out.create if sp.num_devices == 2]
    one = [sp for sp in out.create if sp.num_devices == 1]
    assert len(two) == 1 and {m.key for m in two[0].members} == {"ns/a", "ns/b"}
    assert len(one) == 1 and [m.key for m in one[0].members] == ["ns/c"]
    assert gpus_requested(out.create) == 3


def test_a_scaling_pod_is_kept_while_one_of_its_pods_waits_and_deleted_when_none_does() -> None:
    a, b = demand("a", 0.5), demand("b", 0.5)
    sp = ScalingPod("scaling-pod-1", a.group, frozenset({a.uid, b.uid}), bound=False)
    kept = plan(by_uid(a), [sp])
    assert kept.empty
    gone = plan({}, [sp])
    assert gone.delete == ["scaling-pod-1"] and not gone.create


def test_a_scaling_pod_a_node_took_is_deleted_and_its_pods_cool_down() -> None:
    a = demand("a", 0.5)
    sp = ScalingPod("scaling-pod-1", a.group, frozenset({a.uid}), bound=True)
    out = plan(by_uid(a), [sp])
    assert out.delete == ["scaling-pod-1"] and out.cool == [a.uid] and not out.create
    # cooling pods are skipped; once cooled they get a new scaling pod
    assert plan(by_uid(a), [], {a.uid}).empty
    assert len(plan(by_uid(a), []).create) == 1


def test_a_new_pod_joins_a_kept_scaling_pod_with_room_before_a_new_one_is_made() -> None:
    a, b, c = demand("a", 0.5), demand("b", 0.25), demand("c", 0.5)
    sp = ScalingPod("scaling-pod-1", a.group, frozenset({a.uid}), bound=False)
    out = plan(by_uid(a, b, c), [sp])
    assert [m.key for m in out.extend["scaling-pod-1"]] == ["ns/c"]
    assert [[m.key for m in n.members] for n in out.create] == [["ns/b"]]


def test_a_member_of_another_group_does_not_keep_a_scaling_pod() -> None:
    a = demand("a", 0.5, constraints=ZONE_A)
    sp = ScalingPod("scaling-pod-1", demand("a", 0.5).group, frozenset({a.uid}), bound=False)
    out = plan(by_uid(a), [sp])
    assert out.delete == ["scaling-pod-1"] and len(out.create) == 1


def test_names_are_deterministic() -> None:
    demands = by_uid(demand("a", 0.5), demand("b", 0.5))
    assert [n.name for n in plan(demands, []).create] == [
        n.name for n in plan(dict(reversed(demands.items())), []).create
    ]


portions = st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.33, 0.5, 0.6, 0.75, 0.9, 1.0])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(portions, st.integers(1, 3), st.booleans()), min_size=0, max_size=30))
def test_every_waiting_pod_is_covered_once_within_whole_gpus(items: list[tuple[float, int, bool]]) -> None:
    demands = by_uid(
        *(demand(f"p{i}", p, devices, ZONE_A if zoned else ANY) for i, (p, devices, zoned) in enumerate(items))
    )
    out = plan(demands, [])
    covered = [m.uid for sp in out.create for m in sp.members]
    assert sorted(covered) == sorted(demands)
    for sp in out.create:
        assert sum(m.portion for m in sp.members) <= 1 + 1e-9
        assert {m.group for m in sp.members} == {sp.group}
    # never more GPUs than one per pod-device, never fewer than the ceiling of each group's sum
    for group in {d.group for d in demands.values()}:
        members = [d for d in demands.values() if d.group == group]
        asked = sum(sp.num_devices for sp in out.create if sp.group == group)
        devices = members[0].num_devices
        assert asked >= math.ceil(round(sum(d.portion for d in members), 9)) * devices
        assert asked <= len(members) * devices
    # a second plan over what the first made changes nothing
    made = [ScalingPod(n.name, n.group, frozenset(m.uid for m in n.members), bound=False) for n in out.create]
    assert plan(demands, made).empty
