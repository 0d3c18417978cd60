"""Label selectors, node selector terms, taints and tolerations: the Kubernetes matching rules.

Used by the store (list with a label selector) and by the predicates plugin. Values are frozen so a pod's
constraints can key caches (pods with equal constraints share one node mask).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.meta import is_label_value

_SET_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}
_NODE_OPERATORS = _SET_OPERATORS | {"Gt", "Lt"}


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if value is None:
            return False
        try:  # Gt / Lt compare integers, as kube-scheduler does
            have, want = int(value), int(self.values[0])
        except (ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """`matchLabels` and `matchExpressions`; the empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(r.matches(labels) for r in self.requirements)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of required node affinity: all its requirements must hold (terms are ORed)."""

    requirements: tuple[Requirement, ...] = ()
    field_requirements: tuple[Requirement, ...] = ()  # matchFields: only metadata.name is defined

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not all(r.matches(labels) for r in self.requirements):
            return False
        fields = {"metadata.name": node_name}
        return all(r.matches(fields) for r in self.field_requirements)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


NamespaceScope = frozenset[str] | None  # the namespaces a term covers; None: every namespace
NO_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One pod (anti-)affinity term. It covers the pods of `namespaces` and of the namespaces whose labels
    `namespace_selector` matches (the empty selector: every namespace); with neither set, of the pod's own
    namespace (kube-scheduler's `AffinityTerm`)."""

    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None  # None: not set

    def scope(self, own_namespace: str, namespace_labels: Mapping[str, Mapping[str, str]]) -> NamespaceScope:
        """The namespaces this term of a pod in `own_namespace` covers, its selector matched against the
        namespaces that exist (`namespace_labels`, name -> labels), as kube-scheduler merges the selector of the
        incoming pod's terms into their namespaces; None when the selector is empty (every namespace)."""
        chosen = self.namespace_selector
        if chosen is None:
            return frozenset(self.namespaces or (own_namespace,))
        if chosen.is_empty:
            return None
        matched = (name for name, labels in namespace_labels.items() if chosen.matches(labels))
        return frozenset((*self.namespaces, *matched))

    def covers(self, own_namespace: str, namespace: str, labels: Mapping[str, str] | None) -> bool:
        """Whether this term of a pod in `own_namespace` covers a pod in `namespace`, whose labels are `labels`
        (None: the namespace does not exist, read as no labels), as kube-scheduler matches an existing pod's
        term against the incoming pod."""
        chosen = self.namespace_selector
        if chosen is None:
            return namespace in (self.namespaces or (own_namespace,))
        return namespace in self.namespaces or chosen.matches(NO_LABELS if labels is None else labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred (soft) pod (anti-)affinity term: `weight` (1-100) counts per matching pod in the domain."""

    weight: int
    term: PodAffinityTerm


def parse_requirement(raw: Any, kind: str, name: str, path: str, operators: set[str]) -> Requirement:
    if not isinstance(raw, Mapping):
        raise ObjectError(kind, name, path, f"expected a requirement object, got {raw!r}")
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise ObjectError(kind, name, f"{path}.key", "missing label key")
    if not isinstance(op, str) or op not in operators:
        raise ObjectError(kind, name, f"{path}.operator", f"unknown operator {op!r}; want one of {sorted(operators)}")
    if not isinstance(values, list) or not all(isinstance(v, str | int) for v in values):
        raise ObjectError(kind, name, f"{path}.values", f"expected a list of strings, got {values!r}")
    if op in ("In", "NotIn", "Gt", "Lt") and not values:
        raise ObjectError(kind, name, f"{path}.values", f"operator {op} needs at least one value")
    return Requirement(key, op, tuple(str(v) for v in values))


def parse_label_selector(raw: Any, kind: str, name: str, path: str) -> LabelSelector:
    if raw is None:
        return LabelSelector()
    if not isinstance(raw, Mapping):
        raise ObjectError(kind, name, path, f"expected a label selector, got {raw!r}")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise ObjectError(kind, name, f"{path}.matchLabels", f"expected a mapping, got {labels!r}")
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise ObjectError(kind, name, f"{path}.matchExpressions", f"expected a list, got {exprs!r}")
    return LabelSelector(
        tuple(sorted((str(k), str(v)) for k, v in labels.items())),
        tuple(
            parse_requirement(e, kind, name, f"{path}.matchExpressions[{i}]", _SET_OPERATORS)
            for i, e in enumerate(exprs)
        ),
    )


def parse_node_selector_terms(raw: Any, kind: str, name: str, path: str) -> tuple[NodeSelectorTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ObjectError(kind, name, path, f"expected a list of terms, got {raw!r}")
    terms = []
    for i, term in enumerate(raw):
        if not isinstance(term, Mapping):
            raise ObjectError(kind, name, f"{path}[{i}]", f"expected a term, got {term!r}")
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        for key, value in (("matchExpressions", exprs), ("matchFields", fields)):
            if not isinstance(value, list):
                raise ObjectError(kind, name, f"{path}[{i}].{key}", f"expected a list, got {value!r}")
        terms.append(
            NodeSelectorTerm(
                tuple(
                    parse_requirement(e, kind, name, f"{path}[{i}].matchExpressions[{j}]", _NODE_OPERATORS)
                    for j, e in enumerate(exprs)
                ),
                tuple(
                    parse_requirement(e, kind, name, f"{path}[{i}].matchFields[{j}]", _NODE_OPERATORS)
                    for j, e in enumerate(fields)
                ),
            )
        )
    return tuple(terms)


def parse_label_selector_string(text: str) -> LabelSelector:
    """Parse the string form used by `kubectl -l` ("a=b,c!=d,e in (x,y),!f,g")."""
    requirements: list[Requirement] = []
    labels: list[tuple[str, str]] = []
    for part in _split_selector(text):
        part = part.strip()
        if not part:
            continue
        if " in " in part or " notin " in part:
            key, op, rest = part.partition(" notin ") if " notin " in part else part.partition(" in ")
            values = tuple(v.strip() for v in rest.strip().strip("()").split(",") if v.strip())
            requirements.append(Requirement(key.strip(), "NotIn" if "notin" in op else "In", values))
        elif "!=" in part:
            key, _, value = part.partition("!=")
            requirements.append(Requirement(key.strip(), "NotIn", (value.strip(),)))
        elif "=" in part:
            key, _, value = part.partition("==") if "==" in part else part.partition("=")
            labels.append((key.strip(), value.strip()))
        elif part.startswith("!"):
            requirements.append(Requirement(part[1:].strip(), "DoesNotExist"))
        else:
            requirements.append(Requirement(part, "Exists"))
    return LabelSelector(tuple(sorted(labels)), tuple(requirements))


# A label key: an optional DNS-subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or
# '.', starting and ending with a letter or digit.
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def check_match_labels(labels: Mapping[str, Any]) -> dict[str, str]:
    """`labels` as a map of label keys to label values (KAI's `podLabelSelector`, `namespaceLabelSelector`); a
    ValueError naming the first bad key or value. Scalars are taken as their text, as a Helm `--set` gives them."""
    out: dict[str, str] = {}
    for key, value in labels.items():
        if not isinstance(key, str) or not is_label_key(key):
            raise ValueError(f"{key!r} is not a label key")
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, (str, int, float)) or not is_label_value(str(value)):
            raise ValueError(f"label {key}: {value!r} is not a label value")
        out[key] = str(value)
    return out


def is_label_key(key: str) -> bool:
    """Whether `key` may be a label's key (`app`, `example.com/team`)."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return _LABEL_NAME.fullmatch(name) is not None


def parse_match_labels(text: str) -> dict[str, str]:
    """KAI's selector flags' `key=value,key=value` ("" = none); a ValueError naming the first bad item (KAI's
    flags drop an item without '=' silently)."""
    pairs: dict[str, str] = {}
    for item in text.split(",") if text.strip() else ():
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item.strip()!r} is not key=value")
        pairs[key.strip()] = value.strip()
    return check_match_labels(pairs)


def format_match_labels(labels: Mapping[str, str]) -> str:
    """The `key=value,key=value` of the selector flags, keys sorted ("" for none)."""
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def _split_selector(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def requirement_dict(r: Requirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": r.key, "operator": r.operator}
    if r.values:
        out["values"] = list(r.values)
    return out


def label_selector_dict(s: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.match_labels:
        out["matchLabels"] = dict(s.match_labels)
    if s.requirements:
        out["matchExpressions"] = [requirement_dict(r) for r in s.requirements]
    return out


def node_selector_term_dict(t: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if t.requirements:
        out["matchExpressions"] = [requirement_dict(r) for r in t.requirements]
    if t.field_requirements:
        out["matchFields"] = [requirement_dict(r) for r in t.field_requirements]
    return out


def pod_affinity_term_dict(t: PodAffinityTerm) -> dict[str, Any]:
    out: dict[str, Any] = {"labelSelector": label_selector_dict(t.selector), "topologyKey": t.topology_key}
    if t.namespaces:
        out["namespaces"] = list(t.namespaces)
    if t.namespace_selector is not None:
        out["namespaceSelector"] = label_selector_dict(t.namespace_selector)
    return out


def weighted_pod_affinity_term_dict(t: WeightedPodAffinityTerm) -> dict[str, Any]:
    return {"weight": t.weight, "podAffinityTerm": pod_affinity_term_dict(t.term)}


def toleration_dict(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": t.operator}
    for key, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            out[key] = value
    return out


def taint_dict(t: Taint) -> dict[str, Any]:
    return {"key": t.key, "value": t.value, "effect": t.effect} if t.value else {"key": t.key, "effect": t.effect}
