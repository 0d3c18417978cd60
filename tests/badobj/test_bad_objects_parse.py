"""Every kind the components read, parsed with one field bad: the parser returns the object or raises the one
user error type (`ObjectError`), whose one line names the kind, the object and the field; nothing else escapes.

`test_every_one_field_change_*` walks every field of a valid object of each kind through a fixed table of bad
values (`mutations.BAD_VALUES`, and the values only a YAML file can hold); the hypothesis test draws further
values; the table below keeps each crash these tests found as its own case.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.api import PARSERS, ObjectError
from tests import builders as b
from tests.badobj import cluster
from tests.badobj import mutations as m

JSON = dict[str, Any]


def _objects() -> list[JSON]:
    return [
        *cluster.cluster(),
        b.device_class(),
        b.resource_slice("gpu-0", gpus=2),
        b.claim("c1", allocated=[("gpu-0", "gpu-0")], reserved_for=["x"]),
        b.claim_template("t1"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"team": "a"}}},
    ]


OBJECTS = _objects()


def _name(obj: JSON) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def check(obj: JSON, mutation: m.Mutation) -> None:
    """Parse `obj` changed by `mutation`: accepted, or an ObjectError naming the object and the changed field."""
    try:
        PARSERS[obj["kind"]](m.apply(obj, mutation))
    except ObjectError as err:
        text = str(err)
        assert err.kind == obj["kind"] and err.name == _name(obj), (mutation, text)
        assert err.field.split(".")[0].split("[")[0] == mutation.path[0], (mutation, text)
        assert "\n" not in text and len(text) < 400, (mutation, text)


@pytest.mark.parametrize("obj", OBJECTS, ids=[f"{o['kind']} {o['metadata']['name']}" for o in OBJECTS])
def test_every_one_field_change_parses_or_is_an_object_error(obj: JSON) -> None:
    PARSERS[obj["kind"]](obj)  # the valid object parses
    for mutation in m.mutations(obj, m.BAD_VALUES + m.YAML_ONLY):
        check(obj, mutation)


ANY_VALUE = st.one_of(
    st.sampled_from(m.BAD_VALUES + m.YAML_ONLY),
    st.text(max_size=12),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=4), st.integers()), max_size=2),
)
PATHS = [(obj, list(m.paths(obj))) for obj in OBJECTS]
CHANGES = st.integers(0, len(PATHS) - 1).flatmap(
    lambda i: st.tuples(st.just(PATHS[i][0]), st.sampled_from(PATHS[i][1]), ANY_VALUE | st.just(m.REMOVE))
)


@settings(max_examples=400, deadline=None)
@given(CHANGES)
def test_any_value_in_any_field_parses_or_is_an_object_error(change: tuple[JSON, tuple[str | int, ...], Any]) -> None:
    obj, path, value = change
    check(obj, m.Mutation(path, value))


def _pod(**fields: Any) -> JSON:
    return b.pod("p", **fields)


def _set(obj: JSON, path: str, value: Any) -> JSON:
    """`obj` with the field at dotted `path` (list indexes as numbers) set to `value`."""
    keys = [int(k) if k.isdigit() else k for k in path.split("|")]
    return m.apply(obj, m.Mutation(tuple(keys), value))


AFFINITY = "spec|affinity|nodeAffinity|requiredDuringSchedulingIgnoredDuringExecution|nodeSelectorTerms|0"


@pytest.mark.parametrize(
    "obj, field, words",
    [
        pytest.param(
            _set(b.node("n"), "status|allocatable|cpu", "1e400"),
            "status.allocatable.cpu",
            "quantity '1e400' is too large",
            id="a CPU quantity of 1e400 (was OverflowError)",
        ),
        pytest.param(
            _set(b.node("n"), "status|allocatable|memory", "9" * 40),
            "status.allocatable.memory",
            "is too large",
            id="a memory quantity of 40 digits (was OverflowError)",
        ),
        pytest.param(
            _set(b.node("n"), "status|allocatable|nvidia.com/gpu", "1e99999999999"),
            "status.allocatable.nvidia.com/gpu",
            "is too large",
            id="a GPU count with a huge exponent (was decimal Overflow)",
        ),
        pytest.param(
            _set(_pod(), "metadata|annotations|gpu-memory", "1e400"),
            "metadata.annotations.gpu-memory",
            "want a positive number of MiB",
            id="a gpu-memory annotation of 1e400 (was OverflowError in its hint)",
        ),
        pytest.param(
            _set(b.device_class(), "spec|selectors|0|cel", "abc"),
            "spec.selectors[0]",
            "expected a selector with a cel expression",
            id="a DeviceClass selector whose cel is a string (was AttributeError)",
        ),
        pytest.param(
            _set(b.claim("c", allocated=[("p", "d")]), "status|allocation|devices|results", 1),
            "status.allocation.devices.results",
            "expected a list of device results",
            id="a ResourceClaim whose allocation results is a number (was TypeError)",
        ),
        pytest.param(
            _set(b.node("n", taints=["a=b:NoSchedule"]), "spec|taints|0|effect", []),
            "spec.taints[0].effect",
            "unknown effect []",
            id="a taint effect that is a list (was TypeError: unhashable)",
        ),
        pytest.param(
            _set(_pod(node_affinity=[b.term(b.expr("k", "In", "v"))]), f"{AFFINITY}|matchExpressions|0|operator", {}),
            f"{AFFINITY.replace('|', '.').replace('.0', '[0]')}.matchExpressions[0].operator",
            "unknown operator {}",
            id="a selector operator that is a mapping (was TypeError: unhashable)",
        ),
        pytest.param(
            _set(_pod(node_affinity=[b.term(b.expr("k", "In", "v"))]), f"{AFFINITY}|matchFields", 3),
            f"{AFFINITY.replace('|', '.').replace('.0', '[0]')}.matchFields",
            "expected a list",
            id="a node selector term's matchFields that is a number (was TypeError)",
        ),
        pytest.param(
            _set(_pod(), "spec", "1e400"),
            "spec",
            "expected a mapping, got '1e400'",
            id="a pod whose spec is a string (was read as an empty spec: AttributeError in kai schedule's grouper)",
        ),
        pytest.param(
            _set(b.queue("q"), "spec", -1),
            "spec",
            "expected a mapping, got -1",
            id="a queue whose spec is a number (likewise)",
        ),
        pytest.param(
            _set(_pod(), "status", ["a"]),
            "status",
            "expected a mapping, got ['a']",
            id="a pod whose status is a list (likewise)",
        ),
    ],
)
def test_a_bad_field_found_by_fuzzing_is_an_object_error(obj: JSON, field: str, words: str) -> None:
    with pytest.raises(ObjectError) as caught:
        PARSERS[obj["kind"]](obj)
    assert caught.value.field == field
    assert words in caught.value.message


# Mappings and lists on the way to what the scheduler reads: one of the wrong type is refused naming it, not read
# as absent (which would change what is scheduled: a container's `resources: [a]` read as requesting nothing).
# The fields kept lenient, each with the reason in the parser: the scheduler's own record of what it told a
# PodGroup, read only to tell it again when it changed.
LENIENT: frozenset[tuple[str, str]] = frozenset({("PodGroup", "status.schedulingConditions")})
WRONG_TYPES: tuple[Any, ...] = ("abc", 3, ["a"], {"a": 1})


def _json_container(value: Any) -> str:
    return "mapping" if isinstance(value, dict) else "list" if isinstance(value, list) else "scalar"


def _field(path: tuple[str | int, ...]) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")


@pytest.mark.parametrize("obj", OBJECTS, ids=[f"{o['kind']} {o['metadata']['name']}" for o in OBJECTS])
def test_a_nested_mapping_or_list_of_the_wrong_type_is_refused_naming_it(obj: JSON) -> None:
    checked = 0
    for path in m.paths(obj):
        current = m._at(obj, path)
        if not isinstance(current, dict | list) or (obj["kind"], _field(path)) in LENIENT:
            continue
        for value in WRONG_TYPES:
            if _json_container(value) == _json_container(current):
                continue
            with pytest.raises(ObjectError) as caught:
                PARSERS[obj["kind"]](m.apply(obj, m.Mutation(path, value)))
            field = caught.value.field  # the field itself, one below it, or the list item holding it
            assert field.startswith(_field(path)) or _field(path).startswith(field), (path, value, str(caught.value))
            checked += 1
    assert checked or not any(isinstance(m._at(obj, p), dict | list) for p in m.paths(obj))


@pytest.mark.parametrize(
    "path, value",
    [
        pytest.param("spec|containers|0|resources", ["a"], id="resources a list"),
        pytest.param("spec|containers|0|resources", "nvidia.com/gpu: 2", id="resources a string"),
        pytest.param("spec|containers|0", "gpu", id="the container a string"),
    ],
)
def test_a_gpu_pod_whose_requests_cannot_be_read_is_refused_not_read_as_asking_for_none(path: str, value: Any) -> None:
    obj = _set(b.pod("p", gpus=2), path, value)
    with pytest.raises(ObjectError) as caught:
        PARSERS["Pod"](obj)
    assert caught.value.field == path.replace("|", ".").replace(".0", "[0]")
    assert "expected a" in caught.value.message


def test_the_lenient_podgroup_status_record_is_passed_over() -> None:
    obj = _set(b.podgroup("pg"), "status", {"schedulingConditions": [{"nodePool": "default", "reasons": "abc"}, 3]})
    parsed = PARSERS["PodGroup"](obj)
    assert [c.reasons for c in parsed.scheduling_conditions] == [[]]
