"""Every API request a `kai` process sends, one JSON line each: `python bench/request_ledger.py LEDGER kai-args...`.

Runs `python -m kai_scheduler.cli kai-args...` with the store's transport wrapped so that each attempt it sends
(watches and retries included) appends `{"t", "method", "path", "watch", "status", "body"}` to the file LEDGER
(the body cut to 400 characters). The API server's audit log is not kept by `../shared/kube`, so the count is
taken on the client side, where the request is still the component's own. `parse` turns a line's path into
(resource, subresource, namespace, name) for tables.
"""

from __future__ import annotations

import json
import runpy
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, NamedTuple


class Target(NamedTuple):
    resource: str
    subresource: str
    namespace: str
    name: str


def parse(path: str) -> Target:
    """`/api/v1/namespaces/ns/pods/p/status` → ("pods", "status", "ns", "p"); a list or create has no name."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return Target(resource, subresource, namespace, name)


def install(ledger_path: str) -> None:
    from kai_scheduler.store.kube_http import transport

    lock = threading.Lock()
    out = open(ledger_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    exchange, open_stream = transport.Transport._exchange, transport.Transport._open

    def write(method: str, path: str, query: Sequence[tuple[str, str]], status: int, data: bytes | None) -> None:
        line = {
            "t": time.time(),
            "method": method,
            "path": path,
            "watch": any(k == "watch" and v not in ("0", "false") for k, v in query),
            "status": status,
            "body": (data or b"")[:400].decode(errors="replace"),
        }
        with lock:
            out.write(json.dumps(line) + "\n")

    def exchanged(
        self: transport.Transport,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        data: bytes | None,
        *args: Any,
    ) -> Any:
        status = 0
        try:
            answer = exchange(self, method, path, query, data, *args)
            status = answer.status
            return answer
        finally:
            write(method, path, query, status, data)

    def opened(self: transport.Transport, path: str, query: Sequence[tuple[str, str]], *args: Any) -> Any:
        status = 0
        try:
            resp = open_stream(self, path, query, *args)
            status = resp.status
            return resp
        finally:
            write("GET", path, query, status, None)

    transport.Transport._exchange = exchanged  # type: ignore[method-assign]
    transport.Transport._open = opened  # type: ignore[method-assign]


def main() -> None:
    ledger, args = sys.argv[1], sys.argv[2:]
    install(ledger)
    sys.argv = ["kai", *args]
    runpy.run_module("kai_scheduler.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
