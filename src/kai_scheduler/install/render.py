"""YAML output: plain documents for `kai manifests`, Helm templates for the chart.

Both go through one dumper (block style, indented lists, no anchors, multi-line strings as literal blocks).
For templates, the tokens a `Templated` source handed out are replaced by their Helm expressions afterwards: a
token that is a whole value takes the scalar form (`{{ .Values.x | quote }}` for strings), a token inside a
longer string makes that string double-quoted and takes the inline form; a conditional key is wrapped in
`{{- if … }}` / `{{- end }}` over its indented block.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kai_scheduler.api.errors import UserError
from kai_scheduler.install.source import CONDITION_PREFIX, TOKEN_PREFIX, Templated

_INLINE_PREFIX = "KAIHELMINLINE"
_TOKEN = re.compile(rf"{TOKEN_PREFIX}(\d+)X")
_INLINE = re.compile(rf"{_INLINE_PREFIX}(\d+)X")
_CONDITION = re.compile(rf"^(\s*){CONDITION_PREFIX}(\d+)X")


class _Quoted(str):
    """A string with embedded tokens: dumped double-quoted so the expanded expression stays one scalar."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # lists indented under their key, as kubectl prints them


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if isinstance(data, _Quoted):
        return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style='"')
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Quoted, _represent_str)


def dump(obj: Any) -> str:
    out: str = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)
    return out


def stream(documents: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream, each document opened by `---`."""
    return "".join(f"---\n{dump(doc)}" for doc in documents)


def template(obj: Any, src: Templated) -> str:
    """`obj` (built from `src`) as Helm template text."""
    text = dump(_mark(obj))
    text = _TOKEN.sub(lambda m: src.tokens[f"{TOKEN_PREFIX}{m.group(1)}X"].scalar, text)
    text = _INLINE.sub(lambda m: src.tokens[f"{TOKEN_PREFIX}{m.group(1)}X"].inline, text)
    return _conditions(text, src)


def _mark(node: Any) -> Any:
    if isinstance(node, dict):
        return {_mark(k): _mark(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_mark(v) for v in node]
    if isinstance(node, str) and _TOKEN.search(node) and not _TOKEN.fullmatch(node):
        if '"' in node or "\\" in node:
            raise UserError(f"cannot template {node!r}: a quote or backslash beside a value")
        return _Quoted(_TOKEN.sub(lambda m: f"{_INLINE_PREFIX}{m.group(1)}X", node))
    return node


def _conditions(text: str, src: Templated) -> str:
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _CONDITION.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        condition = src.conditions[f"{CONDITION_PREFIX}{match.group(2)}X"]
        out.append(f"{indent}{{{{- if {condition} }}}}")
        out.append(indent + lines[i][match.end() :])
        i += 1
        while i < len(lines) and _indent(lines[i]) > len(indent):
            out.append(lines[i])
            i += 1
        out.append(f"{indent}{{{{- end }}}}")
    return "\n".join(out) + "\n"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
