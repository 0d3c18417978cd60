"""A real Prometheus for the e2e suite: Debian's `prometheus` binary (`make prometheus` installs it), started by the
test on 127.0.0.1 with a free port, its own storage directory and a scrape configuration naming the components'
`/metrics`, and stopped (SIGTERM, then SIGKILL) when the `with` block ends, however it ends.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests import children
from tests.loopback import free_port

BINARY = "prometheus"
HOW_TO_GET_IT = "no prometheus binary: `make prometheus` (as root, with apt-get) or `apt-get install prometheus`"
READY_TIMEOUT = 30.0


def unavailable() -> str:
    """Why a test cannot start a Prometheus here, or "" when it can."""
    return "" if shutil.which(BINARY) else HOW_TO_GET_IT


@dataclass
class Prometheus:
    url: str
    pid: int
    log: Path

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query at now: the result's series (a scalar as one series without labels)."""
        address = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(address, timeout=5) as answer:
            body = json.loads(answer.read())
        assert body.get("status") == "success", body
        data = body["data"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def value(self, promql: str) -> float | None:
        """The query's value summed over its series; None when it has none."""
        series = self.query(promql)
        return sum(float(s["value"][1]) for s in series) if series else None


@contextlib.contextmanager
def running(targets: list[str], workdir: Path, *, scrape_interval: str = "1s") -> Iterator[Prometheus]:
    """Prometheus scraping `targets` (host:port of /metrics) every `scrape_interval`; stopped on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
                "scrape_configs": [{"job_name": "kai", "static_configs": [{"targets": targets}]}],
            }
        )
    )
    port = free_port()
    log = workdir / "prometheus.log"
    with open(log, "ab") as out:
        proc = children.spawn(
            [
                BINARY,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=1h",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        server = Prometheus(f"http://127.0.0.1:{port}", proc.pid, log)
        _wait_ready(server, proc)
        yield server
    finally:
        children.stop(proc, timeout=10)


def _wait_ready(server: Prometheus, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"prometheus exited ({proc.returncode}):\n{server.log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as answer:
            if answer.status == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"prometheus not ready after {READY_TIMEOUT:.0f} s:\n{server.log.read_text()[-2000:]}")
