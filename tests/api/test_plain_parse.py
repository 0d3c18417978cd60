"""The plain-dict fast paths of Pod, PodGroup and ObjectMeta parse exactly what the checked field reader parses:
the same object (warnings included), or the same error, for well-formed objects and for objects with every kind of
irregular field."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import Reader
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup

JSON = dict[str, Any]

odd = st.one_of(st.none(), st.integers(-2, 2), st.just(""), st.just([]), st.just({}), st.just(True))
names = st.sampled_from(["p", "", "train-0"])
quantities = st.one_of(
    st.sampled_from(["1", "500m", "4Gi", "0", "-1", "x", "1.5", "2e3"]),
    st.integers(-1, 4),
    st.floats(-1, 4, allow_nan=False),
)
resource_names = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "pods"])
resource_lists = st.one_of(st.none(), st.dictionaries(resource_names, quantities, max_size=3), odd)
containers = st.fixed_dictionaries(
    {"name": st.just("c")},
    optional={
        "resources": st.one_of(
            odd, st.fixed_dictionaries({}, optional={"requests": resource_lists, "limits": resource_lists})
        )
    },
)
string_maps = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["a", "gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"]),
        st.one_of(st.sampled_from(["0.5", "1", "x", "1024", "2"]), odd),
        max_size=3,
    ),
    odd,
)
metadata = st.fixed_dictionaries(
    {"name": st.one_of(names, odd)},
    optional={
        "namespace": st.one_of(st.just("ns"), odd),
        "uid": st.one_of(st.just("u1"), odd),
        "resourceVersion": st.one_of(st.just("7"), odd),
        "labels": string_maps,
        "annotations": string_maps,
        "creationTimestamp": st.one_of(st.just("2026-01-01T00:00:00Z"), st.just("yesterday"), odd),
        "deletionTimestamp": st.one_of(st.just("2026-01-01T00:00:30Z"), odd),
        "ownerReferences": st.one_of(
            st.lists(st.one_of(st.just({"kind": "Job", "name": "j", "uid": "o", "controller": True}), odd), max_size=2),
            odd,
        ),
    },
)
tolerations = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"key": st.just("gpu")},
            optional={"operator": st.sampled_from(["Exists", "Equal", "Sometimes"]), "effect": st.just("NoSchedule")},
        ),
        odd,
    ),
    max_size=2,
)
affinity = st.one_of(
    odd,
    st.just(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        }
    ),
    st.fixed_dictionaries(
        {},
        optional={
            kind: st.fixed_dictionaries(
                {
                    "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                        st.one_of(
                            st.fixed_dictionaries(
                                {
                                    "weight": st.one_of(st.integers(0, 101), odd),
                                    "podAffinityTerm": st.one_of(
                                        st.just({"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}),
                                        odd,
                                    ),
                                }
                            ),
                            odd,
                        ),
                        max_size=2,
                    )
                }
            )
            for kind in ("podAffinity", "podAntiAffinity")
        },
    ),
)
spec = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.one_of(st.lists(st.one_of(containers, odd), max_size=2), odd),
        "initContainers": st.one_of(st.lists(containers, max_size=1), odd),
        "overhead": resource_lists,
        "nodeName": st.one_of(st.just("n1"), odd),
        "schedulerName": st.one_of(st.just("kai-scheduler"), odd),
        "priorityClassName": st.one_of(st.just("train"), odd),
        "nodeSelector": string_maps,
        "tolerations": st.one_of(tolerations, odd),
        "affinity": affinity,
        "schedulingGates": st.one_of(st.just([{"name": "g"}]), odd),
    },
)
status = st.one_of(
    odd,
    st.fixed_dictionaries(
        {},
        optional={
            "phase": st.one_of(st.sampled_from(["Running", "Pending", "Done"]), odd),
            "nominatedNodeName": st.one_of(st.just("n2"), odd),
        },
    ),
)
pods = st.fixed_dictionaries(
    {"metadata": st.one_of(metadata, odd)}, optional={"spec": st.one_of(spec, odd), "status": status}
)


def _outcome(parse: Any, data: JSON) -> Any:
    try:
        return parse(data)
    except ObjectError as err:
        return ("error", str(err))


@settings(max_examples=600, deadline=None)
@given(pods)
@example({"metadata": {"name": "p"}, "spec": {"containers": [], "affinity": 0}})  # falsy, not absent: refused
@example({"metadata": {"name": "p"}, "spec": {"affinity": 0, "tolerations": [0]}})  # which error comes first
def test_the_fast_pod_parse_equals_the_checked_one(data: JSON) -> None:
    assert _outcome(Pod.from_dict, data) == _outcome(lambda d: Pod._read_checked(Reader(d, "Pod")), data)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"metadata": metadata}))
def test_the_fast_metadata_parse_equals_the_checked_one(data: JSON) -> None:
    assert _outcome(lambda d: ObjectMeta.read(Reader(d, "Pod")), data) == _outcome(
        lambda d: ObjectMeta._read_checked(Reader(d, "Pod")), data
    )


counts = st.one_of(st.none(), st.integers(-1, 3), st.just(2.0), st.just(True), st.just("1"))
plain_strings = st.one_of(st.none(), st.just(""), st.just("x"), st.integers(0, 1))
topology_constraints = st.one_of(
    odd,
    st.fixed_dictionaries(
        {},
        optional={
            "topology": st.one_of(st.just("dc"), plain_strings),
            "requiredTopologyLevel": st.one_of(st.just("rack"), plain_strings),
            "preferredTopologyLevel": st.one_of(st.just("zone"), plain_strings),
        },
    ),
)
sub_groups = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"name": st.one_of(st.sampled_from(["a", "b", "c"]), odd)},
            optional={
                "minMember": counts,
                "minSubGroup": counts,
                "parent": st.one_of(st.sampled_from(["a", "b", "c", "d", ""]), odd),
                "topologyConstraint": topology_constraints,
            },
        ),
        odd,
    ),
    max_size=3,
)
durations = st.one_of(st.none(), st.sampled_from(["90s", "1h30m", "-1s", "0", "soon", ""]), st.integers(-1, 60))
scheduling_conditions = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("UnschedulableOnNodePool")},
            optional={
                "nodePool": st.one_of(st.just("pool-a"), odd),
                "transitionID": st.one_of(st.just("3"), odd),
                "lastTransitionTime": st.one_of(st.just("2026-01-01T00:00:00Z"), st.just("later"), odd),
                "reason": st.one_of(st.just("Unschedulable"), odd),
                "message": st.one_of(st.just("no GPU"), odd),
                "reasons": st.one_of(
                    st.lists(st.one_of(st.just({"reason": "r", "message": "m"}), st.just({"reason": 1}), odd)), odd
                ),
            },
        ),
        odd,
    ),
    max_size=2,
)
pod_group_annotations = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["a", "kai.scheduler/preemption-delay", "kai.scheduler/staleness-grace-period"]),
        st.one_of(st.sampled_from(["30s", "later", "5m"]), odd),
        max_size=2,
    ),
    odd,
)
pod_group_spec = st.fixed_dictionaries(
    {},
    optional={
        "queue": st.one_of(st.just("q1"), plain_strings),
        "minMember": counts,
        "minSubGroup": counts,
        "priorityClassName": st.one_of(st.just("train"), plain_strings),
        "preemptibility": st.one_of(st.sampled_from(["", "preemptible", "non-preemptible", "maybe"]), odd),
        "topologyConstraint": topology_constraints,
        "subGroups": st.one_of(sub_groups, odd),
        "markUnschedulable": st.one_of(st.booleans(), odd),
        "schedulingBackoff": counts,
        "preemptionDelay": durations,
        "stalenessGracePeriod": durations,
    },
)
pod_groups = st.fixed_dictionaries(
    {
        "metadata": st.one_of(
            metadata,
            st.fixed_dictionaries({"name": st.just("pg")}, optional={"annotations": pod_group_annotations}),
            odd,
        )
    },
    optional={
        "spec": st.one_of(pod_group_spec, odd),
        "status": st.one_of(
            odd, st.fixed_dictionaries({}, optional={"schedulingConditions": st.one_of(scheduling_conditions, odd)})
        ),
    },
)


def _pod_group_outcome(parse: Any, data: JSON) -> Any:
    """The parse's outcome, with what equality leaves out: each condition's `raw` (written back as read)."""
    try:
        pod_group = parse(data)
    except ObjectError as err:
        return ("error", str(err))
    return pod_group, [c.raw for c in pod_group.scheduling_conditions]


@settings(max_examples=1000, deadline=None)
@given(pod_groups)
@example(
    {"metadata": {"name": "pg"}, "spec": {"subGroups": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]}}
)
@example({"metadata": {"name": "pg"}, "spec": {"minMember": True, "subGroups": 0}})  # which error comes first
@example({"metadata": {"name": "pg", "annotations": {"kai.scheduler/preemption-delay": "later"}}, "spec": {}})
@example(
    {
        "metadata": {"name": "pg"},
        "spec": {"queue": "q"},
        "status": {"schedulingConditions": [{"lastTransitionTime": "later"}]},
    }
)
def test_the_fast_pod_group_parse_equals_the_checked_one(data: JSON) -> None:
    checked = _pod_group_outcome(lambda d: PodGroup._read_checked(Reader(d, "PodGroup")), data)
    assert _pod_group_outcome(PodGroup.from_dict, data) == checked


well_formed_sub_groups = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c"])},
        optional={
            "minMember": st.integers(0, 3),
            "parent": st.sampled_from(["a", "b", "c", ""]),
            "topologyConstraint": st.fixed_dictionaries(
                {"topology": st.just("dc"), "requiredTopologyLevel": st.just("rack")}
            ),
        },
    ),
    max_size=3,
)
well_formed_pod_groups = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries({"name": st.just("pg"), "namespace": st.just("ns")}),
        "spec": st.fixed_dictionaries(
            {"queue": st.sampled_from(["q1", ""])},
            optional={
                "minMember": st.integers(0, 3),
                "preemptibility": st.sampled_from(["", "preemptible", "non-preemptible"]),
                "subGroups": well_formed_sub_groups,
                "markUnschedulable": st.booleans(),
                "schedulingBackoff": st.integers(-1, 3),
                "preemptionDelay": durations,
            },
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(well_formed_pod_groups)
def test_the_fast_pod_group_parse_equals_the_checked_one_for_sound_specs(data: JSON) -> None:
    """Specs of sound types, where only the subgroup tree (names, parents, cycles) may be wrong."""
    checked = _pod_group_outcome(lambda d: PodGroup._read_checked(Reader(d, "PodGroup")), data)
    assert _pod_group_outcome(PodGroup.from_dict, data) == checked
