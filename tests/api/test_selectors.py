"""Label selectors, node selector terms, taints and tolerations match as Kubernetes matches them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kai_scheduler.api import ObjectError
from kai_scheduler.api.selectors import (
    LabelSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    Requirement,
    Taint,
    Toleration,
    check_match_labels,
    format_match_labels,
    parse_label_selector,
    parse_label_selector_string,
    parse_match_labels,
    parse_node_selector_terms,
)

LABELS = {"zone": "a", "gpus": "8", "tier": "gold"}


@pytest.mark.parametrize(
    "requirement, matches",
    [
        pytest.param(Requirement("zone", "In", ("a", "b")), True, id="In with the value"),
        pytest.param(Requirement("zone", "In", ("b",)), False, id="In without the value"),
        pytest.param(Requirement("rack", "In", ("a",)), False, id="In on a missing key"),
        pytest.param(Requirement("zone", "NotIn", ("b",)), True, id="NotIn without the value"),
        pytest.param(Requirement("zone", "NotIn", ("a",)), False, id="NotIn with the value"),
        pytest.param(Requirement("rack", "NotIn", ("a",)), True, id="NotIn matches a missing key"),
        pytest.param(Requirement("zone", "Exists"), True, id="Exists"),
        pytest.param(Requirement("rack", "Exists"), False, id="Exists on a missing key"),
        pytest.param(Requirement("rack", "DoesNotExist"), True, id="DoesNotExist"),
        pytest.param(Requirement("zone", "DoesNotExist"), False, id="DoesNotExist on a present key"),
        pytest.param(Requirement("gpus", "Gt", ("4",)), True, id="Gt compares integers"),
        pytest.param(Requirement("gpus", "Gt", ("8",)), False, id="Gt is strict"),
        pytest.param(Requirement("gpus", "Lt", ("10",)), True, id="Lt compares integers, not strings"),
        pytest.param(Requirement("tier", "Gt", ("1",)), False, id="Gt on a non-integer label never matches"),
        pytest.param(Requirement("rack", "Lt", ("1",)), False, id="Lt on a missing key never matches"),
    ],
)
def test_requirement(requirement: Requirement, matches: bool) -> None:
    assert requirement.matches(LABELS) is matches


@pytest.mark.parametrize(
    "selector, matches",
    [
        pytest.param(LabelSelector(), True, id="the empty selector matches everything"),
        pytest.param(LabelSelector((("zone", "a"),)), True, id="matchLabels equal"),
        pytest.param(LabelSelector((("zone", "b"),)), False, id="matchLabels different"),
        pytest.param(
            LabelSelector((("zone", "a"),), (Requirement("tier", "In", ("silver",)),)),
            False,
            id="labels and expressions must all hold",
        ),
    ],
)
def test_label_selector(selector: LabelSelector, matches: bool) -> None:
    assert selector.matches(LABELS) is matches


def test_parse_label_selector() -> None:
    raw = {"matchLabels": {"app": "train"}, "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    selector = parse_label_selector(raw, "Pod", "ns/p", "labelSelector")
    assert selector == LabelSelector((("app", "train"),), (Requirement("zone", "In", ("a",)),))
    assert parse_label_selector(None, "Pod", "ns/p", "labelSelector") == LabelSelector()


@pytest.mark.parametrize(
    "raw, message",
    [
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1"]}]},
            "Pod ns/p sel.matchExpressions[0].operator: unknown operator 'Gt'; want one of "
            "['DoesNotExist', 'Exists', 'In', 'NotIn']",
            id="Gt is for node selectors only",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]},
            "Pod ns/p sel.matchExpressions[0].values: operator In needs at least one value",
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"operator": "Exists"}]},
            "Pod ns/p sel.matchExpressions[0].key: missing label key",
            id="a requirement without key",
        ),
        pytest.param(
            {"matchLabels": ["a"]},
            "Pod ns/p sel.matchLabels: expected a mapping, got ['a']",
            id="matchLabels not a mapping",
        ),
        pytest.param("app=x", "Pod ns/p sel: expected a label selector, got 'app=x'", id="a string selector in JSON"),
    ],
)
def test_parse_label_selector_errors(raw: Any, message: str) -> None:
    with pytest.raises(ObjectError) as err:
        parse_label_selector(raw, "Pod", "ns/p", "sel")
    assert str(err.value) == message


@pytest.mark.parametrize(
    "text, want",
    [
        pytest.param("a=b", LabelSelector((("a", "b"),)), id="equality"),
        pytest.param("a==b", LabelSelector((("a", "b"),)), id="double equality"),
        pytest.param("a!=b", LabelSelector((), (Requirement("a", "NotIn", ("b",)),)), id="inequality"),
        pytest.param("e in (x, y)", LabelSelector((), (Requirement("e", "In", ("x", "y")),)), id="set in"),
        pytest.param("e notin (x,y)", LabelSelector((), (Requirement("e", "NotIn", ("x", "y")),)), id="set notin"),
        pytest.param("!f", LabelSelector((), (Requirement("f", "DoesNotExist"),)), id="does not exist"),
        pytest.param("g", LabelSelector((), (Requirement("g", "Exists"),)), id="exists"),
        pytest.param("b=2,a=1", LabelSelector((("a", "1"), ("b", "2"))), id="several, sorted"),
        pytest.param("", LabelSelector(), id="empty"),
    ],
)
def test_parse_label_selector_string(text: str, want: LabelSelector) -> None:
    assert parse_label_selector_string(text) == want


def test_selector_string_with_sets_and_commas() -> None:
    selector = parse_label_selector_string("app=train,zone in (a,b),!legacy")
    assert selector.matches({"app": "train", "zone": "b"})
    assert not selector.matches({"app": "train", "zone": "c"})
    assert not selector.matches({"app": "train", "zone": "a", "legacy": "yes"})


NODE_LABELS = {"zone": "a", "gpus": "8"}


@pytest.mark.parametrize(
    "terms, node_name, matches",
    [
        pytest.param(
            [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}],
            "n1",
            True,
            id="one term matching",
        ),
        pytest.param(
            [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]}]},
            ],
            "n1",
            True,
            id="terms are ORed",
        ),
        pytest.param(
            [
                {
                    "matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["a"]},
                        {"key": "gpus", "operator": "Lt", "values": ["4"]},
                    ]
                }
            ],
            "n1",
            False,
            id="expressions in a term are ANDed",
        ),
        pytest.param(
            [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}],
            "n1",
            True,
            id="matchFields on the node name",
        ),
        pytest.param(
            [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}],
            "n1",
            False,
            id="matchFields on another node name",
        ),
    ],
)
def test_node_selector_terms(terms: list[Any], node_name: str, matches: bool) -> None:
    parsed = parse_node_selector_terms(terms, "Pod", "ns/p", "terms")
    assert any(t.matches(NODE_LABELS, node_name) for t in parsed) is matches


def test_node_selector_terms_absent() -> None:
    assert parse_node_selector_terms(None, "Pod", "ns/p", "terms") == ()


def test_an_empty_term_matches_every_node() -> None:
    assert NodeSelectorTerm().matches({}, "any")


@pytest.mark.parametrize(
    "toleration, taint, tolerated",
    [
        pytest.param(
            Toleration("gpu", "Equal", "yes", "NoSchedule"),
            Taint("gpu", "yes", "NoSchedule"),
            True,
            id="Equal with key, value and effect",
        ),
        pytest.param(
            Toleration("gpu", "Equal", "no", "NoSchedule"),
            Taint("gpu", "yes", "NoSchedule"),
            False,
            id="Equal with another value",
        ),
        pytest.param(
            Toleration("gpu", "Exists"),
            Taint("gpu", "anything", "NoExecute"),
            True,
            id="Exists ignores the value; empty effect matches all effects",
        ),
        pytest.param(
            Toleration("gpu", "Exists", effect="NoSchedule"),
            Taint("gpu", "", "NoExecute"),
            False,
            id="an effect must match when given",
        ),
        pytest.param(
            Toleration("", "Exists"),
            Taint("anything", "x", "NoSchedule"),
            True,
            id="Exists without key tolerates every taint",
        ),
        pytest.param(Toleration("other", "Exists"), Taint("gpu", "", "NoSchedule"), False, id="another key"),
        pytest.param(
            Toleration("gpu", "Equal", "", ""),
            Taint("gpu", "", "PreferNoSchedule"),
            True,
            id="Equal with empty value matches a taint without value",
        ),
    ],
)
def test_toleration(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        pytest.param({"app": "batch", "example.com/team": "ml"}, {"app": "batch", "example.com/team": "ml"}, id="keys"),
        pytest.param({"gpu": True, "n": 3, "empty": ""}, {"gpu": "true", "n": "3", "empty": ""}, id="scalars as text"),
    ],
)
def test_match_labels_take_label_keys_and_values(labels: dict[str, Any], want: dict[str, str]) -> None:
    assert check_match_labels(labels) == want


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        pytest.param({"Bad_Prefix/app": "x"}, "'Bad_Prefix/app' is not a label key", id="prefix"),
        pytest.param({"-app": "x"}, "'-app' is not a label key", id="name"),
        pytest.param({"app": "a b"}, "label app: 'a b' is not a label value", id="value"),
        pytest.param({"app": {"x": 1}}, "label app: {'x': 1} is not a label value", id="a map"),
    ],
)
def test_bad_match_labels_name_the_label(labels: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_match_labels(labels)


def test_the_selector_flags_format_is_key_value_comma_separated_sorted() -> None:
    assert parse_match_labels(" b=2 , a=1") == {"a": "1", "b": "2"}
    assert parse_match_labels("") == {}
    assert format_match_labels({"b": "2", "a": "1"}) == "a=1,b=2"


# --- the namespaces a pod (anti-)affinity term covers ------------------------------------------------------

NAMESPACES = {"web": {"team": "web"}, "web-dev": {"team": "web", "stage": "dev"}, "db": {"team": "db"}, "own": {}}
TEAM_WEB = LabelSelector((("team", "web"),))
ANY = LabelSelector()


def _term(namespaces: tuple[str, ...] = (), selector: LabelSelector | None = None) -> PodAffinityTerm:
    return PodAffinityTerm(LabelSelector(), "zone", namespaces, selector)


@pytest.mark.parametrize(
    "term, scope",
    [
        pytest.param(_term(), frozenset({"own"}), id="neither namespaces nor selector: the pod's own namespace"),
        pytest.param(_term(("db",)), frozenset({"db"}), id="namespaces only: those, not the own one"),
        pytest.param(_term(selector=ANY), None, id="the empty selector: every namespace"),
        pytest.param(_term(("db",), ANY), None, id="the empty selector with namespaces: still every namespace"),
        pytest.param(_term(selector=TEAM_WEB), frozenset({"web", "web-dev"}), id="a selector: the matching namespaces"),
        pytest.param(
            _term(("db",), TEAM_WEB), frozenset({"db", "web", "web-dev"}), id="selector and namespaces: union"
        ),
        pytest.param(
            _term(selector=LabelSelector((("team", "none"),))), frozenset(), id="a selector matching nothing: none"
        ),
        pytest.param(
            _term(("gone",), TEAM_WEB),
            frozenset({"gone", "web", "web-dev"}),
            id="listed namespaces count whether they exist or not",
        ),
    ],
)
def test_pod_affinity_term_scope(term: PodAffinityTerm, scope: frozenset[str] | None) -> None:
    assert term.scope("own", NAMESPACES) == scope


@pytest.mark.parametrize(
    "term, namespace, covered",
    [
        pytest.param(_term(), "own", True, id="no selector: the own namespace"),
        pytest.param(_term(), "web", False, id="no selector: not another"),
        pytest.param(_term(("web",)), "own", False, id="namespaces replace the own one"),
        pytest.param(_term(selector=TEAM_WEB), "web-dev", True, id="the selector matches the namespace's labels"),
        pytest.param(_term(selector=TEAM_WEB), "own", False, id="a selector does not add the own namespace"),
        pytest.param(_term(("db",), TEAM_WEB), "db", True, id="a listed namespace beside a selector"),
        pytest.param(_term(selector=ANY), "gone", True, id="the empty selector covers even an unknown namespace"),
        pytest.param(
            _term(selector=LabelSelector(requirements=(Requirement("team", "DoesNotExist"),))),
            "gone",
            True,
            id="an unknown namespace has no labels",
        ),
    ],
)
def test_pod_affinity_term_covers(term: PodAffinityTerm, namespace: str, covered: bool) -> None:
    assert term.covers("own", namespace, NAMESPACES.get(namespace)) is covered
