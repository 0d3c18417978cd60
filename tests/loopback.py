"""Helpers for tests that talk to a server on loopback: a free port, a kubeconfig for a URL, waiting."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: mock
  cluster: {{server: "{url}"}}
users:
- name: tester
  user: {{token: secret-token}}
contexts:
- name: mock-ctx
  context: {{cluster: mock, user: tester}}
current-context: mock-ctx
"""


def free_port() -> int:
    """A port nothing listens on now (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_kubeconfig(path: Path, url: str) -> str:
    """A kubeconfig whose current context is the server at `url` with a bearer token; its path."""
    path.write_text(KUBECONFIG.format(url=url))
    return str(path)


def eventually(condition: Callable[[], bool], timeout: float = 30.0, every: float = 0.05) -> bool:
    """Whether `condition` becomes true within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()
