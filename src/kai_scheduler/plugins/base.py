"""The part every plugin shares, so that a plugin module states only what differs (§4).

`PluginBase` gives a plugin the construction of one that takes no `arguments` (any given is a ConfigError
naming the plugin, as KAI's loader reports it) and nothing to do at session close. A plugin writes its own
`on_session_open` always, `from_args` when it reads arguments, and `on_session_close` when it holds something
to release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from kai_scheduler.framework.config import no_arguments
from kai_scheduler.framework.session import Session


class PluginBase:
    name: str  # the ConfigMap name; each plugin class sets it

    @classmethod
    def from_args(cls, arguments: Mapping[str, str]) -> Self:
        no_arguments(cls.name, arguments)
        return cls()

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to release."""
