"""Import the Alibaba GPU cluster trace (2023, "openb") as a scenario: its nodes, and its tasks as jobs.

Read where they lie (../shared/traces/alibaba-gpu-v2023/); never copied. Mapping (README of the trace):

- node CSV (`sn, cpu_milli, memory_mib, gpu, model`): one node each; the GPU model becomes the label
  `nvidia.com/gpu.product` (as NVIDIA's feature discovery sets it), and a per-GPU memory for fractions (the
  undisclosed models G1–G3 are taken as 32 GiB).
- pod CSV (`name, cpu_milli, memory_mib, num_gpu, gpu_milli, creation_time, deletion_time, scheduled_time`,
  optional `gpu_spec, qos, pod_phase`): one single-pod job each, in a queue per `qos` (LS → `ls`, …).
  `gpu_milli` below 1000 is a fraction of one GPU (the gpu-fraction annotation; with `num_gpu` > 1, a
  fraction of each of that many devices); `gpu_spec` (`|`-separated models) becomes a required node affinity
  on the model label; the arrival is `creation_time` (from the earliest one) and the run time
  `deletion_time − scheduled_time`; a task the trace never scheduled (empty `scheduled_time`) runs
  `deletion_time − creation_time`.
- `time_scale` multiplies arrivals and run times (so the replay is shorter or longer; how many GPUs are asked
  for at once does not change); `sample` keeps that many tasks (below 1: that fraction) that arrived one
  after the other, from a start drawn with the seed: a window keeps the trace's arrival rate, where a sample
  spread over the whole trace (its tasks arrive over 37 days) would thin it out to an idle cluster.

`describe` says in one line what was replayed: how many tasks over how long, and the most GPUs they ask for
at once against the cluster's GPUs (the openb cluster is sized for the whole trace at once, so a replay in
time loads it lightly).

A bad file is a `TraceError` naming `file:line:column`: a missing column (in the header, or a row shorter than
it), a field that is not a number (`abc`, `NaN`, `inf`), a negative amount or run time, a number past its
column's bound (`BOUNDS`; a count that is not whole), an empty name or one a row before had; a file with no
rows. Bad rows are not skipped: a replay of part of the file would not be the trace. A UTF-8 byte order mark is
read as nothing; a header in one column that holds `;` or a tab is said to use the wrong delimiter.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kai_scheduler.api.duration import describe_duration
from kai_scheduler.api.errors import UserError
from kai_scheduler.scenario import Scenario
from kai_scheduler.scenario import build as scenario_build
from kai_scheduler.scenario.entry import MAX_OBJECTS, Where
from kai_scheduler.scenario.source import Lines

GPU_MODEL_LABEL = "nvidia.com/gpu.product"
QOS_LABEL = "alibaba.com/qos"
GPU_MEMORY_MIB = {
    "T4": 16384,
    "P100": 16384,
    "V100M16": 16384,
    "V100M32": 32768,
    "A10": 24576,
    "G1": 32768,
    "G2": 32768,
    "G3": 32768,
}
DEFAULT_GPU_MEMORY_MIB = 16384
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
POD_OPTIONAL = ("gpu_spec", "qos", "pod_phase")
DEFAULT_QUEUE = "default"
# The most each number column may hold: far above the trace's own figures (cpu_milli 128000, memory_mib 1048576,
# 8 GPUs, times below 1.3e7 s), and below what would overflow a quantity or a count of devices (MAX_OBJECTS).
BOUNDS: dict[str, float] = {
    "cpu_milli": 1e9,  # a million cores
    "memory_mib": 1e12,  # an exbibyte
    "num_gpu": MAX_OBJECTS,
    "gpu": MAX_OBJECTS,
    "gpu_milli": 1000,  # thousandths of one GPU
    "creation_time": 1e10,  # seconds: three centuries
    "deletion_time": 1e10,
    "scheduled_time": 1e10,
}
WHOLE = frozenset({"num_gpu", "gpu"})
LIGHT_LOAD_PERCENT = 5.0  # below this peak share of the cluster's GPUs, the note says the replay is light


class TraceError(UserError):
    """A trace file that cannot be read; the message is one line starting with `file:line[:column]`."""


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    cpu_milli: float
    memory_mib: float
    num_gpu: int
    gpu_milli: float
    gpu_spec: tuple[str, ...]
    qos: str
    arrival: float  # seconds since the trace start, unscaled
    duration: float


def load(
    pods: str | Path,
    nodes: str | Path,
    *,
    time_scale: float = 1.0,
    sample: float | None = None,
    seed: int = 0,
    note: Callable[[str], None] | None = None,
) -> Scenario:
    """The trace as a scenario (nodes, one queue per QoS, one job per task); `note` gets `describe`'s line."""
    if not time_scale > 0 or not math.isfinite(time_scale):
        raise TraceError(f"--time-scale: must be above 0, got {time_scale:g}")
    every = read_tasks(pods)
    tasks = _sample(every, sample, seed)
    node_entries = read_nodes(nodes)
    if note is not None:
        note(describe(tasks, len(every), node_entries, time_scale))
    doc = to_scenario(node_entries, tasks, time_scale, name=f"alibaba {Path(pods).stem}")
    return scenario_build.build(Where(str(pods), Lines()), doc)


def describe(tasks: list[Task], of: int, nodes: list[dict[str, Any]], time_scale: float) -> str:
    """One line: the tasks kept, the time they span, and their peak GPU demand against the cluster's GPUs."""
    total = sum(float(n["gpus"]) for n in nodes)
    arrivals = [t.arrival for t in tasks]
    span = (max(arrivals) - min(arrivals)) * time_scale if arrivals else 0.0
    peak = _peak_gpus(tasks)
    share = 100 * peak / total if total else 0.0
    kept = f"{len(tasks)} of {of} trace tasks" if len(tasks) < of else f"{of} trace tasks"
    line = (
        f"{kept} arriving over {describe_duration(span)}; at most {peak:.4g} GPUs asked for at once, "
        f"{share:.2g} % of the {total:g} GPUs of the nodes"
    )
    if share < LIGHT_LOAD_PERCENT:
        line += (
            ": a lightly loaded replay (--time-scale changes its length, not its load; "
            "a shorter --nodes list loads it more)"
        )
    return line


def _peak_gpus(tasks: list[Task]) -> float:
    """The most GPUs the tasks ask for at once, each from its arrival for its run time (no waiting)."""
    changes = sorted([(t.arrival + t.duration, -_gpus(t)) for t in tasks] + [(t.arrival, _gpus(t)) for t in tasks])
    peak = current = 0.0
    for _, delta in changes:  # ends sort before starts at one instant: back to back is not overlap
        current += delta
        peak = max(peak, current)
    return peak


def _gpus(task: Task) -> float:
    return task.num_gpu * (task.gpu_milli / 1000 if task.gpu_milli < 1000 else 1.0)


def read_nodes(path: str | Path) -> list[dict[str, Any]]:
    """Scenario node entries, one per CSV row."""
    out = []
    names: dict[str, int] = {}
    for row in _rows(path, NODE_COLUMNS, ()):
        gpus = int(row.number("gpu"))
        model = row.text("model")
        node: dict[str, Any] = {
            "name": row.name("sn", names),
            "gpus": gpus,
            "cpu": _milli(row.number("cpu_milli")),
            "memory": _mib(row.number("memory_mib")),
        }
        if gpus > 0:
            node["gpuMemory"] = GPU_MEMORY_MIB.get(model, DEFAULT_GPU_MEMORY_MIB)
        if model:
            node["labels"] = {GPU_MODEL_LABEL: model}
        out.append(node)
    return out


def read_tasks(path: str | Path) -> list[Task]:
    out = []
    names: dict[str, int] = {}
    for row in _rows(path, POD_COLUMNS, POD_OPTIONAL):
        created, deleted = row.number("creation_time"), row.number("deletion_time")
        scheduled = row.number("scheduled_time", empty=math.nan)
        began = created if math.isnan(scheduled) else scheduled
        if deleted < began:
            since = "creation_time" if math.isnan(scheduled) else "scheduled_time"
            raise row.error("deletion_time", f"negative duration: {deleted:g} is before {since} {began:g}")
        spec = tuple(dict.fromkeys(m for m in row.text("gpu_spec").split("|") if m))
        out.append(
            Task(
                name=row.name("name", names),
                cpu_milli=row.number("cpu_milli"),
                memory_mib=row.number("memory_mib"),
                num_gpu=int(row.number("num_gpu")),
                gpu_milli=row.number("gpu_milli"),
                gpu_spec=spec,
                qos=row.text("qos"),
                arrival=created,
                duration=deleted - began,
            )
        )
    return out


def to_scenario(nodes: list[dict[str, Any]], tasks: list[Task], time_scale: float, *, name: str) -> dict[str, Any]:
    start = min((t.arrival for t in tasks), default=0.0)
    queues = sorted({_queue(t) for t in tasks})
    return {
        "name": name,
        "nodes": nodes,
        "queues": [{"name": q} for q in queues],
        "jobs": [_job(t, start, time_scale) for t in tasks],
    }


def _queue(task: Task) -> str:
    return task.qos.lower() or DEFAULT_QUEUE


def _job(t: Task, start: float, scale: float) -> dict[str, Any]:
    pod: dict[str, Any] = {"name": t.name, "cpu": _milli(t.cpu_milli), "memory": _mib(t.memory_mib)}
    if t.num_gpu > 0 and t.gpu_milli < 1000:
        pod["gpus"] = max(t.gpu_milli, 1.0) / 1000
        if t.num_gpu > 1:
            pod["gpuDevices"] = t.num_gpu
    elif t.num_gpu > 0:
        pod["gpus"] = t.num_gpu
    if t.gpu_spec:
        pod["nodeAffinity"] = [{"key": GPU_MODEL_LABEL, "operator": "In", "values": list(t.gpu_spec)}]
    if t.qos:
        pod["labels"] = {QOS_LABEL: t.qos}
    return {
        "name": t.name,
        "queue": _queue(t),
        "submitAt": round((t.arrival - start) * scale, 6),
        "duration": round(t.duration * scale, 6),
        "tasks": [pod],
    }


def _milli(value: float) -> str:
    return f"{round(value)}m"


def _mib(value: float) -> str:
    """MiB as a quantity; a fractional amount in KiB (quantities take no exponent here)."""
    return f"{int(value)}Mi" if float(value).is_integer() else f"{round(value * 1024)}Ki"


def _sample(tasks: list[Task], sample: float | None, seed: int) -> list[Task]:
    """`sample` tasks (below 1: that fraction) in a row by arrival, the first drawn with `seed`; in file order."""
    if sample is None:
        return tasks
    if not sample > 0 or not math.isfinite(sample) or (sample >= 1 and not float(sample).is_integer()):
        raise TraceError(f"--sample: want a count of tasks or a fraction in (0, 1), got {sample:g}")
    keep = round(len(tasks) * sample) if sample < 1 else min(len(tasks), int(sample))
    by_arrival = sorted(range(len(tasks)), key=lambda i: tasks[i].arrival)
    first = int(np.random.default_rng(seed).integers(0, len(tasks) - keep + 1))
    return [tasks[i] for i in sorted(by_arrival[first : first + keep])]


class _Row:
    """One CSV row, read by column name; errors cite file:line:column."""

    __slots__ = ("columns", "line", "path", "values", "width")

    def __init__(self, path: str, line: int, columns: dict[str, int], values: list[str], width: int) -> None:
        self.path, self.line, self.columns, self.values = path, line, columns, values
        self.width = width  # the header's number of fields

    def error(self, column: str, message: str) -> TraceError:
        return TraceError(f"{self.path}:{self.line}:{self.columns[column] + 1}: {column}: {message}")

    def text(self, column: str) -> str:
        index = self.columns.get(column)
        return self.values[index].strip() if index is not None and index < len(self.values) else ""

    def present(self, column: str) -> None:
        """A TraceError when the row ends before `column` (a required column)."""
        if self.columns[column] >= len(self.values):
            raise self.error(column, f"missing: the row has {len(self.values)} of the header's {self.width} fields")

    def name(self, column: str, seen: dict[str, int]) -> str:
        """A non-empty name no row before had (`seen`: name → its line, updated)."""
        self.present(column)
        value = self.text(column)
        if not value:
            raise self.error(column, "empty name")
        if value in seen:
            raise self.error(column, f"{value!r} is also the name on line {seen[value]}")
        seen[value] = self.line
        return value

    def number(self, column: str, *, empty: float | None = None) -> float:
        self.present(column)
        raw = self.text(column)
        if not raw and empty is not None:
            return empty
        try:
            value = float(raw)
        except ValueError:
            raise self.error(column, f"expected a number, got {_short(raw)}") from None
        if not math.isfinite(value):
            raise self.error(column, f"expected a number, got {_short(raw)}")
        if value < 0:
            raise self.error(column, f"must not be negative, got {_short(raw)}")
        bound = BOUNDS.get(column)
        if bound is not None and value > bound:
            raise self.error(column, f"must be at most {bound:g}, got {_short(raw)}")
        if column in WHOLE and not value.is_integer():
            raise self.error(column, f"expected a whole number, got {_short(raw)}")
        return value


def _short(raw: str) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _rows(path: str | Path, required: tuple[str, ...], optional: tuple[str, ...]) -> Iterator[_Row]:
    source = str(path)
    try:
        # utf-8-sig: a byte order mark (spreadsheets write one) is no part of the first column's name
        f = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed below, rows are streamed
    except FileNotFoundError:
        raise TraceError(f"{source}: no such file") from None
    except OSError as err:
        raise TraceError(f"{source}: cannot read: {err.strerror or err}") from None
    with f:
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise TraceError(f"{source}:1: empty file: expected a header with {', '.join(required)}") from None
        except (csv.Error, UnicodeDecodeError) as err:
            raise TraceError(f"{source}:1: not a CSV file: {err}") from None
        columns = {name: i for i, name in enumerate(header)}
        missing = [c for c in required if c not in columns]
        if missing:
            have = _short(", ".join(header)) if len(header) > 1 else _short(header[0] if header else "")
            other = next((d for d in (";", "\t", "|") if len(header) == 1 and d in header[0]), None)
            hint = f": the columns are separated by {other!r}, not commas" if other else ""
            raise TraceError(f"{source}:1: missing column {missing[0]!r} (have: {have}){hint}")
        known = {c: columns[c] for c in (*required, *optional) if c in columns}
        rows = 0
        try:
            for values in reader:
                if values:
                    rows += 1
                    yield _Row(source, reader.line_num, known, values, len(header))
        except (csv.Error, UnicodeDecodeError) as err:
            raise TraceError(f"{source}:{reader.line_num}: not a CSV file: {err}") from None
        if not rows:
            raise TraceError(f"{source}:1: a header and no rows: nothing to replay")
