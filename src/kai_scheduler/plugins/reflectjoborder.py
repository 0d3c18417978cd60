"""reflectjoborder: the order allocate will take pending jobs in, served at `/get-job-order` (§4; KAI
`plugins/reflectjoborder/`, docs/plugins/reflectjoborder.md).

It adds nothing to a session: what it does is outside one. A scheduler whose configuration names it computes,
as each session opens, the order of the jobs allocate considers (pending and ready jobs through the queue tree,
at most `queueDepthPerAction.allocate` per queue) and serves the last one on its plugin server
(`--plugin-server-port`) as KAI's JSON (`scheduler/job_order.py`). Without it that path answers 404, as in KAI,
where the plugin registers the handler. Off unless configured, as in KAI.
"""

from __future__ import annotations

from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


class ReflectJobOrder(PluginBase):
    name = "reflectjoborder"

    def on_session_open(self, ssn: Session) -> None:
        """No extension point: the order is read by the scheduler component."""
