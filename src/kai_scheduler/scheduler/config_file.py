"""Scheduler configuration files, read with their line numbers so that every error names `file:line`.

A file is KAI's `config.yaml` (actions, tiers, flags, ...) or the whole ConfigMap that holds it under
`data.config.yaml`; the configuration block of a scenario is located the same way. `load(source)` parses and
validates; a bad value is a ValueError whose one line starts with `file:line:`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from kai_scheduler.framework.config import ConfigError, SchedulerConfig
from kai_scheduler.scenario.load import read_text
from kai_scheduler.scenario.model import Scenario
from kai_scheduler.scenario.source import ScenarioError, line_map, line_of, located, parse_documents
from kai_scheduler.scheduler.scheduler import load_config

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """A raw configuration mapping, the file it came from and the line of each of its paths."""

    raw: dict[str, Any]
    source: str = ""
    lines: dict[Path, int] = field(default_factory=dict)

    def where(self, path: Path) -> str:
        return located(self.source, line_of(self.lines, path)) if self.source else ""


def read(path: str) -> ConfigSource:
    """Read a configuration file; a missing file, bad YAML or a non-mapping is a located ValueError."""
    text = read_text(path)
    docs, lines = parse_documents(text, path)
    if len(docs) > 1:
        raise ScenarioError(path, "expected one YAML document (a scheduler configuration or its ConfigMap)")
    data = docs[0] if docs else {}
    if not isinstance(data, dict):
        raise ScenarioError(path, "expected a scheduler configuration mapping")
    inner = data.get("data")
    if isinstance(inner, dict) and "config.yaml" in inner:  # a ConfigMap as kubectl prints it
        return _embedded(path, inner, lines)
    return ConfigSource(data, path, line_map(data, lines))


def of_scenario(scenario: Scenario, override: str | None) -> ConfigSource:
    """The configuration a run on `scenario` uses: the file `override` names (`--config`), else the scenario's own
    `config:` block, located in the scenario's file."""
    if override:
        return read(override)
    return ConfigSource(scenario.config, scenario.source, scenario.config_lines)


def _embedded(path: str, data: dict[str, Any], lines: Any) -> ConfigSource:
    """`data.config.yaml` of a ConfigMap: a YAML text whose lines follow its key's (a `|` block)."""
    text = data["config.yaml"]
    key_line = lines.of(data, "config.yaml") or 0
    if not isinstance(text, str):
        raise ScenarioError(located(path, key_line), "data.config.yaml: expected the configuration as text")
    try:
        docs, inner_lines = parse_documents(text, path)
    except ScenarioError as err:
        raise ScenarioError(located(path, key_line), f"data.config.yaml: {err.message}") from None
    config = docs[0] if docs else {}
    if not isinstance(config, dict):
        raise ScenarioError(located(path, key_line), "data.config.yaml: expected a scheduler configuration mapping")
    return ConfigSource(config, path, {p: key_line + n for p, n in line_map(config, inner_lines).items()})


def load(config: ConfigSource) -> SchedulerConfig:
    """The validated configuration; an error names the file and line of the field when it came from a file."""
    try:
        return load_config(config.raw)
    except ConfigError as err:
        where = config.where(err.path)
        raise ConfigError(f"{where}: {err}" if where else str(err), err.path) from None


class Watcher:
    """Tells when a configuration file's content changed since the last look (a hash of its bytes: a kubelet
    updating a ConfigMap volume swaps a symlink, which a content check sees whatever the timestamps say)."""

    def __init__(self, path: str) -> None:
        self.path = FilePath(path)
        self._seen = self._digest()

    def _digest(self) -> str:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return ""  # missing for now (a volume being updated): a change once it is back

    @property
    def digest(self) -> str:
        """The first 12 hex digits of the SHA-256 of the content last seen ("" when it could not be read): what
        the scheduler's configuration lines carry, so replicas can be compared (`sha256sum config.yaml`)."""
        return self._seen[:12]

    def changed(self) -> bool:
        """Whether the content differs from the last call's (or the start's); an unreadable file is no change."""
        digest = self._digest()
        if not digest or digest == self._seen:
            return False
        self._seen = digest
        return True
