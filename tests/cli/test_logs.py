"""Log lines carry the structured fields code passes with `extra=`, as key=value text or as JSON."""

from __future__ import annotations

import calendar
import logging
import re
import time
from typing import Any

import orjson

from kai_scheduler.cli.logs import JsonFormatter, TextFormatter


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "kai_scheduler.scheduler.commit", logging.WARNING, __file__, 1, "write failed", None, None
    )
    record.created, record.msecs = AT, 214.0  # 2026-11-27T14:03:07.214Z
    record.__dict__.update(extra)
    return record


AT = 1795788187.214
STAMP = "2026-11-27T14:03:07.214Z"


def test_text_lines_end_with_the_fields_quoted_where_needed() -> None:
    line = TextFormatter().format(_record(what="create BindRequest ns/p", reason="Conflict", attempts=2))
    assert line == (
        f"{STAMP} WARNING kai_scheduler.scheduler.commit: write failed "
        'what="create BindRequest ns/p" reason=Conflict attempts=2'
    )


def test_a_line_without_fields_is_just_the_message() -> None:
    assert TextFormatter().format(_record()) == f"{STAMP} WARNING kai_scheduler.scheduler.commit: write failed"


def test_a_text_line_starts_with_the_utc_time_in_milliseconds_whatever_the_local_zone(monkeypatch: Any) -> None:
    """As klog and zap: ISO 8601, UTC, milliseconds, first on the line; a process run on a laptop (no container
    runtime adding a time) still says when. The local zone must not leak in."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        record = logging.LogRecord("kai_scheduler.binder", logging.INFO, __file__, 1, "bound", None, None)
        line = TextFormatter().format(record)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    stamp, _, rest = line.partition(" ")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), line
    assert rest == "INFO kai_scheduler.binder: bound"
    assert abs(calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) - record.created) < 1.5


def test_json_lines_hold_level_logger_message_and_fields() -> None:
    out = orjson.loads(JsonFormatter().format(_record(reason="Conflict", pods=["a", "b"])))
    assert {k: out[k] for k in ("level", "logger", "msg", "reason", "pods")} == {
        "level": "WARNING",
        "logger": "kai_scheduler.scheduler.commit",
        "msg": "write failed",
        "reason": "Conflict",
        "pods": ["a", "b"],
    }
    assert "time" in out


def test_no_log_call_passes_a_field_the_log_record_reserves() -> None:
    """`extra={"created": …}` makes `logging` raise KeyError when the line is emitted (at -v): the operator's
    reconcile step failed that way. Every `extra=` mapping written in the source uses free names."""
    import ast
    import logging
    from pathlib import Path

    import kai_scheduler

    reserved = set(vars(logging.LogRecord("n", logging.INFO, "p", 1, "m", None, None))) | {"message", "asctime"}
    offenders = []
    for path in Path(kai_scheduler.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                    keys = [k.value for k in keyword.value.keys if isinstance(k, ast.Constant)]
                    offenders += [f"{path.name}:{node.lineno} {key}" for key in keys if key in reserved]
    assert offenders == []
