"""Where the install objects get their values: a concrete values mapping, or Helm expressions.

The object builders are written once against `Source`. `Concrete` answers with the values themselves (for
`kai manifests`); `Templated` answers with opaque tokens that `render.dump` later turns into `{{ .Values.… }}`
expressions (for the chart). A token is plain letters and digits, so YAML dumps it without quotes wherever it
lands: alone as a scalar, inside a longer string (`--qps=<token>`), or as a mapping key prefix for an optional
block.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kai_scheduler.install import kai_values
from kai_scheduler.install.values import Values


class Source(Protocol):
    def value(self, path: str) -> Any:
        """The value at dotted `path` (e.g. "scheduler.replicas")."""
        ...

    def tree(self, path: str) -> dict[str, Any]:
        """The mapping at `path`, leaf by leaf (for fixed-shape settings such as resources)."""
        ...

    def computed(self, python: Callable[[Values], Any], helm: str) -> Any:
        """A value derived from several values: `python(values)` here, Go template `helm` in the chart."""
        ...

    def optional(self, path: str, key: str, node: Any) -> dict[str, Any]:
        """`{key: node}` when the boolean at `path` is true, else nothing; merge it into a mapping."""
        ...

    def mapping(self, path: str, *, strings: bool = False) -> Any:
        """The free-form mapping (or list) at `path` as given (`strings`: each value of a mapping as text, as a map
        of strings needs)."""
        ...


def lookup(values: Values, path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            raise KeyError(f"install values have no {path!r}")
        node = node[key]
    return node


@dataclass(slots=True)
class Concrete:
    values: Values

    def value(self, path: str) -> Any:
        return lookup(self.values, path)

    def tree(self, path: str) -> dict[str, Any]:
        node = lookup(self.values, path)
        assert isinstance(node, dict)
        return node

    def computed(self, python: Callable[[Values], Any], helm: str) -> Any:
        del helm
        return python(self.values)

    def optional(self, path: str, key: str, node: Any) -> dict[str, Any]:
        return {key: node} if lookup(self.values, path) else {}

    def mapping(self, path: str, *, strings: bool = False) -> Any:
        node = lookup(self.values, path)
        assert isinstance(node, dict | list)
        return {k: _text(v) for k, v in node.items()} if strings and isinstance(node, dict) else copy.deepcopy(node)


def _text(value: Any) -> str:
    """A scalar as Helm's `toString` writes it (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class Token:
    """What a token stands for: `scalar` where it is a whole YAML value, `inline` inside a quoted string."""

    scalar: str
    inline: str


TOKEN_PREFIX = "KAIHELMTOKEN"
CONDITION_PREFIX = "KAIHELMIF"


@dataclass(slots=True)
class Templated:
    """Answers with tokens; `tokens`/`conditions` map each back to its Helm expression."""

    defaults: Values
    tokens: dict[str, Token] = field(default_factory=dict)
    conditions: dict[str, str] = field(default_factory=dict)

    def _token(self, scalar: str, inline: str) -> str:
        name = f"{TOKEN_PREFIX}{len(self.tokens)}X"
        self.tokens[name] = Token(scalar, inline)
        return name

    def value(self, path: str) -> Any:
        default = lookup(self.defaults, path)  # a typo in a builder fails here, at generation time
        expr = kai_values.helm_expression(path)
        scalar = f"{{{{ {expr} | quote }}}}" if isinstance(default, str) else f"{{{{ {expr} }}}}"
        return self._token(scalar, f"{{{{ {expr} }}}}")

    def tree(self, path: str) -> dict[str, Any]:
        node = lookup(self.defaults, path)
        assert isinstance(node, dict)
        return {
            k: self.tree(f"{path}.{k}") if isinstance(v, dict) else self.value(f"{path}.{k}") for k, v in node.items()
        }

    def computed(self, python: Callable[[Values], Any], helm: str) -> Any:
        del python
        return self._token(f"{{{{ {helm} }}}}", f"{{{{ {helm} }}}}")

    def mapping(self, path: str, *, strings: bool = False) -> Any:
        """A token for the mapping (or list) as JSON, which is YAML's flow style: it stands on one line wherever it
        lands."""
        empty = "list" if isinstance(lookup(self.defaults, path), list) else "dict"
        expr = kai_values.helm_expression(path)
        if strings:
            text = f"{{{{ $m := dict }}}}{{{{ range $k, $v := {expr} }}}}{{{{ $_ := set $m $k (toString $v) }}}}"
            text += "{{ end }}{{ toJson $m }}"
        else:
            text = f"{{{{ toJson ({expr} | default {empty}) }}}}"
        return self._token(text, text)

    def optional(self, path: str, key: str, node: Any) -> dict[str, Any]:
        lookup(self.defaults, path)
        marker = f"{CONDITION_PREFIX}{len(self.conditions)}X"
        self.conditions[marker] = kai_values.helm_expression(path)
        return {f"{marker}{key}": node}
