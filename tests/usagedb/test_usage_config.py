"""usageDBConfig parsing (§5.5): KAI's defaults, and errors that name the field, at configuration load."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kai_scheduler.framework.config import ConfigError
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.usagedb import usage_config
from kai_scheduler.usagedb.params import DAY, WEEK, ClientType, WindowType

URL = {"clientType": "prometheus", "connectionString": "http://prometheus:9090"}


def test_empty_means_off() -> None:
    assert usage_config.parse(None) is None and usage_config.parse({}) is None


def test_defaults_are_kais() -> None:
    settings = usage_config.parse(URL)
    assert settings is not None
    params = settings.params
    assert settings.client_type is ClientType.PROMETHEUS and settings.connection_string == URL["connectionString"]
    assert (params.window_size, params.window_type, params.half_life) == (WEEK, WindowType.SLIDING, None)
    assert (params.fetch_interval, params.staleness_period, params.wait_timeout) == (60.0, 300.0, 60.0)
    extra = params.extra
    assert (extra.usage_query_timeout, extra.query_resolution) == (10.0, 60.0)
    assert extra.gpu_allocation_metric == "kai_queue_allocated_gpus"
    assert extra.cpu_allocation_metric == "kai_queue_allocated_cpu_cores"
    assert extra.memory_allocation_metric == "kai_queue_allocated_memory_bytes"
    assert extra.gpu_capacity_metric == 'sum(kube_node_status_capacity{resource="nvidia_com_gpu"})'


def test_values_as_written() -> None:
    settings = usage_config.parse(
        {
            "clientType": "prometheus",
            "connectionStringEnvVar": "PROM_URL",
            "usageParams": {
                "windowSize": "2d",
                "halfLifePeriod": "12h",
                "windowType": "tumbling",
                "tumblingWindowStartTime": "2026-01-01T00:00:00Z",
                "fetchInterval": "30s",
                "extraParams": {"queryResolution": "5m", "gpuAllocationMetric": "my_gpus"},
            },
        }
    )
    assert settings is not None
    params = settings.params
    assert settings.connection_string_env_var == "PROM_URL"
    assert (params.window_size, params.half_life, params.fetch_interval) == (2 * DAY, 43200.0, 30.0)
    assert params.tumbling_window_start == 1_767_225_600.0
    assert (params.extra.query_resolution, params.extra.gpu_allocation_metric) == (300.0, "my_gpus")


def test_a_non_positive_half_life_means_no_decay() -> None:
    settings = usage_config.parse({**URL, "usageParams": {"halfLifePeriod": "0s"}})
    assert settings is not None and settings.params.half_life is None


ERRORS: list[Any] = [
    pytest.param({"clientType": "influx"}, "usageDBConfig.clientType: unknown value 'influx'", id="client type"),
    pytest.param(
        {"clientType": "prometheus"},
        "usageDBConfig.connectionString: the prometheus client needs",
        id="prometheus without a connection",
    ),
    pytest.param({**URL, "connectionStringEnvVar": "X"}, "not both", id="both connection forms"),
    pytest.param(
        {**URL, "usageParams": {"windowSize": "a week"}}, "usageParams.windowSize: invalid duration", id="bad duration"
    ),
    pytest.param(
        {**URL, "usageParams": {"windowSize": "0s"}}, "usageParams.windowSize: must be above 0", id="zero window"
    ),
    pytest.param(
        {**URL, "usageParams": {"windowType": "hopping"}}, "usageParams.windowType: unknown value", id="window type"
    ),
    pytest.param(
        {**URL, "usageParams": {"windowType": "tumbling"}},
        "tumblingWindowStartTime: a tumbling window",
        id="tumbling without start",
    ),
    pytest.param(
        {**URL, "usageParams": {"windowType": "cron"}}, "cronString: a cron window needs", id="cron without string"
    ),
    pytest.param(
        {**URL, "usageParams": {"windowType": "cron", "cronString": "every day"}},
        "usageParams.cronString: cron 'every day'",
        id="bad cron",
    ),
    pytest.param(
        {**URL, "usageParams": {"stalenessPeriod": "-1m"}},
        "stalenessPeriod: must not be negative",
        id="negative staleness",
    ),
    pytest.param(
        {**URL, "usageParams": {"extraParams": {"queryStep": "1m"}}},
        "usageParams.extraParams.queryStep: unknown field",
        id="unknown extra parameter",
    ),
    pytest.param(
        {**URL, "usageParams": {"extraParams": {"gpuAllocationMetric": ""}}},
        "gpuAllocationMetric: must not be empty",
        id="empty metric",
    ),
    pytest.param({**URL, "typo": 1}, "usageDBConfig.typo: unknown field", id="unknown field"),
]


@pytest.mark.parametrize("raw, words", ERRORS)
def test_errors_name_the_field(raw: dict[str, Any], words: str) -> None:
    with pytest.raises(usage_config.UsageConfigError, match=re.escape(words)):
        usage_config.parse(raw)


def test_a_bad_usage_config_fails_the_configuration_at_load() -> None:
    with pytest.raises(ConfigError, match=r"config usageDBConfig\.clientType"):
        load_config({"usageDBConfig": {"clientType": "influx"}})
    assert load_config({"usageDBConfig": URL}).usage_db_config == URL
