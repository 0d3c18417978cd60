"""Feed: the latest dashboard document, serialised once, with a version that grows on every change.

One writer (a source's worker thread) publishes; any number of readers (page loads, server-sent event
streams) read the bytes as they are. Readers never cause a build: a page view costs a copy of the last bytes.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson


class Feed:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = 0
        self._body = b""
        self.error = ""  # the last build's failure, shown on the page; empty while builds succeed

    def publish(self, document: dict[str, Any]) -> int:
        """Serialise `document` (with its version added) as the current one; return the version."""
        with self._lock:
            version = self._version + 1
            body = orjson.dumps({**document, "version": version}, option=orjson.OPT_SERIALIZE_NUMPY)
            self._version, self._body = version, body
            self.error = ""
            return version

    def fail(self, message: str) -> None:
        with self._lock:
            self.error = message

    @property
    def version(self) -> int:
        return self._version

    def current(self) -> tuple[int, bytes]:
        """(version, JSON bytes); (0, b"") before the first publish."""
        with self._lock:
            return self._version, self._body
