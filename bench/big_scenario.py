"""A large scenario for `kai schedule`: load, cycle and peak memory at ~10 MB of YAML.

`python bench/big_scenario.py [--jobs N] [--out FILE]` writes the scenario (default 111,110 one-task jobs
over 1,000 8-GPU nodes and 10 queues, ~10 MB) and runs `kai schedule FILE -o json` in a child process under
`/usr/bin/time -v`, printing a table: file size, wall and CPU time, peak RSS, and the progress lines `kai`
wrote (wall times are the box's: with other work running, the CPU time is the fairer figure).
Use `--load-only` to measure just the loading (tracemalloc peak of the parse and of building the objects).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

QUEUES = 10
NODES = 1000


def write(path: Path, jobs: int) -> None:
    lines = [
        "name: many one-task jobs",
        "nodes:",
        f'- {{name: gpu, count: {NODES}, gpus: 8, cpu: "64", memory: 512Gi}}',
        "queues:",
    ]
    lines += [
        f"- {{name: team-{q}, resources: {{gpu: {{quota: {NODES * 8 // QUEUES}, overQuotaWeight: 1, "
        "limit: -1}, cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}}}"
        for q in range(QUEUES)
    ]
    lines.append("jobs:")
    lines += [
        f"- {{name: job-{i}, queue: team-{i % QUEUES}, tasks: [{{name: job-{i}-0, gpus: 1, cpu: '1'}}]}}"
        for i in range(jobs)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def load_only(path: Path) -> None:
    from kai_scheduler import scenario
    from kai_scheduler.scenario.source import parse_documents

    text = path.read_text(encoding="utf-8")
    tracemalloc.start()
    t0 = time.perf_counter()
    parse_documents(text, str(path))
    parse_s = time.perf_counter() - t0
    _, parse_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    loaded = scenario.loads(text, str(path))
    load_s = time.perf_counter() - t0
    _, load_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"| objects | {len(loaded.objects):,} |")
    print(f"| YAML parse | {parse_s:.1f} s, peak {parse_peak / 2**20:,.0f} MiB |")
    print(f"| whole load (parse + build) | {load_s:.1f} s, peak {load_peak / 2**20:,.0f} MiB |")


def schedule(path: Path) -> None:
    t0 = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "kai_scheduler.cli", "schedule", str(path), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", done.stderr))
    print(f"| exit code | {done.returncode} |")
    print(f"| wall time | {wall:.1f} s |")
    print(f"| CPU time (user + system) | {cpu:.1f} s |")
    print(f"| load average at the end | {os.getloadavg()[0]:.1f} |")
    print(f"| peak RSS | {int(rss.group(1)) / 2**20:.2f} GiB |" if rss else "| peak RSS | ? |")
    for line in done.stderr.splitlines():
        if line.startswith("kai: "):
            print(f"| progress | {line} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=111_110)
    p.add_argument("--out", type=Path, default=Path("/tmp/kai-big-scenario.yaml"))
    p.add_argument("--load-only", action="store_true")
    args = p.parse_args()
    write(args.out, args.jobs)
    print("| figure | value |\n|---|---|")
    print(f"| scenario | {args.jobs:,} jobs, {args.out.stat().st_size / 2**20:.1f} MiB |")
    (load_only if args.load_only else schedule)(args.out)


if __name__ == "__main__":
    main()
