"""Pick the usage source a configuration asks for (§5.5 `clientType`), for a cluster or offline.

In a cluster: `prometheus` queries the server named by `connectionString` (or the environment variable
`connectionStringEnvVar` names); `fake` answers zero usage; `fake-with-history` records the scheduler's own
cycles. Offline (`kai schedule`, the simulator) there is no Prometheus: every client type but `fake` becomes
the embedded recorder, so a cluster's configuration replays unchanged.
"""

from __future__ import annotations

import os

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.usagedb.interface import NoUsage, UsageSource
from kai_scheduler.usagedb.params import ClientType, UsageDBSettings
from kai_scheduler.usagedb.prometheus import PrometheusUsage
from kai_scheduler.usagedb.recorder import Recorder


class SourceError(UserError):
    """The configured source cannot be built (e.g. its connection string variable is unset)."""


def build(settings: UsageDBSettings, clock: Clock, *, offline: bool) -> UsageSource:
    if settings.client_type is ClientType.FAKE:
        return NoUsage()
    if offline or settings.client_type is ClientType.FAKE_WITH_HISTORY:
        return Recorder(settings.params)
    return PrometheusUsage(connection_string(settings), settings.params, clock)


def connection_string(settings: UsageDBSettings) -> str:
    if settings.connection_string:
        return settings.connection_string
    value = os.environ.get(settings.connection_string_env_var, "")
    if not value:
        raise SourceError(
            f"usageDBConfig.connectionStringEnvVar: environment variable "
            f"{settings.connection_string_env_var!r} is not set"
        )
    return value
