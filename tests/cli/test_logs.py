"""Log lines carry the structured fields code passes with `extra=`, as key=value text or as JSON."""

from __future__ import annotations

import logging

import orjson

from kai_scheduler.cli.logs import JsonFormatter, TextFormatter


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "kai_scheduler.scheduler.commit", logging.WARNING, __file__, 1, "write failed", None, None
    )
    record.__dict__.update(extra)
    return record


def test_text_lines_end_with_the_fields_quoted_where_needed() -> None:
    line = TextFormatter().format(_record(what="create BindRequest ns/p", reason="Conflict", attempts=2))
    assert line == (
        'WARNING kai_scheduler.scheduler.commit: write failed what="create BindRequest ns/p" reason=Conflict attempts=2'
    )


def test_a_line_without_fields_is_just_the_message() -> None:
    assert TextFormatter().format(_record()) == "WARNING kai_scheduler.scheduler.commit: write failed"


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
