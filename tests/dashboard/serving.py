"""Serve a dashboard in the test process: an embedded scenario on a free loopback port."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

from kai_scheduler.dashboard import serve
from kai_scheduler.dashboard.sources import EmbeddedSource


@dataclass
class Served:
    url: str
    target: serve.Target

    @property
    def source(self) -> EmbeddedSource:
        assert isinstance(self.target.source, EmbeddedSource)
        return self.target.source

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=10) as reply:
            body: bytes = reply.read()
            return body

    def state(self) -> dict[str, object]:
        document: dict[str, object] = orjson.loads(self.get("api/state"))
        return document


@contextmanager
def embedded(tmp_path: Path, text: str, *, period: float = 0.2, cycles: int | None = 3) -> Iterator[Served]:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    with serve.embedded(str(path), period=period, cycles=cycles) as target:
        server = serve.listen(target, "127.0.0.1", 0)
        try:
            yield Served(f"http://127.0.0.1:{server.port}/", target)
        finally:
            server.stop()
