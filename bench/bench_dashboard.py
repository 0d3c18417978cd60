"""The dashboard at scale: `python bench/bench_dashboard.py [--nodes N] [--pods P]` prints a table.

A cluster of N nodes x 8 GPUs (default 5,000) and P pods (default 40,000) in jobs of 4 one-GPU pods over 50
queues: seven GPUs of every node run (1 in 8 stays idle), the other jobs wait. The dashboard watches it as
`kai dashboard --kubeconfig` does (`LiveSource` over the store), and the page is opened in headless Chromium:

- first build: the first picture (list, parse, snapshot, session, document) in CPU seconds;
- rebuild: the picture after one pod changed (the caches and the snapshot's carried model take in one change);
- document: its size in MB (all jobs and every GPU cell: the page needs nothing else);
- first paint: from navigation to the end of the first render, in Chromium (target 2 s);
- update render: the longest render of 5 live updates while the page stays open (the page is busy that
  long; target: well under a second, so it never freezes).

CPU seconds are `time.process_time` (the machine is shared); browser figures are wall time and noisy when
others work. Without Chromium (`apt-get install chromium chromium-driver`) the browser rows say so.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads as w

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.dashboard import app
from kai_scheduler.dashboard.feed import Feed
from kai_scheduler.dashboard.sources import LiveSource
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.store.memory import MemoryStore

QUEUES = 50
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1000")


def cluster(nodes: int, pods: int) -> list[w.JSON]:
    objs: list[w.JSON] = [*w.priority_classes(), *(w.node(f"node-{i:05d}", 8) for i in range(nodes))]
    objs += [w.queue(f"q-{i:02d}", nodes * 8 / QUEUES) for i in range(QUEUES)]
    running_pods = min(pods, nodes * 7)
    for j in range(pods // 4):
        placed = j * 4 < running_pods
        node = f"node-{(j * 4 // 7) % nodes:05d}" if placed else ""
        created = f"2025-12-31T{j // 3600 % 24:02d}:{j // 60 % 60:02d}:{j % 60:02d}Z"
        group = w.job(f"job-{j:05d}", f"q-{j % QUEUES:02d}", 4, 1, created, cpu="2", memory="8Gi", node=node)
        if placed:  # a job's 4 pods may straddle two nodes: each pod on the node its GPU index falls on
            for i, pod in enumerate(group[1:]):
                pod["spec"]["nodeName"] = f"node-{((j * 4 + i) // 7) % nodes:05d}"  # type: ignore[index]
        objs += group
    return objs


def build(nodes: int, pods: int) -> tuple[MemoryStore, LiveSource, dict[str, float]]:
    clock = ManualClock(w.EPOCH)
    store = MemoryStore(clock)
    store.add_many(cluster(nodes, pods))
    feed = Feed()
    source = LiveSource(store, load_config(None), feed, clock=clock)
    started = time.process_time()
    source.refresh(force=True)
    first = time.process_time() - started
    store.patch("pods", "job-00000-0", "bench", {"metadata": {"labels": {"touched": "1"}}})
    started = time.process_time()
    assert source.refresh()
    rebuild = time.process_time() - started
    return store, source, {"first build s": first, "rebuild s": rebuild, "document MB": len(feed.current()[1]) / 1e6}


def browser_figures(store: MemoryStore, source: LiveSource) -> dict[str, float]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    server = app.Server(app.create(source.feed), "127.0.0.1", 0)
    server.start()
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver") or ""), options=options)
    try:
        driver.get(f"http://127.0.0.1:{server.port}/")
        first = _wait(driver, "return document.body.dataset.renderedAt")
        renders = []
        for i in range(5):
            before = driver.execute_script("return document.body.dataset.version")
            store.patch("pods", f"job-0000{i}-1", "bench", {"metadata": {"labels": {"touched": str(i)}}})
            source.refresh()
            _wait(driver, f"return document.body.dataset.version !== '{before}' && document.body.dataset.renderMs")
            renders.append(float(driver.execute_script("return document.body.dataset.renderMs")))
        return {"first paint s": float(first) / 1000, "update render s": max(renders) / 1000}
    finally:
        driver.quit()
        server.stop()


def _wait(driver: Any, script: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(script)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=40000)
    args = parser.parse_args()
    store, source, figures = build(args.nodes, args.pods)
    if shutil.which("chromium") and shutil.which("chromedriver"):
        figures |= browser_figures(store, source)
    else:
        print("no chromium: first paint and update render not measured (apt-get install chromium chromium-driver)")
    targets = {"first paint s": "<= 2", "update render s": "< 1"}
    print(f"dashboard, {args.nodes} nodes x 8 GPUs, {args.pods} pods in jobs of 4, {QUEUES} queues")
    print(f"{'figure':<18}{'value':>10}  target")
    for name, value in figures.items():
        print(f"{name:<18}{value:>10.2f}  {targets.get(name, '')}")


if __name__ == "__main__":
    main()
