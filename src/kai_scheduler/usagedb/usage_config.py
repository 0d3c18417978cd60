"""Parse `usageDBConfig` (§5.5) into `usagedb.params` values, with KAI's defaults; errors name the field.

    usageDBConfig:
      clientType: prometheus            # or fake, fake-with-history
      connectionString: http://prometheus:9090    # or connectionStringEnvVar (exactly one, for prometheus)
      usageParams:
        windowSize: 1w                  # Go duration; d and w are accepted too
        windowType: sliding             # tumbling (needs tumblingWindowStartTime) | cron (needs cronString)
        halfLifePeriod: 24h             # unset or ≤ 0: no decay
        fetchInterval: 1m
        stalenessPeriod: 5m
        waitTimeout: 1m
        extraParams: {usageQueryTimeout: 10s, queryResolution: 1m, gpuAllocationMetric: ..., ...}

An empty or absent mapping turns time-based fair share off (`parse` returns None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kai_scheduler.api import duration
from kai_scheduler.api.errors import UserError
from kai_scheduler.api.fields import parse_time
from kai_scheduler.usagedb import cron
from kai_scheduler.usagedb.params import ClientType, ExtraParams, UsageDBSettings, UsageParams, WindowType

WHERE = "config usageDBConfig"
TOP_KEYS = ("clientType", "connectionString", "connectionStringEnvVar", "usageParams")
PARAM_KEYS = (
    "windowSize",
    "windowType",
    "tumblingWindowStartTime",
    "cronString",
    "halfLifePeriod",
    "fetchInterval",
    "stalenessPeriod",
    "waitTimeout",
    "extraParams",
)
# extraParams key → ExtraParams field; the durations among them are parsed, the metric names kept as written.
EXTRA_KEYS = {
    "usageQueryTimeout": "usage_query_timeout",
    "queryResolution": "query_resolution",
    "gpuAllocationMetric": "gpu_allocation_metric",
    "cpuAllocationMetric": "cpu_allocation_metric",
    "memoryAllocationMetric": "memory_allocation_metric",
    "gpuCapacityMetric": "gpu_capacity_metric",
    "cpuCapacityMetric": "cpu_capacity_metric",
    "memoryCapacityMetric": "memory_capacity_metric",
}


class UsageConfigError(UserError):
    """A usageDBConfig that cannot be used; the message starts with the field's path."""


def parse(raw: Mapping[str, Any] | None) -> UsageDBSettings | None:
    """Typed settings with defaults filled in; None when the mapping is empty (time-based fair share off)."""
    if not raw:
        return None
    _check_keys(raw, TOP_KEYS, WHERE)
    client = _enum(ClientType, raw.get("clientType", ClientType.PROMETHEUS.value), f"{WHERE}.clientType")
    url, env = _text(raw, "connectionString", WHERE), _text(raw, "connectionStringEnvVar", WHERE)
    if url and env:
        raise UsageConfigError(f"{WHERE}: set connectionString or connectionStringEnvVar, not both")
    if client is ClientType.PROMETHEUS and not (url or env):
        raise UsageConfigError(
            f"{WHERE}.connectionString: the prometheus client needs connectionString or connectionStringEnvVar"
        )
    params = _params(_mapping(raw.get("usageParams"), f"{WHERE}.usageParams"))
    return UsageDBSettings(client, url, env, params)


def needs_connection(raw: Mapping[str, Any]) -> bool:
    """Whether `raw` is a prometheus client without a connection string (KAI's operator fills one in)."""
    if not raw or raw.get("clientType", ClientType.PROMETHEUS.value) != ClientType.PROMETHEUS.value:
        return False
    return not (raw.get("connectionString") or raw.get("connectionStringEnvVar"))


def with_connection(raw: Mapping[str, Any], url: str) -> Mapping[str, Any]:
    """`raw` with `url` as its connection string when it needs one, else as it is."""
    return {**raw, "connectionString": url} if needs_connection(raw) else raw


def _params(raw: Mapping[str, Any]) -> UsageParams:
    where = f"{WHERE}.usageParams"
    _check_keys(raw, PARAM_KEYS, where)
    base = UsageParams()
    window_type = _enum(WindowType, raw.get("windowType", base.window_type.value), f"{where}.windowType")
    start = None
    if window_type is WindowType.TUMBLING:
        text = _text(raw, "tumblingWindowStartTime", where)
        if not text:
            raise UsageConfigError(f"{where}.tumblingWindowStartTime: a tumbling window needs a start time")
        try:
            start = parse_time(text)
        except ValueError as err:
            raise UsageConfigError(f"{where}.tumblingWindowStartTime: {err}") from None
    cron_text = _text(raw, "cronString", where)
    if window_type is WindowType.CRON:
        if not cron_text:
            raise UsageConfigError(f"{where}.cronString: a cron window needs a cron string")
        try:
            cron.parse(cron_text)
        except cron.CronError as err:
            raise UsageConfigError(f"{where}.cronString: {err}") from None
    half_life = _seconds(raw, "halfLifePeriod", where, None)
    return UsageParams(
        window_size=_positive(raw, "windowSize", where, base.window_size),
        window_type=window_type,
        tumbling_window_start=start,
        cron=cron_text,
        half_life=half_life if half_life is not None and half_life > 0 else None,
        fetch_interval=_positive(raw, "fetchInterval", where, base.fetch_interval),
        staleness_period=_non_negative(raw, "stalenessPeriod", where, base.staleness_period),
        wait_timeout=_non_negative(raw, "waitTimeout", where, base.wait_timeout),
        extra=_extra(_mapping(raw.get("extraParams"), f"{where}.extraParams")),
    )


def _extra(raw: Mapping[str, Any]) -> ExtraParams:
    where = f"{WHERE}.usageParams.extraParams"
    _check_keys(raw, tuple(EXTRA_KEYS), where)
    base = ExtraParams()
    values: dict[str, Any] = {}
    for key, name in EXTRA_KEYS.items():
        if key not in raw:
            continue
        if isinstance(getattr(base, name), float):
            values[name] = _positive(raw, key, where, getattr(base, name))
        else:
            text = _text(raw, key, where)
            if not text:
                raise UsageConfigError(f"{where}.{key}: must not be empty")
            values[name] = text
    return ExtraParams(**values)


def _check_keys(raw: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in raw:
        if key not in known:
            raise UsageConfigError(f"{where}.{key}: unknown field; known: {', '.join(known)}")


def _mapping(raw: Any, where: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise UsageConfigError(f"{where}: expected a mapping, got {raw!r}")
    return raw


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UsageConfigError(f"{where}.{key}: expected a string, got {value!r}")
    return value.strip()


def _enum(kind: Any, value: Any, where: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        known = ", ".join(m.value for m in kind)
        raise UsageConfigError(f"{where}: unknown value {value!r}; want one of {known}") from None


def _seconds(raw: Mapping[str, Any], key: str, where: str, default: float | None) -> float | None:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        return duration.parse_duration(str(value), allow_days=True)
    except duration.DurationError as err:
        raise UsageConfigError(f"{where}.{key}: {err}") from None


def _positive(raw: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = _seconds(raw, key, where, default)
    assert value is not None
    if value <= 0:
        raise UsageConfigError(f"{where}.{key}: must be above 0, got {raw.get(key)!r}")
    return value


def _non_negative(raw: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = _seconds(raw, key, where, default)
    assert value is not None
    if value < 0:
        raise UsageConfigError(f"{where}.{key}: must not be negative, got {raw.get(key)!r}")
    return value
