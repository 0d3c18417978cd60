"""Generator blocks: jobs drawn at random, per queue, instead of listed one by one (`generators:` in a scenario).

```yaml
generators:
- name: a-train                 # jobs a-train-0, a-train-1, ...
  queue: team-a
  count: 40                     # how many jobs; and/or `until: 2h` (no arrival after it)
  start: 0s                     # the first arrival is at or after `start`
  arrival: {process: poisson, interval: 2m}       # or {process: fixed, interval: 1m}
                                                  # or {process: uniform, min: 30s, max: 3m}
  replicas: {distribution: choice, values: [1, 2, 4], weights: [3, 2, 1]}   # or a number
  gpus: 1                       # per pod: a number or a distribution (below 1: a fraction)
  duration: {distribution: lognormal, median: 10m, sigma: 0.8}             # or a duration
  cpu: "4"
  memory: 16Gi
  template: {tolerations: [...], nodeSelector: {...}}   # more task fields, as a job's template takes them
  # passed to every job as written: namespace, priority, priorityClassName, preemptibility, owner, minMember
```

Distributions: `fixed {value}`, `uniform {min, max}`, `choice {values, weights}`, `exponential {mean}`,
`lognormal {median, sigma}`, `normal {mean, stddev}`; each may add `min`/`max` to clip. Duration parameters
take Go durations or seconds. Replicas are rounded to whole pods (at least one); GPUs of one or more are
rounded to whole devices.

Each generator draws from its own numpy `Generator` seeded with (seed, its index), so the same seed gives the
same jobs, and adding a generator does not change what the others draw. The result is plain scenario job
mappings: the scenario loader checks and builds them like written jobs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from kai_scheduler.api.duration import DurationError, parse_duration
from kai_scheduler.scenario.entry import MAX_OBJECTS, Entry, Where

GENERATOR_FIELDS = (
    "name",
    "queue",
    "namespace",
    "count",
    "until",
    "start",
    "arrival",
    "replicas",
    "gpus",
    "duration",
    "cpu",
    "memory",
    "priority",
    "priorityClassName",
    "preemptibility",
    "owner",
    "minMember",
    "template",
)
PASSED = ("namespace", "priority", "priorityClassName", "preemptibility", "owner", "minMember")
PROCESSES = {"poisson": ("interval",), "fixed": ("interval",), "uniform": ("min", "max")}
DISTRIBUTIONS = {
    "fixed": ("value",),
    "uniform": ("min", "max"),
    "choice": ("values", "weights"),
    "exponential": ("mean",),
    "lognormal": ("median", "sigma"),
    "normal": ("mean", "stddev"),
}
OPTIONAL = {"weights"}
Draw = Callable[[np.random.Generator], float]


def expand(where: Where, raw: Any, seed: int) -> list[dict[str, Any]]:
    """The jobs of every generator in `raw` (the `generators:` list), each generator's in arrival order."""
    if not isinstance(raw, list):
        raise Entry(where, {}, "scenario", "top-level").error("generators", f"expected a list, got {raw!r}")
    jobs: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        e = Entry.named(where, item, "generator", f"generators[{i}]")
        e.check_keys(GENERATOR_FIELDS)
        jobs.extend(_generate(e, np.random.default_rng([seed, i])))
    return jobs


def _generate(e: Entry, rng: np.random.Generator) -> list[dict[str, Any]]:
    queue = e.required_text("queue")
    count = e.integer("count", minimum=0)
    until = _seconds(e, "until")
    if count is None and until is None:
        raise e.error("count", "give count, until, or both: when does the generator stop?")
    start = _seconds(e, "start") or 0.0
    interval = _arrival(e)
    replicas = _value(e, "replicas", duration=False, default=1.0)
    gpus = _value(e, "gpus", duration=False, default=0.0)
    run = _value(e, "duration", duration=True, default=0.0) if e.has("duration") else None
    template = {**e.mapping("template"), **{k: e.data[k] for k in ("cpu", "memory") if e.has(k)}}
    drawn_gpus = e.has("gpus") or "gpus" not in template
    passed = {k: e.data[k] for k in PASSED if e.has(k)}
    out: list[dict[str, Any]] = []
    now = start
    while count is None or len(out) < count:
        if out:
            now += _finite(e, "arrival", interval(rng))
        if until is not None and now > until:
            break
        if len(out) == MAX_OBJECTS:  # `until` far off, arrivals close together: the jobs would fill the memory
            raise e.error(
                "until", f"makes more than {MAX_OBJECTS} jobs; set a count, an earlier until or a longer interval"
            )
        job: dict[str, Any] = {
            "name": f"{e.name}-{len(out)}",
            "queue": queue,
            "submitAt": round(now, 3),
            **passed,
            "replicas": max(1, round(_finite(e, "replicas", replicas(rng)))),
            "template": {**template, **({"gpus": _gpus(_finite(e, "gpus", gpus(rng)))} if drawn_gpus else {})},
        }
        if run is not None:
            job["duration"] = round(max(0.0, _finite(e, "duration", run(rng))), 3)
        out.append(job)
    return out


def _finite(e: Entry, key: str, value: float) -> float:
    """A drawn value; one past what a float holds (a lognormal of sigma 1000) is an error naming the field."""
    if not math.isfinite(value):
        raise e.error(key, f"drew {value:g}: the distribution's parameters are too large")
    return value


def _gpus(value: float) -> float | int:
    if value <= 0:
        return 0
    return round(value, 4) if value < 1 else max(1, round(value))


def _arrival(e: Entry) -> Draw:
    a = e.child("arrival", ("process", "interval", "min", "max"))
    if a is None:
        raise e.error("arrival", "missing arrival: {process: poisson|fixed|uniform, ...}")
    process = a.required_text("process")
    if process not in PROCESSES:
        raise a.error("process", f"unknown arrival process {process!r}; want one of {', '.join(PROCESSES)}")
    params = {k: _required_seconds(a, k) for k in PROCESSES[process]}
    if process == "poisson":
        mean = params["interval"]
        return lambda rng: float(rng.exponential(mean)) if mean > 0 else 0.0
    if process == "fixed":
        every = params["interval"]
        return lambda rng: every
    low, high = params["min"], params["max"]
    if high < low:
        raise a.error("max", f"must be at least min ({low:g}s), got {high:g}s")
    return lambda rng: float(rng.uniform(low, high))


def _value(e: Entry, key: str, *, duration: bool, default: float) -> Draw:
    """A fixed number (or duration), or a draw from a `{distribution: ...}` mapping."""
    raw = e.data.get(key)
    if raw is None:
        return lambda rng: default
    if not isinstance(raw, dict):
        value = _required_seconds(e, key) if duration else e.number(key, minimum=0) or 0.0
        return lambda rng: value
    d = e.child(key, ("distribution", "value", "min", "max", "values", "weights", "mean", "median", "sigma", "stddev"))
    assert d is not None
    name = d.required_text("distribution")
    if name not in DISTRIBUTIONS:
        raise d.error("distribution", f"unknown distribution {name!r}; want one of {', '.join(DISTRIBUTIONS)}")
    draw = _distribution(d, name, duration)
    low = _param(d, "min", duration) if d.has("min") and name != "uniform" else -math.inf
    high = _param(d, "max", duration) if d.has("max") and name != "uniform" else math.inf
    return lambda rng: min(high, max(low, draw(rng)))


def _distribution(d: Entry, name: str, duration: bool) -> Draw:
    for k in DISTRIBUTIONS[name]:
        if k not in OPTIONAL and not d.has(k):
            raise d.error(k, f"missing {k}: a {name} distribution needs {', '.join(DISTRIBUTIONS[name])}")
    if name == "choice":
        values = [_item(d, "values", i, v, duration) for i, v in enumerate(d.sequence("values"))]
        weights = [_item(d, "weights", i, w, False) for i, w in enumerate(d.sequence("weights"))] or [1.0] * len(values)
        if not values or len(weights) != len(values) or not 0 < sum(weights) < math.inf:
            raise d.error("weights", "want as many non-negative weights as values, not all zero")
        p = np.asarray(weights) / sum(weights)
        return lambda rng: float(values[int(rng.choice(len(values), p=p))])
    v = {k: _param(d, k, duration and k not in ("sigma",)) for k in DISTRIBUTIONS[name] if k != "weights"}
    if name == "fixed":
        return lambda rng: v["value"]
    if name == "uniform":
        return lambda rng: float(rng.uniform(v["min"], v["max"]))
    if name == "exponential":
        return lambda rng: float(rng.exponential(v["mean"]))
    if name == "lognormal":
        if v["median"] <= 0:
            raise d.error("median", "must be above 0")
        return lambda rng: float(rng.lognormal(math.log(v["median"]), v["sigma"]))
    return lambda rng: float(rng.normal(v["mean"], v["stddev"]))


def _param(d: Entry, key: str, duration: bool) -> float:
    return _required_seconds(d, key) if duration else d.number(key, minimum=0) or 0.0


def _item(d: Entry, key: str, i: int, value: Any, duration: bool) -> float:
    """One element of `values`/`weights`: a non-negative number, or (durations) a Go duration."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 and math.isfinite(value):
        return float(value)
    if duration and isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except DurationError:
            seconds = -1.0
        if seconds >= 0:
            return seconds
    want = 'a duration such as "90s"' if duration else "a non-negative number"
    raise d.error(f"{key}[{i}]", f"expected {want}, got {value!r}")


def _seconds(e: Entry, key: str) -> float | None:
    found = e.duration(key)
    return None if found is None else found[0]


def _required_seconds(e: Entry, key: str) -> float:
    found = _seconds(e, key)
    if found is None:
        raise e.error(key, f"missing {key}")
    return found
