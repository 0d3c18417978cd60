"""The plugin `snapshot` (KAI's name): it turns on the scheduler's `/get-snapshot`, which serves its view as
`snapshot.zip` (§4, §9.2; KAI `plugins/snapshot/`).

It adds nothing to a session: what it does is outside one. A scheduler whose configuration names it serves
`GET /get-snapshot` on its plugin server (`--plugin-server-port`), the zip taken from its object cache at request
time (`scheduler/capture.py`); without it that path answers 404, as in KAI, where the plugin registers the handler.
"""

from __future__ import annotations

from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


class SnapshotEndpoint(PluginBase):
    name = "snapshot"

    def on_session_open(self, ssn: Session) -> None:
        """No extension point: the endpoint is the scheduler component's."""
