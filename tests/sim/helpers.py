"""Small scenarios and a replay runner for the simulator tests."""

from __future__ import annotations

import textwrap

from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources

NODES = """
nodes:
- {name: n, count: %(nodes)d, gpus: %(gpus)d, gpuMemory: 81920, cpu: "64", memory: 512Gi}
"""
QUEUES = """
queues:
- name: a
  resources: {gpu: {quota: %(quota_a)s, overQuotaWeight: 1, limit: -1}}
- name: b
  resources: {gpu: {quota: %(quota_b)s, overQuotaWeight: 1, limit: -1}}
"""


def scenario(jobs: str, *, nodes: int = 1, gpus: int = 4, quota_a: int = 2, quota_b: int = 2, extra: str = "") -> str:
    """A scenario text: `nodes` nodes of `gpus` GPUs, queues a and b, then `jobs` (YAML list items)."""
    head = (NODES % {"nodes": nodes, "gpus": gpus}) + (QUEUES % {"quota_a": quota_a, "quota_b": quota_b})
    body = "jobs: []\n" if jobs.strip() == "[]" else "jobs:\n" + textwrap.dedent(jobs)
    return head + textwrap.dedent(extra) + body


def simulate(text: str, *, seed: int = 0, **options: object) -> replay.Run:
    return make(text, seed=seed, **options).run()


def make(text: str, *, seed: int = 0, **options: object) -> replay.Replay:
    loaded = sources.loads(text, "test.yaml", seed=seed)
    return replay.Replay(loaded, load_config(loaded.config), replay.Options(timeline=True, **options))  # type: ignore[arg-type]
