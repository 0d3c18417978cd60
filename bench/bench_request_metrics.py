"""What client-go's request series cost the store's request path: `python bench/bench_request_metrics.py`.

Two figures, in the client's own CPU seconds (`time.process_time`; the machine may be shared):

- `record`: `Requests.record` alone (one count and one histogram observation, as each attempt makes), when the
  store has it (skipped on a tree without `kai_scheduler.store.metrics`);
- `GET`: one small GET (a 404) through `KubeStore.transport.call` to the mock API server (tests/store/mock_apiserver.py,
  in its own process so its CPU is not counted) over loopback, with whatever the transport records per request.

Run it on a tree before and after a change to the request path and compare the `GET` lines; the `record` line
is the part of it that the series add.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_kube_list import start_mock_apiserver  # noqa: E402


def record_cost(n: int) -> float | None:
    """CPU µs of one `Requests.record`; None where the store has no request series."""
    try:
        from kai_scheduler.store.metrics import Requests
    except ImportError:
        return None
    requests = Requests("127.0.0.1:6443")
    verbs = ("GET", "PATCH", "POST", "GET")
    start = time.process_time()
    for i in range(n):
        requests.record(verbs[i & 3], 200, 0.0012)
    return (time.process_time() - start) / n * 1e6


def get_cost(url: str, n: int) -> float:
    """CPU µs of one small GET (a Namespace that is not there: a 404 Status, decoded by the store)."""
    from kubernetes.client import ApiClient, Configuration

    from kai_scheduler.store.interface import NotFound
    from kai_scheduler.store.kube import KubeOptions, KubeStore

    with KubeStore(ApiClient(Configuration(host=url)), KubeOptions(qps=0, burst=1)) as store:

        def get() -> None:
            with contextlib.suppress(NotFound):
                store.transport.call("GET", "/api/v1/namespaces/x")

        for _ in range(50):  # connections made, code warmed
            get()
        start = time.process_time()
        for _ in range(n):
            get()
        return (time.process_time() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    server, url = start_mock_apiserver()
    try:
        gets = [get_cost(url, args.requests) for _ in range(args.repeat)]
    finally:
        server.kill()
        server.wait()
    records = [record_cost(200_000) for _ in range(args.repeat)]
    print(f"{'what':<10} {'median CPU µs':>14} {'min':>8} {'max':>8}")
    print(f"{'GET':<10} {statistics.median(gets):>14.1f} {min(gets):>8.1f} {max(gets):>8.1f}")
    if records[0] is None:
        print(f"{'record':<10} {'(none here)':>14}")
    else:
        values = [r for r in records if r is not None]
        print(f"{'record':<10} {statistics.median(values):>14.2f} {min(values):>8.2f} {max(values):>8.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} (the box may be shared)")


if __name__ == "__main__":
    main()
