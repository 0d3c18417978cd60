"""The plain-dict fast paths of Pod and ObjectMeta parse exactly what the checked field reader parses: the same
object, or the same error, for well-formed pods and for pods with every kind of irregular field."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import Reader
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.pod import Pod

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
