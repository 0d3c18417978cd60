"""Log lines for people and for log pipelines: the message, then the record's structured fields.

Code logs `log.warning("write failed", extra={"what": ..., "reason": ...})`; `text` renders that as
`2026-11-27T14:03:07.214Z WARNING kai_scheduler.scheduler.commit: write failed what="..." reason=Conflict` (the
time in UTC with milliseconds first, as klog and zap start their lines, so that a process run outside a container
runtime's log collection still says when), `json` as one JSON object a line (time, level, logger, msg, and the
fields), which Kubernetes log collectors parse as is.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class TextFormatter(logging.Formatter):
    @staticmethod
    def converter(seconds: float | None) -> time.struct_time:  # `%(asctime)s` in UTC
        return time.gmtime(seconds)

    def __init__(self) -> None:
        super().__init__("%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = fields(record)
        if not extra:
            return line
        return line + " " + " ".join(f"{k}={_text(v)}" for k, v in extra.items())


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **fields(record),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def configure(level: int, style: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if style == "json" else TextFormatter())
    logging.basicConfig(level=level, handlers=[handler])  # a no-op where handlers exist (tests)
    if level > logging.DEBUG:
        # urllib3 warns once per connection retry; the store reports the request that failed in one line itself.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


def _text(value: Any) -> str:
    """A string bare when it can be, else quoted; anything else as JSON (`[1,2]`, `{"a":1}`, `true`)."""
    if not isinstance(value, str):
        return orjson.dumps(value, default=str).decode()
    return value if value and all(c not in value for c in ' "=') else orjson.dumps(value).decode()
