"""The admission service's default names and port, importable without the server (for `kai --help`)."""

from __future__ import annotations

from typing import Final

from kai_scheduler.api import constants

DEFAULT_PORT: Final = 9443
DEFAULT_NAMESPACE: Final = "kai-scheduler"
DEFAULT_SERVICE_NAME: Final = "kai-admission"
DEFAULT_SECRET_NAME: Final = "kai-admission-cert"
DEFAULT_WEBHOOK_CONFIGURATION_NAME: Final = "kai-admission"
DEFAULT_RUNTIME_CLASS_NAME: Final = constants.DEFAULT_RUNTIME_CLASS_NAME
