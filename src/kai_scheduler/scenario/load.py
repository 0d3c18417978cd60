"""Load a scenario file or a Kubernetes manifest: `load(path)` and `loads(text, source)`.

A zip is a scheduler snapshot (`scenario.snapshot_zip`). Which form a text file is follows from its top
level: one mapping with nodes, queues or jobs is a scenario;
otherwise every document must be a Kubernetes object or a `List` of them. Every bad input raises an
ObjectError (a whole-file problem: its subclass ScenarioError) whose str() is one line starting with the
file, and the line where known:
`examples/bad.yaml:17: job train-1 tasks[2].gpus: expected a number, got 'two'`.
"""

from __future__ import annotations

from pathlib import Path

from kai_scheduler.scenario import build, manifest, snapshot_zip
from kai_scheduler.scenario.entry import Where
from kai_scheduler.scenario.model import Scenario
from kai_scheduler.scenario.source import ScenarioError, parse_documents


def load(path: str | Path) -> Scenario:
    """Read and load the file at `path`; a missing or unreadable file is a ScenarioError. A zip is a scheduler
    snapshot (`snapshot.zip` of the `snapshot` plugin's `/get-snapshot`), recognised by its first bytes."""
    source = str(path)
    data = _read(path)
    if snapshot_zip.is_snapshot(data):
        return snapshot_zip.load(data, source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(source, f"not UTF-8 text (byte {err.start}), nor a snapshot zip") from None
    return loads(text, source)


def _read(path: str | Path) -> bytes:
    source = str(path)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise ScenarioError(source, "no such file") from None
    except IsADirectoryError:
        raise ScenarioError(source, "is a directory, not a scenario file") from None
    except OSError as err:
        raise ScenarioError(source, f"cannot read: {err.strerror or err}") from None


def read_text(path: str | Path) -> str:
    """The file's text (newlines as `Path.read_text` gives them); a missing, unreadable or non-UTF-8 file is a
    one-line ScenarioError."""
    raw = _read(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(str(path), f"not UTF-8 text (byte {err.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def loads(text: str, source: str = "<string>") -> Scenario:
    """Load scenario or manifest text; `source` names it in errors (a file name, as the user wrote it)."""
    docs, lines = parse_documents(text, source)
    where = Where(source, lines)
    if not docs:
        raise ScenarioError(source, "empty: expected a scenario or Kubernetes objects")
    if len(docs) == 1 and build.is_scenario(docs[0]):
        return build.build(where, docs[0])
    if any(build.is_scenario(doc) for doc in docs):
        raise ScenarioError(source, "a scenario must be the only YAML document of its file")
    return manifest.build(where, docs)
