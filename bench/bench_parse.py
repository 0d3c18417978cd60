"""The typed parse of `bench_scale.py`'s cluster, kind by kind: `python bench/bench_parse.py [--nodes 4000]
[--repeat 5] [--kinds Pod,PodGroup]`.

Each object is first sent through JSON (as a LIST hands it over), then every object of a kind is parsed with
`kai_scheduler.api.PARSERS` `--repeat` times with the collector off; printed per kind: the count and the least CPU
seconds of a pass (and per object). To compare revisions, run it with an earlier revision's `src` first on
`PYTHONPATH` (`git archive REV src | tar -x -C DIR`), the runs alternating.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))


def objects_by_kind(nodes: int) -> dict[str, list[dict[str, Any]]]:
    import scale_cluster

    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in scale_cluster.build(nodes, free=True):
        out[str(obj["kind"])].append(orjson.loads(orjson.dumps(obj)))
    return out


def least_cpu(parse: Any, objects: list[dict[str, Any]], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        parsed = [parse(obj) for obj in objects]
        best = min(best, time.process_time() - start)
        del parsed
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kinds", default="", help="comma-separated Kinds (default: every kind with a parser)")
    args = parser.parse_args()

    import kai_scheduler
    from kai_scheduler.api import PARSERS

    objects = objects_by_kind(args.nodes)
    kinds = [k for k in args.kinds.split(",") if k] or [k for k in objects if k in PARSERS]
    gc.disable()
    figures = {}
    for kind in kinds:
        cpu = least_cpu(PARSERS[kind], objects[kind], args.repeat)
        figures[kind] = {"count": len(objects[kind]), "cpu": round(cpu, 4)}
        print(f"{kind:14} {len(objects[kind]):8,} {cpu:7.3f} s {cpu / len(objects[kind]) * 1e6:6.2f} us each")
    print(json.dumps({"src": str(Path(kai_scheduler.__file__).parent), **figures}))


if __name__ == "__main__":
    main()
